// The regex parser (regex_syntax.h): pattern -> syntax tree, recursive descent with bounded
// nesting; and the size of the NFA a tree makes.
#include "engine/grammar/regex_syntax.h"

#include <algorithm>
#include <array>
#include <optional>
#include <utility>

namespace cellserve::engine::grammar::regex_internal {

std::string offset_text(size_t at) { return " at offset " + std::to_string(at); }

namespace {

// Saturating arithmetic for NFA sizes.
size_t add_size(size_t a, size_t b) { return a > SIZE_MAX - b ? SIZE_MAX : a + b; }
size_t mul_size(size_t a, size_t b) { return (b != 0 && a > SIZE_MAX / b) ? SIZE_MAX : a * b; }

}  // namespace

size_t nfa_size(const std::vector<Node>& nodes, uint32_t id) {
  const Node& n = nodes[id];
  size_t total = 0;
  switch (n.kind) {
    case Node::Kind::Chars:
      for (const Utf8Seq& s : n.seqs) total += s.len;
      return total + 1;
    case Node::Kind::Concat:
    case Node::Kind::Alt:
      for (uint32_t c : n.children) total = add_size(total, nfa_size(nodes, c));
      return add_size(total, 1);
    case Node::Kind::Repeat: {
      const size_t body = std::max<size_t>(nfa_size(nodes, n.children[0]), 1);
      const size_t optional = n.max == kUnbounded ? 1 : n.max - n.min;
      return add_size(mul_size(body, add_size(n.min, optional)), optional);
    }
  }
  return total;
}

namespace {

constexpr uint32_t kMaxCount = UINT32_MAX - 1;  // larger {n,m} counts saturate here

class Parser {
 public:
  explicit Parser(std::string_view pattern) : p_(pattern) {}

  std::vector<Node>& nodes() { return nodes_; }

  // The whole pattern; in Search mode each top-level alternative is padded with any-string
  // on the sides where it is not anchored.
  Result<uint32_t> parse(RegexMode mode) {
    // Alternatives grouped by how they are anchored (bit 0: start, bit 1: end), so that in Search
    // mode each group is padded once: .*(a|b|c).* keeps the subsets small, .*a.*|.*b.*|.*c.* not.
    std::array<std::vector<uint32_t>, 4> groups;
    while (true) {
      int anchors = 0;
      if (!at_end() && peek() == '^') {
        anchors |= 1;
        ++i_;
      }
      bool anchored_end = false;
      CS_ASSIGN_OR_RETURN(uint32_t seq, sequence(0, &anchored_end));
      if (anchored_end) anchors |= 2;
      groups[mode == RegexMode::Search ? anchors : 0].push_back(seq);
      if (at_end()) break;
      if (peek() == ')') return Status::invalid_argument("regex: unbalanced parenthesis: ')'" + offset_text(i_));
      ++i_;  // '|'
    }
    std::vector<uint32_t> alts;
    for (int anchors = 0; anchors < 4; ++anchors) {
      if (groups[anchors].empty()) continue;
      uint32_t body = alternatives(std::move(groups[anchors]));
      if (mode == RegexMode::Search && anchors != 3) {
        Node padded;
        if (!(anchors & 1)) padded.children.push_back(any_string());
        padded.children.push_back(body);
        if (!(anchors & 2)) padded.children.push_back(any_string());
        body = add(std::move(padded));
      }
      alts.push_back(body);
    }
    return alternatives(std::move(alts));
  }

 private:
  bool at_end() const { return i_ >= p_.size(); }
  char peek() const { return p_[i_]; }
  bool peek_is(size_t at, char c) const { return at < p_.size() && p_[at] == c; }
  // The whole character at byte `at` ("" at the end), for messages: the pattern is valid UTF-8,
  // and half a character would make the error's JSON invalid.
  std::string char_at(size_t at) const {
    if (at >= p_.size()) return "";
    const auto lead = static_cast<uint8_t>(p_[at]);
    const size_t len = lead < 0x80 ? 1 : lead < 0xE0 ? 2 : lead < 0xF0 ? 3 : 4;
    return std::string(p_.substr(at, len));
  }

