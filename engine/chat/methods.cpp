#include "engine/chat/methods.h"

#include <algorithm>
#include <vector>

#include "engine/chat/call_args.h"
#include "engine/chat/operators.h"
#include "engine/chat/py_format.h"
#include "engine/chat/renderer.h"
#include "engine/chat/user_data.h"
#include "engine/chat/utf8.h"

namespace cellserve::engine::chat {
namespace {

using MethodFn = Value (*)(Renderer&, const Value& self, CallArgs& args);
struct Method {
  std::string_view name;
  MethodFn fn;
};

std::string join_chars(const std::vector<std::string_view>& chars, size_t begin, size_t end) {
  std::string out;
  for (size_t i = begin; i < end && i < chars.size(); ++i) out.append(chars[i]);
  return out;
}

// Python's slice-index adjustment for the optional start/end of find(), count(), startswith().
std::pair<size_t, size_t> char_range(size_t length, const Value& start, const Value& end) {
  auto adjust = [&](const Value& v, int64_t dflt) -> size_t {
    int64_t i = dflt;
    if (!v.is_none()) {
      if (!v.is_integral()) fail_type("slice indices must be integers or None");
      i = v.as_int();
    }
    const auto n = static_cast<int64_t>(length);
    if (i < 0) i = std::max<int64_t>(0, i + n);
    return static_cast<size_t>(std::min(i, n));
  };
  return {adjust(start, 0), adjust(end, static_cast<int64_t>(length))};
}

const std::string& str_arg(const Value& v, const char* what) {
  if (!v.is_string()) fail_type(std::string(what) + " must be str, not " + v.type_name());
  return v.as_string();
}

// A string computed from `self` with no byte-by-byte correspondence: marked as a whole when
// `self` holds request data (user_data.h).
Value same_kind(const Value& self, std::string s) {
  return derived_string(std::move(s), !self.user_spans().empty(), self.is_markup());
}

// Bytes [pos, pos + len) of `self`, with their marks, as a plain str.
Value part(const Value& self, size_t pos, size_t len) { return substring(self, pos, len, false); }

Value m_strip(const Value& self, CallArgs& args, bool left, bool right, const char* name) {
  auto a = bind_args(args, {{"chars", Value::none()}}, name);
  const std::string* chars = a[0].is_none() ? nullptr : &str_arg(a[0], "strip arg");
  return strip_value(self, chars, left, right);
}
Value s_strip(Renderer&, const Value& s, CallArgs& a) { return m_strip(s, a, true, true, "strip"); }
Value s_lstrip(Renderer&, const Value& s, CallArgs& a) { return m_strip(s, a, true, false, "lstrip"); }
Value s_rstrip(Renderer&, const Value& s, CallArgs& a) { return m_strip(s, a, false, true, "rstrip"); }

Value s_upper(Renderer&, const Value& s, CallArgs& a) {
  bind_args(a, {}, "upper");
  return map_chars(s, py_upper, s.is_markup());
}
Value s_lower(Renderer&, const Value& s, CallArgs& a) {
  bind_args(a, {}, "lower");
  return map_chars(s, py_lower, s.is_markup());
}

std::string py_title(std::string_view s) {
  std::string out;
  bool prev_cased = false;
  size_t pos = 0;
  while (pos < s.size()) {
    const char32_t cp = utf8_decode(s, &pos);
    const char32_t mapped = prev_cased ? to_lower_cp(cp) : to_upper_cp(cp);
    utf8_append(out, mapped);
    prev_cased = is_cased(cp);
  }
  return out;
}
Value s_title(Renderer&, const Value& s, CallArgs& a) {
  bind_args(a, {}, "title");
  return same_kind(s, py_title(s.as_string()));
}
Value s_capitalize(Renderer&, const Value& s, CallArgs& a) {
  bind_args(a, {}, "capitalize");
  const std::string& t = s.as_string();
  if (t.empty()) return s;
  size_t pos = 0;
  std::string out;
  utf8_append(out, to_upper_cp(utf8_decode(t, &pos)));
  return same_kind(s, out + py_lower(std::string_view(t).substr(pos)));
}
Value s_swapcase(Renderer&, const Value& s, CallArgs& a) {
  bind_args(a, {}, "swapcase");
  std::string out;
  size_t pos = 0;
  const std::string& t = s.as_string();
  while (pos < t.size()) {
    const char32_t cp = utf8_decode(t, &pos);
    utf8_append(out, is_upper_cp(cp) ? to_lower_cp(cp) : to_upper_cp(cp));
  }
  return same_kind(s, out);
}

Value s_split_impl(Renderer&, const Value& s, CallArgs& args, bool from_right) {
  auto a = bind_args(args, {{"sep", Value::none()}, {"maxsplit", Value::integer(-1)}}, from_right ? "rsplit" : "split");
  if (!a[1].is_integral()) fail_type("maxsplit must be an integer");
  int64_t maxsplit = a[1].as_int();
  std::vector<std::pair<size_t, size_t>> parts;  // (byte offset, length) in s
  const std::string& t = s.as_string();
  if (a[0].is_none()) {
    auto chars = utf8_chars(t);
    // Characters i..j-1 of `chars` (in either order) are a run of t: its byte range.
    auto run = [&](size_t i, size_t j) {
      const std::string_view x = chars[i];
      const std::string_view y = chars[j - 1];
      const size_t lo = static_cast<size_t>(std::min(x.data(), y.data()) - t.data());
      const size_t hi = static_cast<size_t>(std::max(x.data() + x.size(), y.data() + y.size()) - t.data());
      return std::pair<size_t, size_t>(lo, hi - lo);
    };
    auto space = [&](size_t i) {
      size_t p = 0;
      return is_py_space(utf8_decode(chars[i], &p));
    };
    if (from_right) std::reverse(chars.begin(), chars.end());
    size_t i = 0;
    while (true) {
      while (i < chars.size() && space(i)) ++i;
      if (i >= chars.size()) break;
      if (maxsplit == 0) {  // the rest as it is: Python strips only the whitespace before it
        parts.push_back(run(i, chars.size()));
        break;
      }
      size_t j = i;
      while (j < chars.size() && !space(j)) ++j;
      parts.push_back(run(i, j));
      i = j;
      if (maxsplit > 0) --maxsplit;
    }
    if (from_right) std::reverse(parts.begin(), parts.end());
  } else {
    const std::string& sep = str_arg(a[0], "separator");
    if (sep.empty()) fail_type("empty separator");
    if (!from_right) {
      size_t start = 0;
      while (maxsplit != 0) {
        const size_t hit = t.find(sep, start);
        if (hit == std::string::npos) break;
        parts.emplace_back(start, hit - start);
        start = hit + sep.size();
        if (maxsplit > 0) --maxsplit;
      }
      parts.emplace_back(start, t.size() - start);
    } else {
      size_t end = t.size();
      while (maxsplit != 0 && end >= sep.size()) {
        const size_t hit = t.rfind(sep, end - sep.size());
        if (hit == std::string::npos) break;
        parts.emplace_back(hit + sep.size(), end - hit - sep.size());
        end = hit;
        if (maxsplit > 0) --maxsplit;
      }
      parts.emplace_back(0, end);
      std::reverse(parts.begin(), parts.end());
    }
  }
  ValueList out;
  for (const auto& [pos, len] : parts) out.push_back(part(s, pos, len));
  return Value::list(std::move(out));
}
Value s_split(Renderer& r, const Value& s, CallArgs& a) { return s_split_impl(r, s, a, false); }
Value s_rsplit(Renderer& r, const Value& s, CallArgs& a) { return s_split_impl(r, s, a, true); }

Value s_splitlines(Renderer&, const Value& s, CallArgs& args) {
  auto a = bind_args(args, {{"keepends", Value::boolean(false)}}, "splitlines");
  const std::string& t = s.as_string();
  ValueList out;
  size_t line_start = 0;
  size_t pos = 0;
  while (pos < t.size()) {
    const size_t at = pos;
    const char32_t cp = utf8_decode(t, &pos);
    if (!is_line_break(cp)) continue;
    if (cp == '\r' && pos < t.size() && t[pos] == '\n') ++pos;
    out.push_back(part(s, line_start, (a[0].truthy() ? pos : at) - line_start));
    line_start = pos;
  }
  if (line_start < t.size()) out.push_back(part(s, line_start, t.size() - line_start));
  return Value::list(std::move(out));
}

bool affix_match(const Value& self, CallArgs& args, bool prefix) {
  auto a =
      bind_args(args, {"prefix", {"start", Value::none()}, {"end", Value::none()}}, prefix ? "startswith" : "endswith");
  std::string hay;
  if (a[1].is_none() && a[2].is_none()) {
    hay = self.as_string();  // the common case: no need to split into characters
  } else {
    const auto chars = utf8_chars(self.as_string());
    const auto [b, e] = char_range(chars.size(), a[1], a[2]);
    if (b > e) return false;
    hay = join_chars(chars, b, e);
  }
  ValueList candidates = a[0].is_tuple() ? a[0].as_list() : ValueList{a[0]};
  for (const Value& c : candidates) {
    const std::string& x = str_arg(c, prefix ? "startswith first arg" : "endswith first arg");
    if (x.size() > hay.size()) continue;
    if (prefix ? hay.compare(0, x.size(), x) == 0 : hay.compare(hay.size() - x.size(), x.size(), x) == 0) return true;
  }
  return false;
}
Value s_startswith(Renderer&, const Value& s, CallArgs& a) { return Value::boolean(affix_match(s, a, true)); }
Value s_endswith(Renderer&, const Value& s, CallArgs& a) { return Value::boolean(affix_match(s, a, false)); }

// find/rfind/index/rindex: the code point index of `sub` in s[start:end], or -1.
int64_t find_impl(const Value& self, CallArgs& args, bool reverse, const char* name) {
  auto a = bind_args(args, {"sub", {"start", Value::none()}, {"end", Value::none()}}, name);
  const std::string& sub = str_arg(a[0], "substring");
  const auto chars = utf8_chars(self.as_string());
  const auto [b, e] = char_range(chars.size(), a[1], a[2]);
  if (b > e) return -1;
  const std::string hay = join_chars(chars, b, e);
  const size_t hit = reverse ? hay.rfind(sub) : hay.find(sub);
  if (hit == std::string::npos) return -1;
  return static_cast<int64_t>(b + utf8_length(std::string_view(hay).substr(0, hit)));
}
Value s_find(Renderer&, const Value& s, CallArgs& a) { return Value::integer(find_impl(s, a, false, "find")); }
Value s_rfind(Renderer&, const Value& s, CallArgs& a) { return Value::integer(find_impl(s, a, true, "rfind")); }
Value s_index(Renderer&, const Value& s, CallArgs& a) {
  const int64_t i = find_impl(s, a, false, "index");
  if (i < 0) fail_type("substring not found");
  return Value::integer(i);
}
Value s_rindex(Renderer&, const Value& s, CallArgs& a) {
  const int64_t i = find_impl(s, a, true, "rindex");
  if (i < 0) fail_type("substring not found");
  return Value::integer(i);
}

Value s_count(Renderer&, const Value& s, CallArgs& args) {
  auto a = bind_args(args, {"sub", {"start", Value::none()}, {"end", Value::none()}}, "count");
  const std::string& sub = str_arg(a[0], "substring");
  const auto chars = utf8_chars(s.as_string());
  const auto [b, e] = char_range(chars.size(), a[1], a[2]);
  if (b > e) return Value::integer(0);
  if (sub.empty()) return Value::integer(static_cast<int64_t>(e - b + 1));
  const std::string hay = join_chars(chars, b, e);
  int64_t n = 0;
  for (size_t p = hay.find(sub); p != std::string::npos; p = hay.find(sub, p + sub.size())) ++n;
  return Value::integer(n);
}

Value s_replace(Renderer& r, const Value& s, CallArgs& args) {
  auto a = bind_args(args, {"old", "new", {"count", Value::integer(-1)}}, "replace");
  const std::string& old_s = str_arg(a[0], "replace() argument 1");
  const std::string& new_s = str_arg(a[1], "replace() argument 2");
  if (!a[2].is_integral()) fail_type("replace() count must be an integer");
  int64_t count = a[2].as_int();
  const std::string& t = s.as_string();
  // Bytes kept from s keep their marks; each inserted `new` brings its own.
  auto keep = [&](MarkedText& out, size_t pos, size_t len) {
    out.append(std::string_view(t).substr(pos, len), sub_spans(s.user_spans(), pos, pos + len));
  };
  MarkedText out;
  if (old_s.empty()) {
    const auto chars = utf8_chars(t);
    for (size_t i = 0; i <= chars.size(); ++i) {
      if (count != 0) {
        out.append(new_s, a[1].user_spans());
        if (count > 0) --count;
      }
      if (i < chars.size()) keep(out, static_cast<size_t>(chars[i].data() - t.data()), chars[i].size());
      r.check_size(out.text.size());
    }
    return Value::string(std::move(out), s.is_markup());
  }
  size_t start = 0;
  while (count != 0) {
    const size_t hit = t.find(old_s, start);
    if (hit == std::string::npos) break;
    keep(out, start, hit - start);
    out.append(new_s, a[1].user_spans());
    r.check_size(out.text.size());
    start = hit + old_s.size();
    if (count > 0) --count;
  }
  keep(out, start, t.size() - start);
  return Value::string(std::move(out), s.is_markup());
}

Value s_join(Renderer& r, const Value& s, CallArgs& args) {
  auto a = bind_args(args, {"iterable"}, "join");
  MarkedText out;
  size_t i = 0;
  for (const Value& item : iterate(a[0])) {
    if (!item.is_string())
      fail_type("sequence item " + std::to_string(i) + ": expected str instance, " + item.type_name() + " found");
    if (i++ > 0) out.append(s.as_string(), s.user_spans());
    out.append(item.as_string(), item.user_spans());
    r.check_size(out.text.size());
  }
  return Value::string(std::move(out));
}

Value s_format(Renderer& r, const Value& s, CallArgs& args) {
  std::string out = str_format(s.as_string(), args);
  r.check_size(out.size());
  bool user = has_user_data(s);
  for (const Value& v : args.positional) user = user || has_user_data(v);
  for (const auto& kv : args.keyword) user = user || has_user_data(kv.second);
  return derived_string(std::move(out), user);
}

template <bool (*Pred)(char32_t)>
Value char_class(Renderer&, const Value& s, CallArgs& a) {
  bind_args(a, {}, "is*");
  const std::string& t = s.as_string();
  if (t.empty()) return Value::boolean(false);
  size_t pos = 0;
  while (pos < t.size()) {
    if (!Pred(utf8_decode(t, &pos))) return Value::boolean(false);
  }
  return Value::boolean(true);
}
bool alnum_cp(char32_t c) { return is_alpha_cp(c) || is_digit_cp(c); }
bool ascii_cp(char32_t c) { return c < 0x80; }

template <bool Upper>
Value case_check(Renderer&, const Value& s, CallArgs& a) {
  bind_args(a, {}, Upper ? "isupper" : "islower");
  bool any_cased = false;
  size_t pos = 0;
  const std::string& t = s.as_string();
  while (pos < t.size()) {
    const char32_t cp = utf8_decode(t, &pos);
    if (Upper ? is_lower_cp(cp) : is_upper_cp(cp)) return Value::boolean(false);
    any_cased = any_cased || is_cased(cp);
  }
  return Value::boolean(any_cased);
}

Value s_affix_remove(const Value& s, CallArgs& args, bool prefix) {
  auto a = bind_args(args, {"affix"}, prefix ? "removeprefix" : "removesuffix");
  const std::string& x = str_arg(a[0], "argument");
  const std::string& t = s.as_string();
  if (x.size() > t.size()) return s;
  if (prefix && t.compare(0, x.size(), x) == 0) return substring(s, x.size(), t.size() - x.size(), s.is_markup());
  if (!prefix && t.compare(t.size() - x.size(), x.size(), x) == 0)
    return substring(s, 0, t.size() - x.size(), s.is_markup());
  return s;
}
Value s_removeprefix(Renderer&, const Value& s, CallArgs& a) { return s_affix_remove(s, a, true); }
Value s_removesuffix(Renderer&, const Value& s, CallArgs& a) { return s_affix_remove(s, a, false); }

Value partition_impl(const Value& s, CallArgs& args, bool reverse) {
  auto a = bind_args(args, {"sep"}, reverse ? "rpartition" : "partition");
  const std::string& sep = str_arg(a[0], "separator");
  if (sep.empty()) fail_type("empty separator");
  const std::string& t = s.as_string();
  const size_t hit = reverse ? t.rfind(sep) : t.find(sep);
  if (hit == std::string::npos) {
    return reverse ? Value::tuple({Value::string(""), Value::string(""), s})
                   : Value::tuple({s, Value::string(""), Value::string("")});
  }
  const size_t tail = hit + sep.size();
  return Value::tuple({part(s, 0, hit), part(s, hit, sep.size()), part(s, tail, t.size() - tail)});
}
Value s_partition(Renderer&, const Value& s, CallArgs& a) { return partition_impl(s, a, false); }
Value s_rpartition(Renderer&, const Value& s, CallArgs& a) { return partition_impl(s, a, true); }

Value justify(Renderer& r, const Value& s, CallArgs& args, char how) {
  const char* name = how == '<' ? "ljust" : how == '>' ? "rjust" : how == '^' ? "center" : "zfill";
  auto a = how == '0' ? bind_args(args, {"width"}, name)
                      : bind_args(args, {"width", {"fillchar", Value::string(" ")}}, name);
  if (!a[0].is_integral()) fail_type(std::string(name) + "() width must be an integer");
  const std::string fill = how == '0' ? "0" : str_arg(a[1], "fillchar");
  if (utf8_length(fill) != 1) fail_type("The fill character must be exactly one character long");
  const std::string& t = s.as_string();
  const auto len = static_cast<int64_t>(utf8_length(t));
  const int64_t width = a[0].as_int();
  if (width <= len) return s;
  r.check_size(static_cast<size_t>(width) * fill.size());
  const int64_t marg = width - len;
  int64_t left = how == '<' ? 0 : how == '^' ? marg / 2 + (marg & width & 1) : marg;
  auto rep = [&](int64_t n) {
    std::string out;
    for (int64_t i = 0; i < n; ++i) out += fill;
    return out;
  };
  const bool user = !s.user_spans().empty() || (how != '0' && !a[1].user_spans().empty());
  if (how == '0' && !t.empty() && (t[0] == '-' || t[0] == '+'))
    return derived_string(t.substr(0, 1) + rep(marg) + t.substr(1), user);
  return derived_string(rep(left) + t + rep(marg - left), user);
}
Value s_ljust(Renderer& r, const Value& s, CallArgs& a) { return justify(r, s, a, '<'); }
Value s_rjust(Renderer& r, const Value& s, CallArgs& a) { return justify(r, s, a, '>'); }
Value s_center(Renderer& r, const Value& s, CallArgs& a) { return justify(r, s, a, '^'); }
Value s_zfill(Renderer& r, const Value& s, CallArgs& a) { return justify(r, s, a, '0'); }

Value d_get(Renderer&, const Value& d, CallArgs& args) {
  auto a = bind_args(args, {"key", {"default", Value::none()}}, "get");
  if (!a[0].is_hashable()) fail_type("unhashable type: '" + a[0].type_name() + "'");
  const Value* v = d.as_dict().find(a[0]);
  return v != nullptr ? *v : a[1];
}
Value d_items(Renderer&, const Value& d, CallArgs& a) {
  bind_args(a, {}, "items");
  ValueList out;
  for (const auto& [k, v] : d.as_dict().entries()) out.push_back(Value::tuple({k, v}));
  return Value::list(std::move(out));
}
Value d_keys(Renderer&, const Value& d, CallArgs& a) {
  bind_args(a, {}, "keys");
  return Value::list(iterate(d));
}
Value d_values(Renderer&, const Value& d, CallArgs& a) {
  bind_args(a, {}, "values");
  ValueList out;
  for (const auto& entry : d.as_dict().entries()) out.push_back(entry.second);
  return Value::list(std::move(out));
}
Value any_copy(Renderer&, const Value& v, CallArgs& a) {
  bind_args(a, {}, "copy");
  return v;  // values are immutable, so a copy is the value itself
}
Value l_count(Renderer&, const Value& l, CallArgs& args) {
  auto a = bind_args(args, {"value"}, "count");
  return Value::integer(static_cast<int64_t>(
      std::count_if(l.as_list().begin(), l.as_list().end(), [&](const Value& v) { return py_equal(v, a[0]); })));
}
Value l_index(Renderer&, const Value& l, CallArgs& args) {
  auto a = bind_args(args, {"value"}, "index");
  const ValueList& items = l.as_list();
  for (size_t i = 0; i < items.size(); ++i) {
    if (py_equal(items[i], a[0])) return Value::integer(static_cast<int64_t>(i));
  }
  fail_type(py_repr(a[0]) + " is not in list");
}

constexpr Method kStrMethods[] = {
    {"strip", s_strip},
    {"lstrip", s_lstrip},
    {"rstrip", s_rstrip},
    {"upper", s_upper},
    {"lower", s_lower},
    {"casefold", s_lower},
    {"title", s_title},
    {"capitalize", s_capitalize},
    {"swapcase", s_swapcase},
    {"split", s_split},
    {"rsplit", s_rsplit},
    {"splitlines", s_splitlines},
    {"startswith", s_startswith},
    {"endswith", s_endswith},
    {"find", s_find},
    {"rfind", s_rfind},
    {"index", s_index},
    {"rindex", s_rindex},
    {"count", s_count},
    {"replace", s_replace},
    {"join", s_join},
    {"format", s_format},
    {"isalpha", char_class<is_alpha_cp>},
    {"isdigit", char_class<is_digit_cp>},
    {"isdecimal", char_class<is_digit_cp>},
    {"isnumeric", char_class<is_digit_cp>},
    {"isalnum", char_class<alnum_cp>},
    {"isspace", char_class<is_py_space>},
    {"isascii", char_class<ascii_cp>},
    {"islower", case_check<false>},
    {"isupper", case_check<true>},
    {"removeprefix", s_removeprefix},
    {"removesuffix", s_removesuffix},
    {"partition", s_partition},
    {"rpartition", s_rpartition},
    {"ljust", s_ljust},
    {"rjust", s_rjust},
    {"center", s_center},
    {"zfill", s_zfill},
};
constexpr Method kDictMethods[] = {
    {"get", d_get}, {"items", d_items}, {"keys", d_keys}, {"values", d_values}, {"copy", any_copy},
};
constexpr Method kListMethods[] = {{"count", l_count}, {"index", l_index}, {"copy", any_copy}};

constexpr std::string_view kDictMutators[] = {"pop", "popitem", "setdefault", "update", "clear"};
constexpr std::string_view kListMutators[] = {"append", "extend",  "insert", "pop",
                                              "remove", "reverse", "sort",   "clear"};
// Python methods outside the subset: a template calling one is rejected at parse time.
constexpr std::string_view kUnsupported[] = {"encode",  "expandtabs", "format_map", "isidentifier", "isprintable",
                                             "istitle", "maketrans",  "translate",  "fromkeys"};

template <size_t N>
const Method* lookup(const Method (&table)[N], std::string_view name) {
  for (const Method& m : table) {
    if (m.name == name) return &m;
  }
  return nullptr;
}

template <size_t N>
bool contains(const std::string_view (&list)[N], std::string_view name) {
  return std::find(std::begin(list), std::end(list), name) != std::end(list);
}

}  // namespace

Support method_support(std::string_view name) {
  if (lookup(kStrMethods, name) || lookup(kDictMethods, name) || lookup(kListMethods, name) ||
      contains(kDictMutators, name) || contains(kListMutators, name)) {
    return Support::Supported;
  }
  return contains(kUnsupported, name) ? Support::Unsupported : Support::Unknown;
}

std::optional<Value> find_method(const Value& receiver, const std::string& name) {
  const Method* m = nullptr;
  if (receiver.is_string()) {
    m = lookup(kStrMethods, name);
  } else if (receiver.is_dict()) {
    m = lookup(kDictMethods, name);
    if (m == nullptr && contains(kDictMutators, name)) {
      return Value::undefined("access to attribute '" + name + "' of 'dict' object is unsafe.", true);
    }
  } else if (receiver.is_list()) {
    m = lookup(kListMethods, name);
    if (m == nullptr && contains(kListMutators, name) && !receiver.is_tuple()) {
      return Value::undefined("access to attribute '" + name + "' of 'list' object is unsafe.", true);
    }
  }
  if (m == nullptr) return std::nullopt;
  auto fn = std::make_shared<Callable>();
  fn->name = receiver.type_name() + "." + name;
  fn->native = [receiver, f = m->fn](Renderer& r, CallArgs& args) {
    if (!receiver.is_dict()) r.charge(work_units(receiver));  // str and list methods scan the receiver
    return f(r, receiver, args);
  };
  return Value::callable(std::move(fn));
}

}  // namespace cellserve::engine::chat
