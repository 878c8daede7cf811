#include "tests/server/tool_calls/gbnf_checker.h"

#include <cctype>
#include <functional>

namespace cellserve::server::tool_calls::testing {
namespace {

namespace json = boost::json;

bool is_name_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '-'; }

// Decodes one UTF-8 character at `pos` (advances it); 0xFFFFFFFF when ill-formed.
std::uint32_t decode_utf8(std::string_view s, std::size_t& pos) {
  const auto b = static_cast<unsigned char>(s[pos++]);
  int extra = b < 0x80 ? 0 : (b >> 5) == 6 ? 1 : (b >> 4) == 14 ? 2 : (b >> 3) == 30 ? 3 : -1;
  if (extra < 0) return 0xFFFFFFFF;
  std::uint32_t cp = extra == 0 ? b : b & (0x3F >> extra);
  for (int i = 0; i < extra; ++i) {
    if (pos >= s.size() || (static_cast<unsigned char>(s[pos]) & 0xC0) != 0x80) return 0xFFFFFFFF;
    cp = (cp << 6) | (static_cast<unsigned char>(s[pos++]) & 0x3F);
  }
  return cp;
}

class Parser {
 public:
  Parser(std::string_view text, GbnfGrammar& grammar, std::string& error) : s_(text), g_(grammar), error_(error) {}

  void run() {
    for (;;) {
      skip_space(true);
      if (pos_ >= s_.size() || !error_.empty()) return;
      const std::string name = parse_name();
      if (name.empty()) return fail("expected a rule name");
      skip_space(false);
      if (s_.substr(pos_, 3) != "::=") return fail("expected ::= after " + name);
      pos_ += 3;
      GbnfNode body = parse_alternatives(false);
      if (!error_.empty()) return;
      if (pos_ < s_.size() && s_[pos_] != '\n') return fail("junk after rule " + name);
      if (!g_.rules.emplace(name, std::move(body)).second) return fail("rule defined twice: " + name);
    }
  }

 private:
  void fail(const std::string& message) {
    if (error_.empty()) error_ = message + " at byte " + std::to_string(pos_);
  }

  void skip_space(bool newlines) {
    while (pos_ < s_.size()) {
      const char c = s_[pos_];
      if (c == ' ' || c == '\t' || (newlines && (c == '\n' || c == '\r'))) {
        ++pos_;
      } else if (c == '#') {
        while (pos_ < s_.size() && s_[pos_] != '\n') ++pos_;
      } else {
        return;
      }
    }
  }

  std::string parse_name() {
    const std::size_t start = pos_;
    while (pos_ < s_.size() && is_name_char(s_[pos_])) ++pos_;
    return std::string(s_.substr(start, pos_ - start));
  }

  std::uint32_t parse_hex(int digits) {
    std::uint32_t v = 0;
    for (int i = 0; i < digits; ++i) {
      if (pos_ >= s_.size() || !std::isxdigit(static_cast<unsigned char>(s_[pos_]))) {
        fail("bad hex escape");
        return 0;
      }
      v = v * 16 + static_cast<std::uint32_t>(std::stoi(std::string(1, s_[pos_++]), nullptr, 16));
    }
    return v;
  }

  // One character of a literal or class (escapes as llama.cpp's parse_char knows them).
  std::uint32_t parse_char() {
    if (s_[pos_] != '\\') {
      const std::uint32_t cp = decode_utf8(s_, pos_);
      if (cp == 0xFFFFFFFF) fail("ill-formed UTF-8");
      return cp;
    }
    if (++pos_ >= s_.size()) {
      fail("dangling backslash");
      return 0;
    }
    switch (s_[pos_++]) {
      case 'x':
        return parse_hex(2);
      case 'u':
        return parse_hex(4);
      case 'U':
        return parse_hex(8);
      case 't':
        return '\t';
      case 'r':
        return '\r';
      case 'n':
        return '\n';
      case '\\':
        return '\\';
      case '"':
        return '"';
      case '[':
        return '[';
      case ']':
        return ']';
      default:
        fail("unknown escape");
        return 0;
    }
  }

  GbnfNode parse_alternatives(bool nested) {
    GbnfNode alts{.kind = GbnfNode::Kind::Alternatives};
    for (;;) {
      alts.children.push_back(parse_sequence(nested));
      if (!error_.empty()) return alts;
      if (alts.children.back().children.empty()) fail("empty alternative");
      if (pos_ < s_.size() && s_[pos_] == '|') {
        ++pos_;
        continue;
      }
      return alts;
    }
  }