  uint32_t add(Node n) {
    nodes_.push_back(std::move(n));
    return static_cast<uint32_t>(nodes_.size() - 1);
  }
  // One of `alts` (at least one).
  uint32_t alternatives(std::vector<uint32_t> alts) {
    if (alts.size() == 1) return alts[0];
    Node alt;
    alt.kind = Node::Kind::Alt;
    alt.children = std::move(alts);
    return add(std::move(alt));
  }
  uint32_t chars(const CodeSet& set) {
    Node n;
    n.kind = Node::Kind::Chars;
    n.seqs = utf8_sequences(set);
    return add(std::move(n));
  }
  uint32_t any_string() {
    Node n;
    n.kind = Node::Kind::Repeat;
    n.min = 0;
    n.max = kUnbounded;
    n.children = {chars(any_code_point())};
    return add(std::move(n));
  }

  // The code point at i_ (the pattern is valid UTF-8); advances over it.
  uint32_t next_code_point() {
    const auto b = static_cast<uint8_t>(p_[i_]);
    const int len = b < 0x80 ? 1 : b < 0xE0 ? 2 : b < 0xF0 ? 3 : 4;
    uint32_t cp = len == 1 ? b : len == 2 ? (b & 0x1F) : len == 3 ? (b & 0x0F) : (b & 0x07);
    for (int k = 1; k < len; ++k) cp = (cp << 6) | (static_cast<uint8_t>(p_[i_ + k]) & 0x3F);
    i_ += len;
    return cp;
  }

  // Alternatives inside a group, up to (not over) its ')'.
  Result<uint32_t> alternation(int depth) {
    Node alt;
    alt.kind = Node::Kind::Alt;
    while (true) {
      CS_ASSIGN_OR_RETURN(uint32_t seq, sequence(depth, nullptr));
      alt.children.push_back(seq);
      if (at_end() || peek() != '|') break;
      ++i_;
    }
    if (alt.children.size() == 1) return alt.children[0];
    return add(std::move(alt));
  }

  // Quantified atoms up to '|', ')' or the end. `anchored_end` is null inside groups; at the top
  // level it is set by a '$' that ends the alternative.
  Result<uint32_t> sequence(int depth, bool* anchored_end) {
    Node seq;
    while (!at_end() && peek() != '|' && peek() != ')') {
      const char c = peek();
      if (c == '^') {
        return Status::unimplemented(
            "regex: the anchor '^' is only supported at the start of the pattern or of a top-level alternative "
            "(offset " +
            std::to_string(i_) + ")");
      }
      if (c == '$') {
        if (anchored_end != nullptr && (i_ + 1 == p_.size() || p_[i_ + 1] == '|')) {
          *anchored_end = true;
          ++i_;
          break;
        }
        return Status::unimplemented(
            "regex: the anchor '$' is only supported at the end of the pattern or of a top-level alternative "
            "(offset " +
            std::to_string(i_) + ")");
      }
      if (starts_quantifier(i_)) return Status::invalid_argument("regex: nothing to repeat" + offset_text(i_));
      CS_ASSIGN_OR_RETURN(uint32_t atom_id, atom(depth));
      CS_ASSIGN_OR_RETURN(atom_id, quantified(atom_id));
      seq.children.push_back(atom_id);
    }
    if (seq.children.size() == 1) return seq.children[0];
    return add(std::move(seq));
  }

  // A well-formed {n}, {n,} or {n,m} at `at`: its counts and the offset after it.
  struct Braces {
    uint32_t min = 0, max = 0;
    size_t end = 0;
  };
  std::optional<Braces> braces_at(size_t at) const {
    if (!peek_is(at, '{')) return std::nullopt;
    size_t j = at + 1;
    auto number = [&](uint32_t& out) {
      const size_t from = j;
      uint64_t v = 0;
      while (j < p_.size() && p_[j] >= '0' && p_[j] <= '9') {
        v = std::min<uint64_t>(v * 10 + static_cast<uint64_t>(p_[j] - '0'), kMaxCount);
        ++j;
      }
      out = static_cast<uint32_t>(v);
      return j > from;
    };
    Braces b;
    if (!number(b.min)) return std::nullopt;
    b.max = b.min;
    if (peek_is(j, ',')) {
      ++j;
      if (!number(b.max)) b.max = kUnbounded;
    }
    if (!peek_is(j, '}')) return std::nullopt;
    b.end = j + 1;
    return b;
  }
  bool starts_quantifier(size_t at) const {
    if (at >= p_.size()) return false;
    const char c = p_[at];
    return c == '*' || c == '+' || c == '?' || braces_at(at).has_value();
  }

