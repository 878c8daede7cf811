// Reference checks of the JSON Schema formats the matcher enforces, written from the RFCs
// without regexes (the matcher's come from format_regex()). Same documented choices: RFC 3339
// days 01-31 whatever the month, leap second 60 allowed, T/Z in either case; email as a dot-atom
// local part and a domain of two or more labels; IP addresses as inet_pton reads them.
#pragma once

#include <arpa/inet.h>

#include <string>
#include <string_view>

namespace cellserve::engine::grammar::testing {

inline bool all_digits(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s)
    if (c < '0' || c > '9') return false;
  return true;
}

inline int two_digits(std::string_view s, size_t at) { return (s[at] - '0') * 10 + (s[at + 1] - '0'); }

inline bool full_date(std::string_view s) {
  if (s.size() != 10 || s[4] != '-' || s[7] != '-') return false;
  if (!all_digits(s.substr(0, 4)) || !all_digits(s.substr(5, 2)) || !all_digits(s.substr(8, 2))) return false;
  const int month = two_digits(s, 5), day = two_digits(s, 8);
  return month >= 1 && month <= 12 && day >= 1 && day <= 31;
}

inline bool full_time(std::string_view s) {
  if (s.size() < 9 || s[2] != ':' || s[5] != ':') return false;
  if (!all_digits(s.substr(0, 2)) || !all_digits(s.substr(3, 2)) || !all_digits(s.substr(6, 2))) return false;
  if (two_digits(s, 0) > 23 || two_digits(s, 3) > 59 || two_digits(s, 6) > 60) return false;
  size_t i = 8;
  if (i < s.size() && s[i] == '.') {
    size_t j = i + 1;
    while (j < s.size() && s[j] >= '0' && s[j] <= '9') ++j;
    if (j == i + 1) return false;
    i = j;
  }
  const std::string_view offset = s.substr(i);
  if (offset == "Z" || offset == "z") return true;
  if (offset.size() != 6 || (offset[0] != '+' && offset[0] != '-') || offset[3] != ':') return false;
  if (!all_digits(offset.substr(1, 2)) || !all_digits(offset.substr(4, 2))) return false;
  return two_digits(offset, 1) <= 23 && two_digits(offset, 4) <= 59;
}

inline bool is_hex(char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }
inline bool is_alnum(char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

inline bool email(std::string_view s) {
  const size_t at = s.find('@');
  if (at == std::string_view::npos || s.find('@', at + 1) != std::string_view::npos) return false;
  const std::string_view local = s.substr(0, at), domain = s.substr(at + 1);
  const std::string_view atext_extra = "!#$%&'*+/=?^_`{|}~-";
  bool prev_dot = true;  // no leading dot
  for (char c : local) {
    if (c == '.') {
      if (prev_dot) return false;
      prev_dot = true;
      continue;
    }
    if (!is_alnum(c) && atext_extra.find(c) == std::string_view::npos) return false;
    prev_dot = false;
  }
  if (prev_dot) return false;  // empty, or a trailing dot
  size_t labels = 0, start = 0;
  while (start <= domain.size()) {
    size_t end = domain.find('.', start);
    if (end == std::string_view::npos) end = domain.size();
    const std::string_view label = domain.substr(start, end - start);
    if (label.empty() || label.front() == '-' || label.back() == '-') return false;
    for (char c : label)
      if (!is_alnum(c) && c != '-') return false;
    ++labels;
    start = end + 1;
  }
  return labels >= 2;
}

inline bool uuid(std::string_view s) {
  if (s.size() != 36) return false;
  for (size_t i = 0; i < s.size(); ++i) {
    const bool dash = i == 8 || i == 13 || i == 18 || i == 23;
    if (dash ? s[i] != '-' : !is_hex(s[i])) return false;
  }
  return true;
}

inline bool matches_format(std::string_view format, const std::string& s) {
  if (format == "date") return full_date(s);
  if (format == "time") return full_time(s);
  if (format == "date-time")
    return s.size() > 11 && (s[10] == 'T' || s[10] == 't') && full_date(s.substr(0, 10)) &&
           full_time(std::string_view(s).substr(11));
  if (format == "uuid") return uuid(s);
  if (format == "email") return email(s);
  unsigned char addr[16];
  if (format == "ipv4") return inet_pton(AF_INET, s.c_str(), addr) == 1;
  if (format == "ipv6") return inet_pton(AF_INET6, s.c_str(), addr) == 1;
  return true;  // an annotation
}

}  // namespace cellserve::engine::grammar::testing
