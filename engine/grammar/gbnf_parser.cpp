// The GBNF parser (gbnf_parser.h): text -> GbnfSyntax, recursive descent with bounded nesting.
#include "engine/grammar/gbnf_parser.h"

#include <cstdio>
#include <map>

namespace cellserve::engine::grammar {

std::string describe(TextPosition p) {
  return "line " + std::to_string(p.line) + ", column " + std::to_string(p.column);
}

namespace {

bool is_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
}
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_continuation(uint8_t b) { return (b & 0xC0) == 0x80; }
bool is_surrogate(uint32_t cp) { return cp >= 0xD800 && cp <= 0xDFFF; }

std::string code_point_name(uint32_t cp) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "U+%04X", cp);
  return buf;
}

// The length of the well-formed UTF-8 sequence (RFC 3629) at the start of `s`, or 0.
size_t utf8_length(std::string_view s) {
  const auto at = [&](size_t i) { return static_cast<uint8_t>(s[i]); };
  const uint8_t b = at(0);
  if (b < 0x80) return 1;
  size_t n = 0;
  uint8_t lo = 0x80, hi = 0xBF;
  if (b >= 0xC2 && b <= 0xDF) {
    n = 2;
  } else if (b >= 0xE0 && b <= 0xEF) {
    n = 3;
    if (b == 0xE0) lo = 0xA0;  // no overlong forms
    if (b == 0xED) hi = 0x9F;  // no surrogates
  } else if (b >= 0xF0 && b <= 0xF4) {
    n = 4;
    if (b == 0xF0) lo = 0x90;
    if (b == 0xF4) hi = 0x8F;  // nothing above U+10FFFF
  } else {
    return 0;
  }
  if (s.size() < n || at(1) < lo || at(1) > hi) return 0;
  for (size_t i = 2; i < n; ++i)
    if (!is_continuation(at(i))) return 0;
  return n;
}

uint32_t decode_utf8(std::string_view s, size_t n) {
  const auto at = [&](size_t i) { return static_cast<uint8_t>(s[i]); };
  if (n == 1) return at(0);
  uint32_t cp = at(0) & (0x7F >> n);
  for (size_t i = 1; i < n; ++i) cp = (cp << 6) | (at(i) & 0x3F);
  return cp;
}

class Parser {
 public:
  explicit Parser(std::string_view text) : text_(text) {}

  Result<GbnfSyntax> run() {
    CS_RETURN_IF_ERROR(check_utf8());
    if (text_.starts_with("%llguidance"))
      return Status::unimplemented("llguidance (Lark) grammars (%llguidance) are not supported");
    GbnfSyntax out;
    std::map<std::string, TextPosition, std::less<>> defined;
    skip_space();
    while (!eof()) {
      if (!is_name_char(peek())) return unexpected("a rule name");
      GbnfRuleDefinition rule;
      CS_RETURN_IF_ERROR(parse_rule(rule));
      if (const auto it = defined.find(rule.name); it != defined.end())
        return error(rule.at, "rule '" + rule.name + "' is defined twice (first at " + describe(it->second) + ")");
      defined.emplace(rule.name, rule.at);
      out.rules.push_back(std::move(rule));
      skip_space();
      if (!eof() && !at_rule_start()) {
        if (peek() == ')') return error(at_, "unmatched ')'");
        return unexpected("the start of the next rule (name ::=)");
      }
    }
    return out;
  }

 private:
  bool eof() const { return pos_ >= text_.size(); }
  char peek(size_t k = 0) const { return pos_ + k < text_.size() ? text_[pos_ + k] : '\0'; }
  void advance() {
    const char c = text_[pos_++];
    if (c == '\n') {
      ++at_.line;
      at_.column = 1;
    } else if (!is_continuation(static_cast<uint8_t>(c))) {
      ++at_.column;  // a continuation byte belongs to the code point before it
    }
  }
  void advance(size_t n) {
    for (size_t i = 0; i < n; ++i) advance();
  }

