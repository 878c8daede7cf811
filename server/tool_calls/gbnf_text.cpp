#include "server/tool_calls/gbnf_text.h"

#include <cassert>
#include <map>
#include <set>
#include <vector>

namespace cellserve::server::tool_calls::detail {
namespace {

constexpr char kHex[] = "0123456789ABCDEF";

void append_hex_escape(unsigned char c, std::string& out) {
  out += "\\x";
  out += kHex[c >> 4];
  out += kHex[c & 0xF];
}

// One character inside [...]: alphanumerics as they are, anything else as \xHH.
std::string class_char(char c) {
  const bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
  if (plain) return std::string(1, c);
  std::string out;
  append_hex_escape(static_cast<unsigned char>(c), out);
  return out;
}

// The Knuth-Morris-Pratt automaton of `p`: the state after reading `c` with `k` bytes matched.
std::size_t next_state(std::string_view p, const std::vector<std::size_t>& failure, std::size_t k, char c) {
  while (k > 0 && p[k] != c) k = failure[k - 1];
  return p[k] == c ? k + 1 : 0;
}

}  // namespace

std::string gbnf_literal(std::string_view text) {
  std::string out = "\"";
  for (char ch : text) {
    const auto c = static_cast<unsigned char>(ch);
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (c < 0x20 || c == 0x7F) {
          append_hex_escape(c, out);
        } else {
          out += ch;
        }
    }
  }
  return out + "\"";
}

std::string text_without_rules(std::string_view rule, std::string_view forbidden) {
  assert(!forbidden.empty());
  std::vector<std::size_t> failure(forbidden.size(), 0);
  for (std::size_t i = 1, k = 0; i < forbidden.size(); ++i) {
    while (k > 0 && forbidden[i] != forbidden[k]) k = failure[k - 1];
    if (forbidden[i] == forbidden[k]) ++k;
    failure[i] = k;
  }
  const std::set<char> alphabet(forbidden.begin(), forbidden.end());
  auto state_rule = [&](std::size_t k) { return std::string(rule) + "-" + std::to_string(k); };

  std::string out = std::string(rule) + " ::= " + state_rule(0) + "\n";
  for (std::size_t k = 0; k < forbidden.size(); ++k) {
    // Bytes outside the alphabet go back to state 0, as do the alphabet's bytes not listed here.
    std::map<std::size_t, std::string> to_state;  // state -> the class of bytes leading there
    std::string not_to_zero;
    for (char c : alphabet) {
      const std::size_t t = next_state(forbidden, failure, k, c);
      if (t == 0) continue;
      not_to_zero += class_char(c);
      if (t < forbidden.size()) to_state[t] += class_char(c);  // t == size: the forbidden text, no edge
    }
    out += state_rule(k) + " ::= ( [^" + not_to_zero + "] " + state_rule(0);
    for (const auto& [t, chars] : to_state) out += " | [" + chars + "] " + state_rule(t);
    out += " )?\n";
  }
  return out;
}

}  // namespace cellserve::server::tool_calls::detail