  // The atom followed by at most one quantifier (and its lazy '?', which changes nothing here).
  Result<uint32_t> quantified(uint32_t atom_id) {
    if (at_end()) return atom_id;
    Node rep;
    rep.kind = Node::Kind::Repeat;
    const size_t at = i_;
    switch (peek()) {
      case '*':
        rep.min = 0, rep.max = kUnbounded, ++i_;
        break;
      case '+':
        rep.min = 1, rep.max = kUnbounded, ++i_;
        break;
      case '?':
        rep.min = 0, rep.max = 1, ++i_;
        break;
      case '{': {
        const std::optional<Braces> b = braces_at(i_);
        if (!b) return lone_brace(i_);
        if (b->min > b->max) {
          return Status::invalid_argument("regex: bad quantifier " + std::string(p_.substr(at, b->end - at)) +
                                          " (min > max)" + offset_text(at));
        }
        rep.min = b->min, rep.max = b->max, i_ = b->end;
        break;
      }
      default:
        return atom_id;
    }
    if (!at_end() && peek() == '?') ++i_;  // lazy: the same language
    if (starts_quantifier(i_)) return Status::invalid_argument("regex: nothing to repeat" + offset_text(i_));
    rep.children = {atom_id};
    return add(std::move(rep));
  }

  Status lone_brace(size_t at) const {
    return Status::invalid_argument("regex: '{'" + offset_text(at) +
                                    " does not start a quantifier {n}, {n,} or {n,m} (write \\{ for a brace)");
  }

  Result<uint32_t> atom(int depth) {
    switch (peek()) {
      case '(':
        return group(depth);
      case '[': {
        CS_ASSIGN_OR_RETURN(CodeSet set, char_class());
        return chars(set);
      }
      case '.':
        ++i_;
        return chars(dot_chars());
      case '\\':
        return escape_atom();
      case '{':
        return lone_brace(i_);
      default: {
        const uint32_t cp = next_code_point();
        return chars({{cp, cp}});
      }
    }
  }

  Result<uint32_t> group(int depth) {
    const size_t open = i_++;
    if (depth + 1 > kMaxNesting) {
      return Status::invalid_argument("regex: groups nested more than " + std::to_string(kMaxNesting) + " deep" +
                                      offset_text(open));
    }
    if (!at_end() && peek() == '?') {
      ++i_;
      const char kind = at_end() ? '\0' : peek();
      if (kind == ':') {
        ++i_;
      } else if (kind == '=' || kind == '!') {
        return Status::unimplemented("regex: lookahead ((?= and (?!) is not supported" + offset_text(open));
      } else if (kind == '<' && (peek_is(i_ + 1, '=') || peek_is(i_ + 1, '!'))) {
        return Status::unimplemented("regex: lookbehind ((?<= and (?<!) is not supported" + offset_text(open));
      } else if (kind == '<') {
        CS_RETURN_IF_ERROR(group_name(open));
      } else {
        return Status::unimplemented("regex: flags and group modifiers ((?" + char_at(i_) + ") are not supported" +
                                     offset_text(open));
      }
    }
    CS_ASSIGN_OR_RETURN(uint32_t inner, alternation(depth + 1));
    if (at_end()) {
      return Status::invalid_argument("regex: unbalanced parenthesis: '('" + offset_text(open) + " is never closed");
    }
    ++i_;  // ')'
    return inner;
  }

  // (?<name>: an identifier (ASCII letters, digits, _ and $, or any non-ASCII character).
  Status group_name(size_t open) {
    ++i_;  // '<'
    const size_t from = i_;
    while (!at_end() && peek() != '>') {
      const auto c = static_cast<unsigned char>(peek());
      const bool ok = c >= 0x80 || c == '_' || c == '$' || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
                      (i_ > from && c >= '0' && c <= '9');
      if (!ok) return Status::invalid_argument("regex: bad group name" + offset_text(i_));
      ++i_;
    }
    if (at_end() || i_ == from) return Status::invalid_argument("regex: bad group name" + offset_text(open));
    ++i_;  // '>'
    return Status::ok_status();
  }