  Status error(TextPosition at, const std::string& message) const {
    return Status::invalid_argument(describe(at) + ": " + message);
  }
  // "expected X, found Y" at the current position.
  Status unexpected(const std::string& expected) const {
    if (eof()) return error(at_, "expected " + expected + ", found the end of the grammar");
    const size_t n = utf8_length(text_.substr(pos_));
    const uint32_t cp = decode_utf8(text_.substr(pos_), n);
    const std::string found =
        cp >= 0x21 && cp < 0x7F ? "'" + std::string(1, static_cast<char>(cp)) + "'" : code_point_name(cp);
    return error(at_, "expected " + expected + ", found " + found);
  }

  Status check_utf8() const {
    TextPosition at;
    for (size_t i = 0; i < text_.size();) {
      const size_t n = utf8_length(text_.substr(i));
      if (n == 0) return error(at, "the grammar is not valid UTF-8");
      if (text_[i] == '\n') {
        ++at.line;
        at.column = 1;
      } else {
        ++at.column;
      }
      i += n;
    }
    return Status::ok_status();
  }

  // Spaces, tabs, line breaks and # comments.
  void skip_space() {
    while (!eof()) {
      const char c = peek();
      if (c == ' ' || c == '\t' || c == '\r' || c == '\n') {
        advance();
      } else if (c == '#') {
        while (!eof() && peek() != '\n') advance();
      } else {
        break;
      }
    }
  }

  // At `name ::=` (spaces and tabs allowed before ::=, as llama.cpp): the next rule starts here.
  bool at_rule_start() const {
    size_t i = pos_;
    while (i < text_.size() && is_name_char(text_[i])) ++i;
    if (i == pos_) return false;
    while (i < text_.size() && (text_[i] == ' ' || text_[i] == '\t')) ++i;
    return text_.substr(i, 3) == "::=";
  }

  std::string parse_name() {
    const size_t start = pos_;
    while (!eof() && is_name_char(peek())) advance();
    return std::string(text_.substr(start, pos_ - start));
  }

  Status parse_rule(GbnfRuleDefinition& rule) {
    rule.at = at_;
    rule.name = parse_name();
    while (peek() == ' ' || peek() == '\t') advance();
    if (text_.substr(pos_, 3) != "::=") return unexpected("'::=' after the rule name '" + rule.name + "'");
    advance(3);
    return parse_alternatives(rule.body, 0);
  }

  Status parse_alternatives(GbnfAlternatives& alts, uint32_t depth) {
    alts.sequences.emplace_back();
    CS_RETURN_IF_ERROR(parse_sequence(alts.sequences.back(), depth));
    while (peek() == '|') {
      advance();
      alts.sequences.emplace_back();
      CS_RETURN_IF_ERROR(parse_sequence(alts.sequences.back(), depth));
    }
    return Status::ok_status();
  }