  GbnfNode parse_sequence(bool nested) {
    GbnfNode seq{.kind = GbnfNode::Kind::Sequence};
    for (;;) {
      skip_space(nested);
      if (pos_ >= s_.size() || !error_.empty()) return seq;
      const char c = s_[pos_];
      GbnfNode item;
      if (c == '"') {
        ++pos_;
        item.kind = GbnfNode::Kind::Literal;
        while (pos_ < s_.size() && s_[pos_] != '"' && error_.empty()) {
          if (s_[pos_] == '\n') fail("newline in a literal");
          item.literal.push_back(parse_char());
        }
        if (pos_ >= s_.size()) fail("unterminated literal");
        ++pos_;
      } else if (c == '[') {
        ++pos_;
        item.kind = GbnfNode::Kind::Class;
        if (pos_ < s_.size() && s_[pos_] == '^') {
          item.negated = true;
          ++pos_;
        }
        while (pos_ < s_.size() && s_[pos_] != ']' && error_.empty()) {
          const std::uint32_t low = parse_char();
          std::uint32_t high = low;
          if (pos_ + 1 < s_.size() && s_[pos_] == '-' && s_[pos_ + 1] != ']') {
            ++pos_;
            high = parse_char();
          }
          item.ranges.emplace_back(low, high);
        }
        if (pos_ >= s_.size()) fail("unterminated class");
        if (item.ranges.empty()) fail("empty class");
        ++pos_;
      } else if (c == '(') {
        ++pos_;
        item = parse_alternatives(true);
        skip_space(true);
        if (pos_ >= s_.size() || s_[pos_] != ')') fail("unbalanced (");
        ++pos_;
      } else if (is_name_char(c)) {
        item.kind = GbnfNode::Kind::Ref;
        item.name = parse_name();
        g_.referenced.insert(item.name);
      } else if (c == '|' || c == ')' || c == '\n') {
        return seq;
      } else {
        fail(std::string("unexpected character '") + c + "'");
        return seq;
      }
      if (pos_ < s_.size() && (s_[pos_] == '*' || s_[pos_] == '+' || s_[pos_] == '?')) {
        GbnfNode repeat{.kind = GbnfNode::Kind::Repeat, .repeat = s_[pos_++]};
        repeat.children.push_back(std::move(item));
        item = std::move(repeat);
      }
      seq.children.push_back(std::move(item));
    }
  }

  std::string_view s_;
  GbnfGrammar& g_;
  std::string& error_;
  std::size_t pos_ = 0;
};

using Ends = std::set<std::size_t>;

// Backtracking over code points: each function returns every position where `node` can end.
class Matcher {
 public:
  Matcher(const GbnfGrammar& g, const std::map<std::string, json::value>& externals, std::string_view text)
      : g_(g), externals_(externals), text_(text) {
    std::size_t pos = 0;
    while (pos < text.size()) {
      offsets_.push_back(pos);
      cps_.push_back(decode_utf8(text, pos));
    }
    offsets_.push_back(text.size());
  }

  bool matches() { return rule("root", 0).count(cps_.size()) > 0; }

 private:
  Ends rule(const std::string& name, std::size_t pos) {
    const auto key = std::make_pair(name, pos);
    if (auto it = memo_.find(key); it != memo_.end()) return it->second;
    memo_[key] = {};  // a left-recursive rule matches nothing more
    Ends ends;
    if (auto it = g_.rules.find(name); it != g_.rules.end()) {
      ends = node(it->second, pos);
    } else if (auto ext = externals_.find(name); ext != externals_.end()) {
      ends = external(ext->second, pos);
    }
    memo_[key] = ends;
    return ends;
  }

  Ends external(const json::value& schema, std::size_t pos) {
    const std::string_view rest = text_.substr(offsets_[pos]);
    if (rest.empty() || std::isspace(static_cast<unsigned char>(rest[0]))) return {};
    json::stream_parser parser;
    boost::system::error_code ec;
    std::size_t n = parser.write_some(rest.data(), rest.size(), ec);
    if (ec || !parser.done()) return {};
    while (n > 0 && std::isspace(static_cast<unsigned char>(rest[n - 1]))) --n;
    json::value value = json::parse(rest.substr(0, n), ec);
    if (ec || !schema_accepts(schema, value, schema)) return {};
    const std::size_t end_byte = offsets_[pos] + n;
    for (std::size_t i = pos; i < offsets_.size(); ++i) {
      if (offsets_[i] == end_byte) return {i};
    }
    return {};
  }

  Ends node(const GbnfNode& n, std::size_t pos) {
    switch (n.kind) {
      case GbnfNode::Kind::Literal: {
        for (std::size_t i = 0; i < n.literal.size(); ++i) {
          if (pos + i >= cps_.size() || cps_[pos + i] != n.literal[i]) return {};
        }
        return {pos + n.literal.size()};
      }
      case GbnfNode::Kind::Class: {
        if (pos >= cps_.size()) return {};
        bool in = false;
        for (const auto& [low, high] : n.ranges) in = in || (cps_[pos] >= low && cps_[pos] <= high);
        return in != n.negated ? Ends{pos + 1} : Ends{};
      }
      case GbnfNode::Kind::Ref:
        return rule(n.name, pos);
      case GbnfNode::Kind::Sequence: {
        Ends current{pos};
        for (const GbnfNode& child : n.children) {
          Ends next;
          for (std::size_t p : current) {
            const Ends e = node(child, p);
            next.insert(e.begin(), e.end());
          }
          current = std::move(next);
          if (current.empty()) break;
        }
        return current;
      }
      case GbnfNode::Kind::Alternatives: {
        Ends all;
        for (const GbnfNode& child : n.children) {
          const Ends e = node(child, pos);
          all.insert(e.begin(), e.end());
        }
        return all;
      }
      case GbnfNode::Kind::Repeat: {
        Ends all;
        if (n.repeat != '+') all.insert(pos);
        Ends frontier{pos};
        while (!frontier.empty()) {
          Ends next;
          for (std::size_t p : frontier) {
            for (std::size_t e : node(n.children[0], p)) {
              if (all.insert(e).second) next.insert(e);
            }
          }
          if (n.repeat == '?') break;
          frontier = std::move(next);
        }
        return all;
      }
    }
    return {};
  }

