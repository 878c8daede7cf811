// utf8_length_dfa and format_regex.
#include "engine/grammar/string_dfa.h"

#include <array>
#include <vector>

namespace cellserve::engine::grammar {
namespace {

// Byte classes of UTF-8 (RFC 3629 table): which bytes may lead and which may continue.
enum Utf8Class : uint8_t {
  kAscii,    // 00-7F
  kCont80,   // 80-8F
  kCont90,   // 90-9F
  kContA0,   // A0-BF
  kInvalid,  // C0-C1, F5-FF: never in UTF-8
  kLead2,    // C2-DF
  kLeadE0,   // E0: then A0-BF (no overlong forms)
  kLead3,    // E1-EC, EE-EF
  kLeadED,   // ED: then 80-9F (no surrogates)
  kLeadF0,   // F0: then 90-BF (no overlong forms)
  kLead4,    // F1-F3
  kLeadF4,   // F4: then 80-8F (nothing above U+10FFFF)
  kUtf8Classes
};

std::array<uint8_t, 256> utf8_classes() {
  std::array<uint8_t, 256> c{};
  for (int b = 0; b < 256; ++b) {
    Utf8Class k = kInvalid;
    if (b < 0x80)
      k = kAscii;
    else if (b < 0x90)
      k = kCont80;
    else if (b < 0xA0)
      k = kCont90;
    else if (b < 0xC0)
      k = kContA0;
    else if (b < 0xC2)
      k = kInvalid;
    else if (b < 0xE0)
      k = kLead2;
    else if (b == 0xE0)
      k = kLeadE0;
    else if (b == 0xED)
      k = kLeadED;
    else if (b < 0xF0)
      k = kLead3;
    else if (b == 0xF0)
      k = kLeadF0;
    else if (b < 0xF4)
      k = kLead4;
    else if (b == 0xF4)
      k = kLeadF4;
    c[b] = k;
  }
  return c;
}

}  // namespace

Result<ByteDfa> utf8_length_dfa(uint32_t min_code_points, uint32_t max_code_points, const GrammarLimits& limits) {
  if (min_code_points > max_code_points) return empty_dfa();
  const bool unbounded = max_code_points == UINT32_MAX;
  // Levels 0..top count the code points read; with no maximum the top level (min) loops. The
  // minimal automaton keeps every level apart, so too many levels are refused before building.
  const uint32_t top = unbounded ? min_code_points : max_code_points;
  if (top > limits.max_dfa_states) return dfa_states_error("a string length", limits);

  ByteDfa raw = raw_dfa(utf8_classes(), kUtf8Classes);
  std::vector<uint32_t> boundary(top + 1);
  for (uint32_t c = 0; c <= top; ++c) boundary[c] = add_state(raw, c >= min_code_points);
  auto on = [&](uint32_t from, std::initializer_list<Utf8Class> classes, uint32_t to) {
    for (Utf8Class k : classes) set_transition(raw, from, k, to);
  };
  const auto any_cont = {kCont80, kCont90, kContA0};
  for (uint32_t c = 0; c <= top; ++c) {
    if (c == top && !unbounded) break;  // no room for another code point
    const uint32_t done = boundary[c == top ? top : c + 1];
    // States inside a character, named by the continuation bytes still expected.
    const uint32_t one = add_state(raw, false), two = add_state(raw, false), two_e0 = add_state(raw, false),
                   two_ed = add_state(raw, false), three = add_state(raw, false), three_f0 = add_state(raw, false),
                   three_f4 = add_state(raw, false);
    const uint32_t b = boundary[c];
    on(b, {kAscii}, done);
    on(b, {kLead2}, one);
    on(b, {kLeadE0}, two_e0);
    on(b, {kLead3}, two);
    on(b, {kLeadED}, two_ed);
    on(b, {kLeadF0}, three_f0);
    on(b, {kLead4}, three);
    on(b, {kLeadF4}, three_f4);
    on(one, any_cont, done);
    on(two, any_cont, one);
    on(two_e0, {kContA0}, one);
    on(two_ed, {kCont80, kCont90}, one);
    on(three, any_cont, two);
    on(three_f0, {kCont90, kContA0}, two);
    on(three_f4, {kCont80}, two);
  }
  raw.start = boundary[0];
  ByteDfa dfa = minimize(raw);
  if (dfa.states() - 1 > limits.max_dfa_states) return dfa_states_error("a string length", limits);
  return dfa;
}

std::optional<std::string> format_regex(std::string_view format) {
  // RFC 3339 section 5.6; "T" and "Z" may be lower case (its note, and ABNF is case-blind).
  static const std::string kDate = "[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])";
  static const std::string kTime =
      "([01][0-9]|2[0-3]):[0-5][0-9]:([0-5][0-9]|60)(\\.[0-9]+)?([Zz]|[+-]([01][0-9]|2[0-3]):[0-5][0-9])";
  // RFC 3986 IPv4address: decimal octets without leading zeros.
  static const std::string kOctet = "(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])";
  static const std::string kIpv4 = kOctet + "\\." + kOctet + "\\." + kOctet + "\\." + kOctet;
  if (format == "date") return kDate;
  if (format == "time") return kTime;
  if (format == "date-time") return kDate + "[Tt]" + kTime;
  if (format == "uuid") {
    return "[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}";
  }
  if (format == "email") {
    // RFC 5322 dot-atom local part (atext runs joined by single dots), then a domain of at least
    // two labels of letters, digits and inner hyphens.
    const std::string atext = "[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+";
    const std::string label = "[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?";
    return atext + "(\\." + atext + ")*@" + label + "(\\." + label + ")+";
  }
  if (format == "ipv4") return kIpv4;
  if (format == "ipv6") {
    // RFC 3986 IPv6address (the RFC 4291 text forms): eight groups, "::" standing for one or
    // more zero groups, the last two groups possibly an IPv4 address.
    const std::string h = "[0-9a-fA-F]{1,4}";
    const std::string ls32 = "(" + h + ":" + h + "|" + kIpv4 + ")";
    auto upto = [&](int n) { return "((" + h + ":){0," + std::to_string(n) + "}" + h + ")?"; };
    return "(" + h + ":){6}" + ls32 +                    //
           "|::(" + h + ":){5}" + ls32 +                 //
           "|(" + h + ")?::(" + h + ":){4}" + ls32 +     //
           "|" + upto(1) + "::(" + h + ":){3}" + ls32 +  //
           "|" + upto(2) + "::(" + h + ":){2}" + ls32 +  //
           "|" + upto(3) + "::" + h + ":" + ls32 +       //
           "|" + upto(4) + "::" + ls32 +                 //
           "|" + upto(5) + "::" + h +                    //
           "|" + upto(6) + "::";
  }
  return std::nullopt;
}

}  // namespace cellserve::engine::grammar
