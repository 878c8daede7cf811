#include "net/header_params.h"

#include <cctype>

namespace cellserve::net {
namespace {

bool is_ows(char c) { return c == ' ' || c == '\t'; }

// A control character other than HTAB (CR, LF, NUL, DEL, ...).
bool is_ctl(char c) {
  const auto u = static_cast<unsigned char>(c);
  return (u < 0x20 && c != '\t') || u == 0x7f;
}

// tchar of RFC 9110 5.6.2.
bool is_tchar(char c) {
  if (std::isalnum(static_cast<unsigned char>(c))) return true;
  return std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && is_ows(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_ows(s.back())) s.remove_suffix(1);
  return s;
}

}  // namespace

std::optional<std::string> HeaderValue::param(std::string_view name) const {
  for (const auto& [key, value] : params) {
    if (key == name) return value;
  }
  return std::nullopt;
}

Result<HeaderValue> parse_header_value(std::string_view text) {
  for (const char c : text) {
    if (is_ctl(c)) return Status::invalid_argument("a control character in a header value");
  }
  HeaderValue out;
  size_t pos = text.find(';');
  out.value = lower(trim(text.substr(0, pos)));
  const size_t n = text.size();
  auto skip_ows = [&] {
    while (pos < n && is_ows(text[pos])) ++pos;
  };
  while (pos < n) {
    ++pos;  // the ';'
    skip_ows();
    if (pos == n || text[pos] == ';') continue;  // an empty parameter, which RFC 9110 allows
    const size_t name_start = pos;
    while (pos < n && is_tchar(text[pos])) ++pos;
    if (pos == name_start) return Status::invalid_argument("a header parameter without a name");
    std::string name = lower(text.substr(name_start, pos - name_start));
    skip_ows();  // whitespace around '=' is not in the grammar, but harmless to accept
    if (pos == n || text[pos] != '=') return Status::invalid_argument("header parameter " + name + " has no value");
    ++pos;
    skip_ows();
    std::string value;
    if (pos < n && text[pos] == '"') {
      ++pos;
      bool closed = false;
      while (pos < n) {
        const char c = text[pos++];
        if (c == '"') {
          closed = true;
          break;
        }
        if (c == '\\') {
          if (pos == n) break;
          value.push_back(text[pos++]);  // quoted-pair: the next character as is
        } else {
          value.push_back(c);
        }
      }
      if (!closed) return Status::invalid_argument("header parameter " + name + " has an unterminated quoted string");
    } else {
      const size_t value_start = pos;
      while (pos < n && text[pos] != ';' && text[pos] != '"' && !is_ows(text[pos])) ++pos;
      if (pos == value_start) return Status::invalid_argument("header parameter " + name + " has an empty value");
      value.assign(text.substr(value_start, pos - value_start));
    }
    skip_ows();
    if (pos < n && text[pos] != ';') {
      return Status::invalid_argument("unexpected text after header parameter " + name);
    }
    if (out.param(name)) return Status::invalid_argument("header parameter " + name + " is given twice");
    out.params.emplace_back(std::move(name), std::move(value));
  }
  return out;
}

}  // namespace cellserve::net