  // Items up to '|', ')', the next rule or the end.
  Status parse_sequence(GbnfSequence& seq, uint32_t depth) {
    for (;;) {
      skip_space();
      if (eof() || at_rule_start()) return Status::ok_status();
      const char c = peek();
      const TextPosition at = at_;
      if (c == '|' || c == ')') return Status::ok_status();
      if (c == '*' || c == '+' || c == '?' || c == '{') {
        if (seq.items.empty()) return error(at, std::string("'") + c + "' must follow an item to repeat");
        GbnfRepeat rep;
        rep.at = at;
        if (c == '{') {
          CS_RETURN_IF_ERROR(parse_braces(rep));
        } else {
          advance();
          rep.min = c == '+' ? 1 : 0;
          rep.max = c == '?' ? 1 : kGbnfUnbounded;
        }
        seq.items.back().repeats.push_back(rep);
        continue;
      }
      GbnfItem item;
      item.at = at;
      if (c == '"') {
        CS_RETURN_IF_ERROR(parse_literal(item));
      } else if (c == '[') {
        CS_RETURN_IF_ERROR(parse_class(item));
      } else if (c == '.') {
        advance();
        item.kind = GbnfItem::Kind::Class;
        item.negated = true;  // [^]: any code point
      } else if (is_name_char(c)) {
        item.kind = GbnfItem::Kind::RuleRef;
        item.name = parse_name();
      } else if (c == '(') {
        if (depth + 1 > kMaxGbnfNesting)
          return error(at, "groups nest deeper than the limit of " + std::to_string(kMaxGbnfNesting));
        advance();
        item.kind = GbnfItem::Kind::Group;
        item.group.emplace_back();
        CS_RETURN_IF_ERROR(parse_alternatives(item.group.back(), depth + 1));
        if (peek() != ')') {
          if (eof() || at_rule_start()) return error(at, "the group opened here has no ')'");
          return unexpected("')'");
        }
        advance();
      } else if (c == '<' || c == '!') {
        return Status::unimplemented(describe(at) +
                                     ": llama.cpp's token terminals (<[id]>, <token>, !<...>) are not supported");
      } else {
        return unexpected("an item ('\"', '[', '.', '(' or a rule name), '|' or ')'");
      }
      seq.items.push_back(std::move(item));
    }
  }

  // One character of a literal or class: an escape or a UTF-8 code point (the text is valid UTF-8).
  Status parse_char(uint32_t& cp) {
    const TextPosition at = at_;
    if (peek() != '\\') {
      const size_t n = utf8_length(text_.substr(pos_));
      cp = decode_utf8(text_.substr(pos_), n);
      advance(n);
      return Status::ok_status();
    }
    advance();
    if (eof()) return error(at, "the escape '\\' has no character after it");
    const char e = peek();
    if (static_cast<uint8_t>(e) >= 0x80) {
      const size_t n = utf8_length(text_.substr(pos_));
      return error(at, "unknown escape '\\' before " + code_point_name(decode_utf8(text_.substr(pos_), n)));
    }
    advance();
    size_t digits = 0;
    switch (e) {
      case 'n':
        cp = '\n';
        return Status::ok_status();
      case 'r':
        cp = '\r';
        return Status::ok_status();
      case 't':
        cp = '\t';
        return Status::ok_status();
      case '\\':
      case '"':
      case '[':
      case ']':
        cp = static_cast<uint8_t>(e);
        return Status::ok_status();
      case 'x':
        digits = 2;
        break;
      case 'u':
        digits = 4;
        break;
      case 'U':
        digits = 8;
        break;
      default: {
        const std::string shown = e >= 0x21 && e < 0x7F ? std::string(1, e) : code_point_name(static_cast<uint8_t>(e));
        return error(at, "unknown escape '\\" + shown + "' (known: \\n \\r \\t \\\\ \\\" \\[ \\] \\x \\u \\U)");
      }
    }
    uint64_t value = 0;
    for (size_t i = 0; i < digits; ++i) {
      const char h = peek();
      int v = -1;
      if (h >= '0' && h <= '9') v = h - '0';
      if (h >= 'a' && h <= 'f') v = h - 'a' + 10;
      if (h >= 'A' && h <= 'F') v = h - 'A' + 10;
      if (v < 0)
        return error(at, "the escape '\\" + std::string(1, e) + "' needs " + std::to_string(digits) + " hex digits");
      value = value * 16 + static_cast<uint64_t>(v);
      advance();
    }
    if (value > 0x10FFFF || is_surrogate(static_cast<uint32_t>(value)))
      return error(at, "invalid code point " + code_point_name(static_cast<uint32_t>(value)) +
                           " (a surrogate or above U+10FFFF)");
    cp = static_cast<uint32_t>(value);
    return Status::ok_status();
  }