  // A backslash escape outside a class.
  Result<uint32_t> escape_atom() {
    const size_t at = i_;
    if (i_ + 1 >= p_.size()) return Status::invalid_argument("regex: the pattern ends with a backslash");
    const char c = p_[i_ + 1];
    if (c == 'b' || c == 'B') {
      return Status::unimplemented("regex: word boundaries (\\b and \\B) are not supported" + offset_text(at));
    }
    if (c >= '1' && c <= '9') {
      return Status::unimplemented("regex: backreferences (\\" + std::string(1, c) + ") are not supported" +
                                   offset_text(at));
    }
    if (c == 'k' && peek_is(i_ + 2, '<')) {
      return Status::unimplemented("regex: backreferences (\\k<name>) are not supported" + offset_text(at));
    }
    CS_ASSIGN_OR_RETURN(CodeSet set, escape());
    return chars(set);
  }

  // The escape at i_ (a backslash), inside a class or not: a set (one code point for a character
  // escape). Advances over it.
  Result<CodeSet> escape() {
    const size_t at = i_;
    if (i_ + 1 >= p_.size()) return Status::invalid_argument("regex: the pattern ends with a backslash");
    const char c = p_[i_ + 1];
    i_ += 2;
    auto one = [](uint32_t cp) { return CodeSet{{cp, cp}}; };
    switch (c) {
      case 'd':
        return digits();
      case 'D':
        return complement(digits());
      case 'w':
        return word_chars();
      case 'W':
        return complement(word_chars());
      case 's':
        return space_chars();
      case 'S':
        return complement(space_chars());
      case 't':
        return one('\t');
      case 'n':
        return one('\n');
      case 'r':
        return one('\r');
      case 'f':
        return one('\f');
      case 'v':
        return one('\v');
      case 'b':  // only reached in a class: backspace
        return one('\b');
      case '0':
        if (!at_end() && peek() >= '0' && peek() <= '9') {
          return Status::unimplemented("regex: octal escapes (\\0" + std::string(1, peek()) + ") are not supported" +
                                       offset_text(at));
        }
        return one(0);
      case 'x': {
        uint32_t v = 0;
        if (!hex_digits(2, v))
          return Status::invalid_argument("regex: bad \\x escape (two hex digits)" + offset_text(at));
        return one(v);
      }
      case 'u': {
        CS_ASSIGN_OR_RETURN(uint32_t cp, unicode_escape(at));
        return one(cp);
      }
      case 'c':
        if (!at_end() && ((peek() >= 'A' && peek() <= 'Z') || (peek() >= 'a' && peek() <= 'z'))) {
          return one(static_cast<uint32_t>(p_[i_++]) % 32);
        }
        break;
      case 'p':
      case 'P':
        return Status::unimplemented("regex: Unicode property escapes (\\p{...} and \\P{...}) are not supported" +
                                     offset_text(at));
      default:
        // Identity escapes of ASCII punctuation: the syntax characters ^ $ \ . * + ? ( ) [ ] { } |
        // and / -, and the other symbols clients escape out of habit (\" \# \: ...).
        if (c > 0x20 && c < 0x7F && !(c >= '0' && c <= '9') && !(c >= 'A' && c <= 'Z') && !(c >= 'a' && c <= 'z') &&
            c != '_') {
          return one(static_cast<uint32_t>(c));
        }
        break;
    }
    i_ = at;
    return Status::invalid_argument("regex: bad escape \\" + char_at(at + 1) + offset_text(at));
  }

  // `count` hex digits at i_ into v; advances over them only when all are there.
  bool hex_digits(int count, uint32_t& v) {
    uint32_t value = 0;
    for (int k = 0; k < count; ++k) {
      const size_t j = i_ + static_cast<size_t>(k);
      if (j >= p_.size()) return false;
      const int d = hex_value(p_[j]);
      if (d < 0) return false;
      value = value * 16 + static_cast<uint32_t>(d);
    }
    i_ += static_cast<size_t>(count);
    v = value;
    return true;
  }
  static int hex_value(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  }

