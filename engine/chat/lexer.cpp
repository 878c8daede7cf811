#include "engine/chat/lexer.h"

#include <charconv>

#include "engine/chat/error.h"
#include "engine/chat/utf8.h"

namespace cellserve::engine::chat {
namespace {

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_name_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool is_name_char(char c) { return is_name_start(c) || is_digit(c); }
int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// \r\n and \r become \n; one trailing newline is dropped (keep_trailing_newline=False).
std::string normalize_newlines(std::string_view source) {
  std::string out;
  out.reserve(source.size());
  for (size_t i = 0; i < source.size(); ++i) {
    if (source[i] == '\r') {
      out += '\n';
      if (i + 1 < source.size() && source[i + 1] == '\n') ++i;
    } else {
      out += source[i];
    }
  }
  if (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

class Lexer {
 public:
  explicit Lexer(std::string_view source) : src_(normalize_newlines(source)) {}

  std::vector<Token> run() {
    while (pos_ < src_.size()) lex_root();
    emit(TokenType::Eof, "", line_);
    return std::move(out_);
  }

 private:
  [[noreturn]] void syntax_error(const std::string& message) const {
    throw TemplateError(ErrorKind::Syntax, message, line_);
  }

  void emit(TokenType type, std::string value, int line) {
    Token t;
    t.type = type;
    t.value = std::move(value);
    t.line = line;
    out_.push_back(std::move(t));
  }

  // Moves to `to`, counting the newlines passed.
  void advance(size_t to) {
    for (size_t i = pos_; i < to; ++i) {
      if (src_[i] == '\n') ++line_;
    }
    pos_ = to;
  }

  bool at(size_t pos, std::string_view s) const { return src_.compare(pos, s.size(), s) == 0; }

  // The end of a run of (Unicode) whitespace starting at `pos`.
  size_t skip_space(size_t pos) const {
    while (pos < src_.size()) {
      size_t next = pos;
      if (!is_py_space(utf8_decode(src_, &next))) break;
      pos = next;
    }
    return pos;
  }

  bool all_space(std::string_view s) const {
    size_t pos = 0;
    while (pos < s.size()) {
      if (!is_py_space(utf8_decode(s, &pos))) return false;
    }
    return true;
  }

  // Applies the whitespace control of a tag that follows `text` and emits the text.
  void emit_text(std::string text, char sign, bool lstrip_applies, int line) {
    if (sign == '-') {
      text = py_strip(text, nullptr, false, true);
    } else if (sign != '+' && lstrip_applies) {
      const size_t l_pos = text.rfind('\n') + 1;  // npos + 1 == 0
      if ((l_pos > 0 || line_starting_) && l_pos < text.size() && all_space(std::string_view(text).substr(l_pos))) {
        text.resize(l_pos);
      }
    }
    if (!text.empty()) emit(TokenType::Data, std::move(text), line);
  }

  void lex_root() {
    size_t start = pos_;
    while (true) {
      start = src_.find('{', start);
      if (start == std::string::npos || start + 1 >= src_.size()) {
        emit(TokenType::Data, src_.substr(pos_), line_);
        advance(src_.size());
        return;
      }
      const char kind = src_[start + 1];
      if (kind == '{' || kind == '%' || kind == '#') break;
      ++start;
    }
    const char kind = src_[start + 1];
    const char sign =
        start + 2 < src_.size() && (src_[start + 2] == '-' || src_[start + 2] == '+') ? src_[start + 2] : 0;
    const size_t body = start + 2 + (sign != 0 ? 1 : 0);
    const int text_line = line_;
    std::string text = src_.substr(pos_, start - pos_);
    advance(start);
    if (kind == '%' && lex_raw(text, sign, body, text_line)) return;
    emit_text(std::move(text), sign, kind != '{', text_line);
    line_starting_ = false;  // the tag start just consumed does not end a line
    if (kind == '#') return lex_comment(body);
    emit(kind == '{' ? TokenType::VariableBegin : TokenType::BlockBegin, "", line_);
    advance(body);
    lex_tag(kind == '%');
  }

  void lex_comment(size_t body) {
    const size_t close = src_.find("#}", body);
    if (close == std::string::npos) syntax_error("missing end of comment tag");
    size_t end = close + 2;
    const char sign = close > body && (src_[close - 1] == '-' || src_[close - 1] == '+') ? src_[close - 1] : 0;
    if (sign == '-')
      end = skip_space(end);
    else if (sign == 0 && end < src_.size() && src_[end] == '\n')
      ++end;  // trim_blocks
    advance(end);
    line_starting_ = src_[end - 1] == '\n';
  }

  // {% raw %}...{% endraw %}: returns false when the tag at `body` is not `raw`.
  bool lex_raw(const std::string& text, char sign, size_t body, int text_line) {
    size_t p = skip_space(body);
    if (!at(p, "raw")) return false;
    p = skip_space(p + 3);
    if (at(p, "-%}"))
      p = skip_space(p + 3);
    else if (at(p, "%}"))
      p += 2;
    else
      return false;
    emit_text(text, sign, true, text_line);
    line_starting_ = false;
    advance(p);
    line_starting_ = src_[p - 1] == '\n';
    for (size_t s = src_.find("{%", p); s != std::string::npos; s = src_.find("{%", s + 1)) {
      const char end_sign = s + 2 < src_.size() && (src_[s + 2] == '-' || src_[s + 2] == '+') ? src_[s + 2] : 0;
      size_t q = skip_space(s + 2 + (end_sign != 0 ? 1 : 0));
      if (!at(q, "endraw")) continue;
      q = skip_space(q + 6);
      if (at(q, "+%}"))
        q += 3;
      else if (at(q, "-%}"))
        q = skip_space(q + 3);
      else if (at(q, "%}"))
        q += (q + 2 < src_.size() && src_[q + 2] == '\n') ? 3 : 2;
      else
        continue;
      const int line = line_;
      emit_text(src_.substr(p, s - p), end_sign, true, line);
      advance(q);
      line_starting_ = src_[q - 1] == '\n';
      return true;
    }
    syntax_error("missing end of raw directive");
  }

  // Returns true (and consumes it) when the end of the current tag is at pos_.
  bool lex_tag_end(bool block) {
    const char* close = block ? "%}" : "}}";
    size_t end = 0;
    if (block && at(pos_, "+%}")) {
      end = pos_ + 3;
    } else if (at(pos_, std::string("-") + close)) {
      end = skip_space(pos_ + 3);
    } else if (at(pos_, close)) {
      end = pos_ + 2;
      if (block && end < src_.size() && src_[end] == '\n') ++end;  // trim_blocks
    } else {
      return false;
    }
    emit(block ? TokenType::BlockEnd : TokenType::VariableEnd, "", line_);
    advance(end);
    line_starting_ = src_[end - 1] == '\n';
    return true;
  }

  void lex_tag(bool block) {
    std::string balance;  // the closing brackets expected, innermost last
    while (true) {
      if (pos_ >= src_.size())
        syntax_error(block ? "unexpected end of template, expected '%}'" : "unexpected end of template, expected '}}'");
      if (balance.empty() && lex_tag_end(block)) return;
      const size_t space_end = skip_space(pos_);
      if (space_end != pos_) {
        advance(space_end);
        continue;
      }
      const char c = src_[pos_];
      if (is_digit(c)) {
        lex_number();
      } else if (is_name_start(c)) {
        size_t end = pos_;
        while (end < src_.size() && is_name_char(src_[end])) ++end;
        emit(TokenType::Name, src_.substr(pos_, end - pos_), line_);
        advance(end);
      } else if (c == '\'' || c == '"') {
        lex_string();
      } else {
        lex_operator(&balance);
      }
    }
  }

  // (\d+_)*\d+ starting at `p`; returns `p` when there is no digit there.
  size_t scan_digits(size_t p) const {
    size_t q = p;
    while (q < src_.size() && is_digit(src_[q])) {
      while (q < src_.size() && is_digit(src_[q])) ++q;
      if (q + 1 < src_.size() && src_[q] == '_' && is_digit(src_[q + 1])) ++q;
    }
    return q;
  }

  size_t scan_exponent(size_t p) const {
    if (p >= src_.size() || (src_[p] != 'e' && src_[p] != 'E')) return p;
    size_t q = p + 1;
    if (q < src_.size() && (src_[q] == '+' || src_[q] == '-')) ++q;
    const size_t end = scan_digits(q);
    return end > q ? end : p;
  }

  void lex_number() {
    const size_t start = pos_;
    size_t end = scan_digits(start);
    bool is_float = false;
    if (start == 0 || src_[start - 1] != '.') {
      size_t frac_end = end;
      if (end < src_.size() && src_[end] == '.') {
        const size_t f = scan_digits(end + 1);
        if (f > end + 1) frac_end = f;
      }
      const size_t exp_end = scan_exponent(frac_end);
      if (exp_end > frac_end || frac_end > end) {
        is_float = true;
        end = exp_end;
      }
    }
    std::string text;
    if (is_float) {
      for (size_t i = start; i < end; ++i) {
        if (src_[i] != '_') text += src_[i];
      }
      Token t;
      t.type = TokenType::Float;
      t.line = line_;
      std::from_chars(text.data(), text.data() + text.size(), t.float_value);
      t.value = std::move(text);
      out_.push_back(std::move(t));
      advance(end);
      return;
    }
    int base = 10;
    size_t digits = start;
    if (src_[start] == '0' && start + 1 < src_.size()) {
      const char p = static_cast<char>(src_[start + 1] | 0x20);
      if (p == 'b' || p == 'o' || p == 'x') {
        base = p == 'b' ? 2 : p == 'o' ? 8 : 16;
        digits = start + 2;
      }
    }
    end = digits;
    const bool decimal_zero = base == 10 && src_[start] == '0';  // 0(_?0)*
    auto is_base_digit = [&](char ch) {
      const int v = hex_value(ch);
      return v >= 0 && v < base && (!decimal_zero || ch == '0');
    };
    while (end < src_.size()) {
      if (src_[end] == '_' && end + 1 < src_.size() && is_base_digit(src_[end + 1])) ++end;
      if (!is_base_digit(src_[end])) break;
      text += src_[end++];
    }
    if (text.empty()) syntax_error("invalid integer literal");
    Token t;
    t.type = TokenType::Integer;
    t.line = line_;
    auto res = std::from_chars(text.data(), text.data() + text.size(), t.int_value, base);
    if (res.ec != std::errc())
      throw TemplateError(ErrorKind::Unsupported, "integer literal out of 64-bit range", line_);
    t.value = src_.substr(start, end - start);
    out_.push_back(std::move(t));
    advance(end);
  }

  void lex_string() {
    const char quote = src_[pos_];
    size_t i = pos_ + 1;
    while (i < src_.size() && src_[i] != quote) i += src_[i] == '\\' ? 2 : 1;
    if (i >= src_.size()) syntax_error("unterminated string literal");
    emit(TokenType::String, decode_escapes(std::string_view(src_).substr(pos_ + 1, i - pos_ - 1)), line_);
    advance(i + 1);
  }

  // Python's unicode-escape decoding, which Jinja2 applies to string literals.
  std::string decode_escapes(std::string_view raw) const {
    std::string out;
    char32_t pending_high = 0;  // a \uD8xx waiting for its low surrogate
    auto flush_high = [&]() {
      if (pending_high != 0) utf8_append(out, 0xFFFD);  // a lone surrogate cannot be UTF-8
      pending_high = 0;
    };
    auto put = [&](char32_t cp) {
      if (pending_high != 0 && cp >= 0xDC00 && cp <= 0xDFFF) {
        utf8_append(out, 0x10000 + ((pending_high - 0xD800) << 10) + (cp - 0xDC00));
        pending_high = 0;
        return;
      }
      flush_high();
      if (cp >= 0xD800 && cp <= 0xDBFF)
        pending_high = cp;
      else if (cp >= 0xDC00 && cp <= 0xDFFF)
        utf8_append(out, 0xFFFD);
      else
        utf8_append(out, cp);
    };
    for (size_t i = 0; i < raw.size(); ++i) {
      if (raw[i] != '\\') {
        flush_high();
        out += raw[i];
        continue;
      }
      if (i + 1 >= raw.size()) syntax_error("\\ at end of string literal");
      const char d = raw[++i];
      int digits = 0;
      switch (d) {
        case '\n':
          continue;
        case '\\':
        case '\'':
        case '"':
          put(static_cast<char32_t>(d));
          continue;
        case 'a':
          put(0x07);
          continue;
        case 'b':
          put(0x08);
          continue;
        case 'f':
          put(0x0C);
          continue;
        case 'n':
          put('\n');
          continue;
        case 'r':
          put('\r');
          continue;
        case 't':
          put('\t');
          continue;
        case 'v':
          put(0x0B);
          continue;
        case 'x':
          digits = 2;
          break;
        case 'u':
          digits = 4;
          break;
        case 'U':
          digits = 8;
          break;
        case 'N':
          throw TemplateError(ErrorKind::Unsupported, "\\N{...} escapes in string literals are not supported", line_);
        default:
          break;
      }
      if (d >= '0' && d <= '7') {
        char32_t cp = static_cast<char32_t>(d - '0');
        for (int k = 0; k < 2 && i + 1 < raw.size() && raw[i + 1] >= '0' && raw[i + 1] <= '7'; ++k)
          cp = cp * 8 + static_cast<char32_t>(raw[++i] - '0');
        put(cp);
        continue;
      }
      if (digits == 0) {  // unknown escape: kept as written
        flush_high();
        out += '\\';
        out += d;
        continue;
      }
      char32_t cp = 0;
      for (int k = 0; k < digits; ++k) {
        if (i + 1 >= raw.size() || hex_value(raw[i + 1]) < 0) syntax_error(std::string("truncated \\") + d + " escape");
        cp = cp * 16 + static_cast<char32_t>(hex_value(raw[++i]));
      }
      if (cp > 0x10FFFF) syntax_error("illegal Unicode character in string literal");
      put(cp);
    }
    flush_high();
    return out;
  }

  void lex_operator(std::string* balance) {
    static constexpr std::string_view kTwo[] = {"//", "**", "==", "!=", ">=", "<="};
    for (std::string_view op : kTwo) {
      if (at(pos_, op)) {
        emit(TokenType::Operator, std::string(op), line_);
        advance(pos_ + 2);
        return;
      }
    }
    const char c = src_[pos_];
    if (std::string_view("+-/*%~[](){}><=.:|,;").find(c) == std::string_view::npos) {
      syntax_error(std::string("unexpected char '") + c + "'");
    }
    if (c == '(')
      balance->push_back(')');
    else if (c == '[')
      balance->push_back(']');
    else if (c == '{')
      balance->push_back('}');
    else if (c == ')' || c == ']' || c == '}') {
      if (balance->empty()) syntax_error(std::string("unexpected '") + c + "'");
      if (balance->back() != c) syntax_error(std::string("unexpected '") + c + "', expected '" + balance->back() + "'");
      balance->pop_back();
    }
    emit(TokenType::Operator, std::string(1, c), line_);
    advance(pos_ + 1);
  }

  std::string src_;
  size_t pos_ = 0;
  int line_ = 1;
  bool line_starting_ = true;  // the last thing consumed ended a line (or nothing was consumed yet)
  std::vector<Token> out_;
};

}  // namespace

std::vector<Token> tokenize(std::string_view source) { return Lexer(source).run(); }

std::string describe_token(const Token& token) {
  switch (token.type) {
    case TokenType::Data:
      return "template data";
    case TokenType::VariableBegin:
      return "begin of print statement";
    case TokenType::VariableEnd:
      return "end of print statement";
    case TokenType::BlockBegin:
      return "begin of statement block";
    case TokenType::BlockEnd:
      return "end of statement block";
    case TokenType::String:
      return "string literal";
    case TokenType::Integer:
      return "integer";
    case TokenType::Float:
      return "float";
    case TokenType::Eof:
      return "end of template";
    default:
      return "'" + token.value + "'";
  }
}

}  // namespace cellserve::engine::chat