  Status parse_literal(GbnfItem& item) {
    const TextPosition open = at_;
    item.kind = GbnfItem::Kind::Literal;
    advance();  // "
    for (;;) {
      if (eof()) return error(open, "the string literal started here has no closing '\"'");
      if (peek() == '"') break;
      uint32_t cp = 0;
      CS_RETURN_IF_ERROR(parse_char(cp));
      item.code_points.push_back(cp);
    }
    advance();
    return Status::ok_status();
  }

  Status parse_class(GbnfItem& item) {
    const TextPosition open = at_;
    item.kind = GbnfItem::Kind::Class;
    advance();  // [
    if (peek() == '^') {
      item.negated = true;
      advance();
    }
    auto unterminated = [&] { return error(open, "the character class started here has no closing ']'"); };
    for (;;) {
      if (eof()) return unterminated();
      if (peek() == ']') break;
      const TextPosition at = at_;
      CodePointRange r;
      CS_RETURN_IF_ERROR(parse_char(r.first));
      r.last = r.first;
      if (peek() == '-' && peek(1) != ']') {  // a range; a '-' before ']' is itself
        advance();
        if (eof()) return unterminated();
        CS_RETURN_IF_ERROR(parse_char(r.last));
        if (r.last < r.first)
          return error(at, "the range " + code_point_name(r.first) + "-" + code_point_name(r.last) + " is reversed");
      }
      item.ranges.push_back(r);
    }
    advance();
    return Status::ok_status();
  }

  // A count of {m,n}: digits, at most kMaxGbnfRepetition. `present`: there were digits.
  Status parse_count(uint32_t& value, bool& present) {
    const TextPosition at = at_;
    const size_t start = pos_;
    uint64_t v = 0;
    while (is_digit(peek())) {
      if (v <= kMaxGbnfRepetition) v = v * 10 + static_cast<uint64_t>(peek() - '0');
      advance();
    }
    present = pos_ > start;
    if (v > kMaxGbnfRepetition) {
      const std::string written(text_.substr(start, std::min<size_t>(pos_ - start, 24)));
      return error(at,
                   "the repetition count " + written + " is above the limit of " + std::to_string(kMaxGbnfRepetition));
    }
    value = static_cast<uint32_t>(v);
    return Status::ok_status();
  }

  // {m} {m,} {m,n} {,n}
  Status parse_braces(GbnfRepeat& rep) {
    advance();  // {
    skip_space();
    bool has_min = false, has_max = false;
    CS_RETURN_IF_ERROR(parse_count(rep.min, has_min));
    skip_space();
    if (peek() == '}') {
      if (!has_min) return unexpected("a count in '{}'");
      rep.max = rep.min;
      advance();
      return Status::ok_status();
    }
    if (peek() != ',') return unexpected(has_min ? "',' or '}'" : "a count");
    advance();
    skip_space();
    uint32_t max = 0;
    CS_RETURN_IF_ERROR(parse_count(max, has_max));
    skip_space();
    if (!has_min && !has_max) return unexpected("a count in '{,}'");
    if (peek() != '}') return unexpected("'}'");
    advance();
    rep.max = has_max ? max : kGbnfUnbounded;
    if (rep.min > rep.max)
      return error(rep.at, "the repetition {" + std::to_string(rep.min) + "," + std::to_string(rep.max) +
                               "} has its minimum above its maximum");
    return Status::ok_status();
  }

  std::string_view text_;
  size_t pos_ = 0;
  TextPosition at_;
};

}  // namespace

Result<GbnfSyntax> parse_gbnf(std::string_view text, const GrammarLimits& limits) {
  if (text.size() > limits.max_grammar_bytes) {
    return Status::invalid_argument("the grammar is " + std::to_string(text.size()) +
                                    " bytes; the limit (max_grammar_bytes) is " +
                                    std::to_string(limits.max_grammar_bytes));
  }
  return Parser(text).run();
}

}  // namespace cellserve::engine::grammar