  // After "\u": {H...} or HHHH; a high surrogate followed by \u and a low one is their pair's code
  // point (as ECMA-262's u flag reads it); a lone surrogate is refused.
  Result<uint32_t> unicode_escape(size_t at) {
    uint32_t cp = 0;
    const bool braced = !at_end() && peek() == '{';
    if (braced) {
      ++i_;
      const size_t from = i_;
      while (!at_end() && hex_value(peek()) >= 0 && cp <= kMaxCodePoint) cp = cp * 16 + hex_value(p_[i_++]);
      if (i_ == from || at_end() || peek() != '}' || cp > kMaxCodePoint) {
        return Status::invalid_argument("regex: bad \\u{...} escape (hex digits up to 10FFFF)" + offset_text(at));
      }
      ++i_;
    } else if (!hex_digits(4, cp)) {
      return Status::invalid_argument("regex: bad \\u escape (four hex digits)" + offset_text(at));
    }
    // Only the four-digit forms pair (ECMA-262): \u{D83D}\uDE00 is a lone surrogate.
    if (!braced && cp >= 0xD800 && cp <= 0xDBFF && peek_is(i_, '\\') && peek_is(i_ + 1, 'u')) {
      const size_t save = i_;
      i_ += 2;
      uint32_t low = 0;
      if (hex_digits(4, low) && low >= 0xDC00 && low <= 0xDFFF) return 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
      i_ = save;
    }
    if (cp >= kSurrogateLo && cp <= kSurrogateHi) {
      return Status::invalid_argument("regex: \\u escape of a lone surrogate, which UTF-8 cannot hold" +
                                      offset_text(at));
    }
    return cp;
  }

  // [...] at i_: the set it matches (negated classes never include surrogates either).
  Result<CodeSet> char_class() {
    const size_t open = i_++;
    bool negate = false;
    if (!at_end() && peek() == '^') {
      negate = true;
      ++i_;
    }
    CodeSet set;
    while (true) {
      if (at_end()) return Status::invalid_argument("regex: unterminated character class '['" + offset_text(open));
      if (peek() == ']') {
        ++i_;
        break;
      }
      const size_t at = i_;
      CS_ASSIGN_OR_RETURN(CodeSet lo, class_atom());
      if (peek_is(i_, '-') && i_ + 1 < p_.size() && p_[i_ + 1] != ']') {
        ++i_;
        CS_ASSIGN_OR_RETURN(CodeSet hi, class_atom());
        if (lo.size() != 1 || hi.size() != 1 || lo[0].lo != lo[0].hi || hi[0].lo != hi[0].hi) {
          return Status::invalid_argument("regex: a class escape cannot bound a range" + offset_text(at));
        }
        if (lo[0].lo > hi[0].lo) {
          return Status::invalid_argument("regex: bad range " + std::string(p_.substr(at, i_ - at)) +
                                          " (out of order)" + offset_text(at));
        }
        set.push_back({lo[0].lo, hi[0].lo});
      } else {
        set.insert(set.end(), lo.begin(), lo.end());
      }
    }
    normalize(set);
    return negate ? complement(set) : set;
  }

  // One member of a class: a character, or an escape (a class escape is a set).
  Result<CodeSet> class_atom() {
    if (peek() != '\\') {
      const uint32_t cp = next_code_point();
      return CodeSet{{cp, cp}};
    }
    const size_t at = i_;
    if (i_ + 1 < p_.size()) {
      const char c = p_[i_ + 1];
      if (c == 'B' || (c >= '1' && c <= '9') || c == 'k') {
        return Status::invalid_argument("regex: bad escape " + std::string(p_.substr(at, 2)) + " in a character class" +
                                        offset_text(at));
      }
    }
    return escape();
  }

  std::string_view p_;
  size_t i_ = 0;
  std::vector<Node> nodes_;
};

}  // namespace

Result<RegexSyntax> parse_regex(std::string_view pattern, RegexMode mode) {
  Parser parser(pattern);
  CS_ASSIGN_OR_RETURN(uint32_t root, parser.parse(mode));
  return RegexSyntax{std::move(parser.nodes()), root};
}

}  // namespace cellserve::engine::grammar::regex_internal
