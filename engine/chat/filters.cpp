// Filters on single values: strings, numbers, tojson, default. Sequence filters are in
// filters_seq.cpp.
#include "engine/chat/filters.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <vector>

#include "engine/chat/json_dump.h"
#include "engine/chat/methods.h"
#include "engine/chat/objects.h"
#include "engine/chat/operators.h"
#include "engine/chat/py_format.h"
#include "engine/chat/renderer.h"
#include "engine/chat/user_data.h"
#include "engine/chat/utf8.h"

namespace cellserve::engine::chat {
namespace {

// Jinja2's soft_str: strings (Markup included) unchanged, everything else through str().
Value soft_str(const Value& v) { return str_value(v); }

// String `s` as a Markup (true) or plain str (false), marks kept.
Value with_markup(const Value& s, bool markup) { return Value::string(marked_text(s), markup); }

Value f_abs(Renderer&, const Value& v, CallArgs& args) {
  bind_args(args, {}, "abs");
  if (v.is_undefined()) fail_undefined(v);
  if (v.is_float()) return Value::floating(std::fabs(v.as_float()));
  if (!v.is_integral()) fail_type("bad operand type for abs(): '" + v.type_name() + "'");
  return v.as_int() < 0 ? negate(v) : Value::integer(v.as_int());
}

Value f_default(Renderer&, const Value& v, CallArgs& args) {
  auto a = bind_args(args, {{"default_value", Value::string("")}, {"boolean", Value::boolean(false)}}, "default");
  if (v.is_undefined() || (a[1].truthy() && !v.truthy())) return a[0];
  return v;
}

Value f_string(Renderer&, const Value& v, CallArgs& args) {
  bind_args(args, {}, "string");
  return soft_str(v);
}

Value f_safe(Renderer&, const Value& v, CallArgs& args) {
  bind_args(args, {}, "safe");
  return with_markup(soft_str(v), true);
}

Value f_escape(Renderer&, const Value& v, CallArgs& args) {
  bind_args(args, {}, "escape");
  if (v.is_markup()) return v;
  return map_chars(soft_str(v), html_escape, true);
}

Value f_forceescape(Renderer&, const Value& v, CallArgs& args) {
  bind_args(args, {}, "forceescape");
  return map_chars(soft_str(v), html_escape, true);
}

Value f_trim(Renderer&, const Value& v, CallArgs& args) {
  auto a = bind_args(args, {{"chars", Value::none()}}, "trim");
  const Value s = soft_str(v);
  if (!a[0].is_none() && !a[0].is_string()) fail_type("strip arg must be None or str");
  return strip_value(s, a[0].is_none() ? nullptr : &a[0].as_string(), true, true);
}

Value f_upper(Renderer&, const Value& v, CallArgs& args) {
  bind_args(args, {}, "upper");
  const Value s = soft_str(v);
  return map_chars(s, py_upper, s.is_markup());
}

Value f_lower(Renderer&, const Value& v, CallArgs& args) {
  bind_args(args, {}, "lower");
  const Value s = soft_str(v);
  return map_chars(s, py_lower, s.is_markup());
}

// Jinja2's title filter: upper-cases the first character of every word, where words start after
// any of - ( { [ < or whitespace, and lower-cases the rest.
Value f_title(Renderer&, const Value& v, CallArgs& args) {
  bind_args(args, {}, "title");
  const Value s = soft_str(v);
  const std::string& t = s.as_string();
  std::string out;
  bool word_start = true;
  size_t pos = 0;
  while (pos < t.size()) {
    const char32_t cp = utf8_decode(t, &pos);
    const bool delimiter = is_py_space(cp) || cp == '-' || cp == '(' || cp == '{' || cp == '[' || cp == '<';
    utf8_append(out, delimiter ? cp : word_start ? to_upper_cp(cp) : to_lower_cp(cp));
    word_start = delimiter;
  }
  // Jinja2 joins the words with "": a plain str. Case depends on the previous character, so
  // marks cannot follow byte by byte.
  return derived_string(std::move(out), has_user_data(s));
}

Value call_str_method(Renderer& r, const Value& s, const char* name, CallArgs args) {
  return r.call(*find_method(s, name), args);
}

Value f_capitalize(Renderer& r, const Value& v, CallArgs& args) {
  bind_args(args, {}, "capitalize");
  return call_str_method(r, soft_str(v), "capitalize", {});
}

Value f_center(Renderer& r, const Value& v, CallArgs& args) {
  auto a = bind_args(args, {{"width", Value::integer(80)}}, "center");
  CallArgs call;
  call.positional.push_back(a[0]);
  return call_str_method(r, soft_str(v), "center", std::move(call));
}

Value f_replace(Renderer& r, const Value& v, CallArgs& args) {
  auto a = bind_args(args, {"old", "new", {"count", Value::none()}}, "replace");
  CallArgs call;
  call.positional = {a[0], a[1], a[2].is_none() ? Value::integer(-1) : a[2]};
  return with_markup(call_str_method(r, with_markup(soft_str(v), false), "replace", std::move(call)), false);
}

Value f_wordcount(Renderer&, const Value& v, CallArgs& args) {
  bind_args(args, {}, "wordcount");
  const std::string t = py_str(v);
  int64_t words = 0;
  bool in_word = false;
  size_t pos = 0;
  while (pos < t.size()) {
    const char32_t cp = utf8_decode(t, &pos);
    const bool word_char = is_alpha_cp(cp) || is_digit_cp(cp) || cp == '_';
    if (word_char && !in_word) ++words;
    in_word = word_char;
  }
  return Value::integer(words);
}

Value f_indent(Renderer& r, const Value& v, CallArgs& args) {
  auto a = bind_args(args,
                     {{"width", Value::integer(4)}, {"first", Value::boolean(false)}, {"blank", Value::boolean(false)}},
                     "indent");
  std::string indention;
  if (a[0].is_string()) {
    indention = a[0].as_string();
  } else {
    if (!a[0].is_integral()) fail_type("indent width must be an int or a string");
    r.check_size(static_cast<size_t>(std::max<int64_t>(0, a[0].as_int())));
    indention.assign(static_cast<size_t>(std::max<int64_t>(0, a[0].as_int())), ' ');
  }
  // Jinja2 appends "\n" to the input itself, which only strings (and Markup) allow.
  if (v.is_undefined()) fail_undefined(v);
  if (!v.is_string()) fail_type("unsupported operand type(s) for +=: '" + v.type_name() + "' and 'str'");
  const Value& s = v;
  const bool indention_is_data = a[0].is_string() && !a[0].user_spans().empty();
  CallArgs no_args;
  MarkedText input = marked_text(s);
  input.append("\n");
  const ValueList lines = call_str_method(r, Value::string(std::move(input)), "splitlines", no_args).as_list();
  MarkedText out;
  for (size_t i = 0; i < lines.size(); ++i) {
    const std::string& line = lines[i].as_string();
    if (i > 0) out.append("\n");
    if (i == 0 ? a[1].truthy() : (a[2].truthy() || !line.empty())) out.append(indention, indention_is_data);
    out.append(line, lines[i].user_spans());
    r.check_size(out.text.size());
  }
  return Value::string(std::move(out), s.is_markup());
}

// Python's int(str, base): optional sign, underscores between digits, surrounding whitespace.
std::optional<int64_t> parse_py_int(std::string text, int base) {
  text = py_strip(text, nullptr, true, true);
  bool negative = false;
  size_t i = 0;
  if (i < text.size() && (text[i] == '+' || text[i] == '-')) negative = text[i++] == '-';
  if (base == 16 && text.size() > i + 1 && text[i] == '0' && (text[i + 1] | 0x20) == 'x') i += 2;
  if (base == 8 && text.size() > i + 1 && text[i] == '0' && (text[i + 1] | 0x20) == 'o') i += 2;
  if (base == 2 && text.size() > i + 1 && text[i] == '0' && (text[i + 1] | 0x20) == 'b') i += 2;
  std::string digits;
  for (; i < text.size(); ++i) {
    if (text[i] == '_' && !digits.empty() && i + 1 < text.size() && text[i + 1] != '_') continue;
    digits += text[i];
  }
  if (digits.empty()) return std::nullopt;
  uint64_t mag = 0;
  auto res = std::from_chars(digits.data(), digits.data() + digits.size(), mag, base);
  if (res.ec != std::errc() || res.ptr != digits.data() + digits.size() || mag > (1ull << 63) - (negative ? 0 : 1)) {
    return std::nullopt;
  }
  return negative ? static_cast<int64_t>(0 - mag) : static_cast<int64_t>(mag);
}

std::optional<double> parse_py_float(const std::string& text) {
  const std::string t = py_lower(py_strip(text, nullptr, true, true));
  if (t == "inf" || t == "+inf" || t == "infinity" || t == "+infinity") return HUGE_VAL;
  if (t == "-inf" || t == "-infinity") return -HUGE_VAL;
  if (t == "nan" || t == "+nan" || t == "-nan") return std::nan("");
  std::string clean;
  for (char c : t) {
    if (c != '_') clean += c;
  }
  const char* begin = clean.data() + (!clean.empty() && clean[0] == '+' ? 1 : 0);
  double d = 0;
  auto res = std::from_chars(begin, clean.data() + clean.size(), d);
  if (clean.empty() || res.ec != std::errc() || res.ptr != clean.data() + clean.size()) return std::nullopt;
  return d;
}

Value f_int(Renderer&, const Value& v, CallArgs& args) {
  auto a = bind_args(args, {{"default", Value::integer(0)}, {"base", Value::integer(10)}}, "int");
  if (v.is_undefined()) fail_undefined(v);
  if (v.is_integral()) return Value::integer(v.as_int());
  // Python: int(nan) is a ValueError (so the default), int(inf) an OverflowError; Python's big
  // integers beyond 64 bits fail here rather than produce a wrong number.
  auto from_double = [&](double d) -> Value {
    if (std::isnan(d)) return a[0];
    if (std::isinf(d) || std::fabs(d) >= 9.2e18) fail_type("integer overflow (cellserve's integers are 64-bit)");
    return Value::integer(static_cast<int64_t>(std::trunc(d)));
  };
  if (v.is_float()) return from_double(v.as_float());
  if (v.is_string()) {
    if (!a[1].is_integral() || a[1].as_int() < 2 || a[1].as_int() > 36) fail_type("int() base must be >= 2 and <= 36");
    if (auto i = parse_py_int(v.as_string(), static_cast<int>(a[1].as_int()))) return Value::integer(*i);
    if (auto d = parse_py_float(v.as_string())) return from_double(*d);
  }
  return a[0];
}

Value f_float(Renderer&, const Value& v, CallArgs& args) {
  auto a = bind_args(args, {{"default", Value::floating(0.0)}}, "float");
  if (v.is_undefined()) fail_undefined(v);
  if (v.is_number()) return Value::floating(v.as_float());
  if (v.is_string()) {
    if (auto d = parse_py_float(v.as_string())) return Value::floating(*d);
  }
  return a[0];
}

// Python's round(x, n) for floats: correctly rounded, ties to even on the exact binary value
// (which is what printf's %.*f does with the default rounding mode).
double round_float(double x, int64_t precision) {
  if (std::isnan(x) || std::isinf(x) || precision > 320) return x;
  if (precision >= 0) {
    std::vector<char> buf(static_cast<size_t>(precision) + 330);
    std::snprintf(buf.data(), buf.size(), "%.*f", static_cast<int>(precision), x);
    double r = 0;
    std::from_chars(buf.data(), buf.data() + std::char_traits<char>::length(buf.data()), r);
    return r;
  }
  const double scale = std::pow(10.0, static_cast<double>(-precision));
  return std::nearbyint(x / scale) * scale;
}

Value f_round(Renderer&, const Value& v, CallArgs& args) {
  auto a = bind_args(args, {{"precision", Value::integer(0)}, {"method", Value::string("common")}}, "round");
  if (!a[0].is_integral()) fail_type("round() precision must be an integer");
  const std::string method = py_str(a[1]);
  if (method != "common" && method != "ceil" && method != "floor") fail_type("method must be common, ceil or floor");
  if (v.is_undefined()) fail_undefined(v);
  if (!v.is_number()) fail_type("type " + v.type_name() + " doesn't define __round__ method");
  const int64_t precision = a[0].as_int();
  if (method == "common") {
    if (!v.is_float()) {
      if (precision >= 0) return Value::integer(v.as_int());
      return Value::integer(static_cast<int64_t>(round_float(static_cast<double>(v.as_int()), precision)));
    }
    return Value::floating(round_float(v.as_float(), precision));
  }
  const double scale = std::pow(10.0, static_cast<double>(precision));
  const double scaled = v.as_float() * scale;
  return Value::floating((method == "ceil" ? std::ceil(scaled) : std::floor(scaled)) / scale);
}

Value f_format(Renderer& r, const Value& v, CallArgs& args) {
  if (!args.positional.empty() && !args.keyword.empty())
    fail_type("can't handle positional and keyword arguments at the same time");
  Value fmt_args = Value::tuple(args.positional);
  if (!args.keyword.empty()) {
    Dict d;
    for (const auto& [k, val] : args.keyword) d.set(Value::string(k), val);
    fmt_args = Value::dict(std::move(d));
  }
  std::string out = percent_format(soft_str(v).as_string(), fmt_args);
  r.check_size(out.size());
  return derived_string(std::move(out), has_user_data(v) || has_user_data(fmt_args));
}

// Hugging Face's tojson: json.dumps(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False).
Value f_tojson(Renderer& r, const Value& v, CallArgs& args) {
  auto a = bind_args(args,
                     {{"ensure_ascii", Value::boolean(false)},
                      {"indent", Value::none()},
                      {"separators", Value::none()},
                      {"sort_keys", Value::boolean(false)}},
                     "tojson");
  JsonDumpOptions o;
  o.ensure_ascii = a[0].truthy();
  if (a[1].is_integral()) {
    o.indent = std::string(static_cast<size_t>(std::clamp<int64_t>(a[1].as_int(), 0, 4096)), ' ');
  } else if (a[1].is_string()) {
    o.indent = a[1].as_string();
  } else if (!a[1].is_none()) {
    fail_type("tojson indent must be None, an int or a string");
  }
  if (o.indent) o.item_separator = ",";
  if (!a[2].is_none()) {
    if (!a[2].is_list() || a[2].as_list().size() != 2 || !a[2].as_list()[0].is_string() ||
        !a[2].as_list()[1].is_string()) {
      fail_type("tojson separators must be a pair of strings");
    }
    o.item_separator = a[2].as_list()[0].as_string();
    o.key_separator = a[2].as_list()[1].as_string();
  }
  o.sort_keys = a[3].truthy();
  o.max_bytes = r.options().max_output_bytes;
  // JSON escaping moves bytes around: marked input marks the whole document.
  return derived_string(json_dumps(v, o), has_user_data(v));
}

// Jinja2's attr(): attribute lookup only (never items), sandboxed.
Value f_attr(Renderer&, const Value& v, CallArgs& args) {
  auto a = bind_args(args, {"name"}, "attr");
  if (v.is_undefined()) fail_undefined(v);
  const std::string name = py_str(a[0]);
  if (v.is_object()) return v.as_object()->get_attr(name);
  if (auto m = find_method(v, name)) return *m;
  return Value::undefined("'" + v.type_name() + " object' has no attribute '" + name + "'");
}

struct FilterEntry {
  std::string_view name;
  FilterFn fn;
};

constexpr FilterEntry kFilters[] = {
    {"abs", f_abs},
    {"attr", f_attr},
    {"capitalize", f_capitalize},
    {"center", f_center},
    {"d", f_default},
    {"default", f_default},
    {"e", f_escape},
    {"escape", f_escape},
    {"float", f_float},
    {"forceescape", f_forceescape},
    {"format", f_format},
    {"indent", f_indent},
    {"int", f_int},
    {"lower", f_lower},
    {"replace", f_replace},
    {"round", f_round},
    {"safe", f_safe},
    {"string", f_string},
    {"title", f_title},
    {"tojson", f_tojson},
    {"trim", f_trim},
    {"upper", f_upper},
    {"wordcount", f_wordcount},
};

// Jinja2 filters outside the subset.
constexpr std::string_view kUnsupportedFilters[] = {"filesizeformat", "groupby",   "pprint",   "random",
                                                    "slice",          "striptags", "truncate", "urlencode",
                                                    "urlize",         "wordwrap",  "xmlattr"};

}  // namespace

FilterFn find_filter(std::string_view name) {
  for (const FilterEntry& f : kFilters) {
    if (f.name == name) return f.fn;
  }
  return find_sequence_filter(name);
}

Support filter_support(std::string_view name) {
  if (find_filter(name) != nullptr) return Support::Supported;
  for (std::string_view u : kUnsupportedFilters) {
    if (u == name) return Support::Unsupported;
  }
  return Support::Unknown;
}

}  // namespace cellserve::engine::chat
