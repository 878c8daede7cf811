#include "engine/chat/user_data.h"

#include <algorithm>

#include "engine/chat/py_format.h"
#include "engine/chat/utf8.h"

namespace cellserve::engine::chat {
namespace {

bool has_user_data_at(const Value& v, int depth) {
  if (depth > kMaxValueDepth) return true;  // too deep to look at: count it
  switch (v.kind()) {
    case Value::Kind::String:
      return !v.user_spans().empty();
    case Value::Kind::List:
      for (const Value& item : v.as_list()) {
        if (has_user_data_at(item, depth + 1)) return true;
      }
      return false;
    case Value::Kind::Dict:
      for (const auto& [key, value] : v.as_dict().entries()) {
        if (has_user_data_at(key, depth + 1) || has_user_data_at(value, depth + 1)) return true;
      }
      return false;
    case Value::Kind::Object:
      return true;
    default:
      return false;
  }
}

}  // namespace

bool has_user_data(const Value& v) { return has_user_data_at(v, 0); }

Value derived_string(std::string s, bool user, bool markup) {
  MarkedText t;
  t.text = std::move(s);
  if (user) add_span(t.user_spans, 0, t.text.size());
  return Value::string(std::move(t), markup);
}

Value substring(const Value& s, size_t pos, size_t len, bool markup) {
  const std::string& text = s.as_string();
  pos = std::min(pos, text.size());
  len = std::min(len, text.size() - pos);
  MarkedText t;
  t.text = text.substr(pos, len);
  t.user_spans = sub_spans(s.user_spans(), pos, pos + len);
  return Value::string(std::move(t), markup);
}

Value strip_value(const Value& s, const std::string* chars, bool left, bool right) {
  const std::string& text = s.as_string();
  const std::string kept = py_strip(text, chars, left, right);
  // What is kept starts with a character outside the stripped set, so its first occurrence is
  // where stripping stopped (UTF-8 is self-synchronising).
  const size_t pos = !left ? 0 : !right ? text.size() - kept.size() : text.find(kept);
  return substring(s, pos, kept.size(), s.is_markup());
}

Value str_value(const Value& v) {
  if (v.is_string()) return v;
  return derived_string(py_str(v), has_user_data(v));
}

void append_str(MarkedText& out, const Value& v) {
  if (v.is_string()) return out.append(v.as_string(), v.user_spans());
  out.append(py_str(v), has_user_data(v));
}

MarkedText marked_text(const Value& s) {
  MarkedText t;
  t.append(s.as_string(), s.user_spans());
  return t;
}

Value map_chars(const Value& s, std::string (*fn)(std::string_view), bool markup) {
  const std::string& text = s.as_string();
  std::string whole = fn(text);
  const std::span<const TextSpan> spans = s.user_spans();
  if (spans.empty()) return Value::string(std::move(whole), markup);
  MarkedText runs;
  size_t at = 0;
  for (const TextSpan& span : spans) {
    runs.append(fn(std::string_view(text).substr(at, span.begin - at)), false);
    runs.append(fn(std::string_view(text).substr(span.begin, span.end - span.begin)), true);
    at = span.end;
  }
  runs.append(fn(std::string_view(text).substr(at)), false);
  if (runs.text != whole) return derived_string(std::move(whole), true, markup);
  return Value::string(std::move(runs), markup);
}

}  // namespace cellserve::engine::chat