  const GbnfGrammar& g_;
  const std::map<std::string, json::value>& externals_;
  std::string_view text_;
  std::vector<std::uint32_t> cps_;
  std::vector<std::size_t> offsets_;  // byte offset of each code point, and the end
  std::map<std::pair<std::string, std::size_t>, Ends> memo_;
};

bool type_accepts(std::string_view type, const json::value& v) {
  if (type == "object") return v.is_object();
  if (type == "array") return v.is_array();
  if (type == "string") return v.is_string();
  if (type == "boolean") return v.is_bool();
  if (type == "null") return v.is_null();
  if (type == "integer") return v.is_int64() || v.is_uint64();
  if (type == "number") return v.is_number();
  return false;
}

}  // namespace

GbnfGrammar parse_gbnf(std::string_view text, std::string& error) {
  GbnfGrammar grammar;
  error.clear();
  Parser(text, grammar, error).run();
  if (error.empty() && !grammar.rules.count("root")) error = "no root rule";
  return grammar;
}

std::set<std::string> undefined_rules(const GbnfGrammar& grammar) {
  std::set<std::string> undefined;
  for (const std::string& name : grammar.referenced) {
    if (!grammar.rules.count(name)) undefined.insert(name);
  }
  return undefined;
}

bool gbnf_matches(const GbnfGrammar& grammar, const std::map<std::string, json::value>& externals,
                  std::string_view text) {
  return Matcher(grammar, externals, text).matches();
}

bool schema_accepts(const json::value& schema, const json::value& value, const json::value& root) {
  if (schema.is_bool()) return schema.get_bool();
  if (!schema.is_object()) return false;
  const json::object& s = schema.get_object();
  if (const json::value* ref = s.if_contains("$ref")) {
    const std::string_view path = ref->as_string();
    for (std::string_view prefix : {"#/$defs/", "#/definitions/"}) {
      if (path.substr(0, prefix.size()) == prefix) {
        const std::string key(prefix.substr(2, prefix.size() - 3));
        return schema_accepts(root.at(key).at(path.substr(prefix.size())), value, root);
      }
    }
    return false;
  }
  if (const json::value* c = s.if_contains("const"); c && *c != value) return false;
  if (const json::value* e = s.if_contains("enum")) {
    bool found = false;
    for (const json::value& option : e->as_array()) found = found || option == value;
    if (!found) return false;
  }
  if (const json::value* any = s.if_contains("anyOf")) {
    bool ok = false;
    for (const json::value& branch : any->as_array()) ok = ok || schema_accepts(branch, value, root);
    if (!ok) return false;
  }
  if (const json::value* t = s.if_contains("type")) {
    if (t->is_string() && !type_accepts(t->get_string(), value)) return false;
  }
  if (const json::value* min = s.if_contains("minLength"); min && value.is_string()) {
    if (value.get_string().size() < static_cast<std::size_t>(min->to_number<std::int64_t>())) return false;
  }
  if (value.is_object()) {
    const json::object& o = value.get_object();
    const json::value* properties = s.if_contains("properties");
    if (const json::value* required = s.if_contains("required")) {
      for (const json::value& name : required->as_array()) {
        if (!o.contains(name.as_string())) return false;
      }
    }
    if (properties != nullptr) {
      // The engine writes listed keys in their declared order, and no others unless allowed.
      const json::object& listed = properties->as_object();
      std::size_t last_rank = 0;
      for (const auto& [key, v] : o) {
        auto p = listed.find(key);
        if (p == listed.end()) {
          if (!s.contains("additionalProperties")) return false;
          continue;
        }
        const auto rank = static_cast<std::size_t>(p - listed.begin()) + 1;
        if (rank <= last_rank) return false;
        last_rank = rank;
        if (!schema_accepts(p->value(), v, root)) return false;
      }
    }
  }
  if (value.is_array()) {
    if (const json::value* items = s.if_contains("items")) {
      for (const json::value& item : value.get_array()) {
        if (!schema_accepts(*items, item, root)) return false;
      }
    }
  }
  return true;
}

}  // namespace cellserve::server::tool_calls::testing
