#include "engine/chat/py_format.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <optional>
#include <vector>

#include "engine/chat/call_args.h"
#include "engine/chat/error.h"
#include "engine/chat/utf8.h"

namespace cellserve::engine::chat {

std::string float_repr(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d < 0 ? "-inf" : "inf";
  // Shortest round-trip digits, then Python's layout: fixed for decimal exponents in [-4, 16),
  // scientific (at least two exponent digits) otherwise.
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof buf, d, std::chars_format::scientific);
  std::string sci(buf, res.ptr);
  std::string out;
  size_t i = 0;
  if (sci[0] == '-') {
    out += '-';
    i = 1;
  }
  const size_t e_pos = sci.find('e');
  std::string digits;
  for (size_t k = i; k < e_pos; ++k) {
    if (sci[k] != '.') digits += sci[k];
  }
  const int exp = std::stoi(sci.substr(e_pos + 1));
  if (exp >= -4 && exp < 16) {
    if (exp >= 0) {
      const auto int_len = static_cast<size_t>(exp) + 1;
      if (digits.size() <= int_len) {
        out += digits + std::string(int_len - digits.size(), '0') + ".0";
      } else {
        out += digits.substr(0, int_len) + "." + digits.substr(int_len);
      }
    } else {
      out += "0." + std::string(static_cast<size_t>(-exp - 1), '0') + digits;
    }
    return out;
  }
  out += digits.substr(0, 1);
  if (digits.size() > 1) out += "." + digits.substr(1);
  char exp_buf[16];
  std::snprintf(exp_buf, sizeof exp_buf, "e%c%02d", exp < 0 ? '-' : '+', exp < 0 ? -exp : exp);
  return out + exp_buf;
}

namespace {

bool is_printable(char32_t cp) {
  // Python's str.isprintable() for the characters a prompt may hold; unassigned code points are
  // not distinguished (they print as themselves).
  if (cp < 0x20 || cp == 0x7F) return false;
  if (cp >= 0x80 && cp <= 0xA0) return false;
  if (cp == 0xAD || cp == 0x1680 || cp == 0x061C || cp == 0x180E || cp == 0x3000 || cp == 0xFEFF) return false;
  if (cp >= 0x600 && cp <= 0x605) return false;
  if ((cp >= 0x2000 && cp <= 0x200F) || (cp >= 0x2028 && cp <= 0x202F) || (cp >= 0x205F && cp <= 0x206F)) return false;
  if ((cp >= 0xD800 && cp <= 0xF8FF) || (cp >= 0xFFF9 && cp <= 0xFFFB) || cp == 0xFFFE || cp == 0xFFFF) return false;
  if (cp >= 0xE0000) return false;
  return true;
}

}  // namespace

std::string string_repr(std::string_view s) {
  const bool has_single = s.find('\'') != std::string_view::npos;
  const bool has_double = s.find('"') != std::string_view::npos;
  const char quote = has_single && !has_double ? '"' : '\'';
  std::string out(1, quote);
  size_t pos = 0;
  while (pos < s.size()) {
    const size_t start = pos;
    const char32_t cp = utf8_decode(s, &pos);
    char buf[16];
    if (cp == static_cast<char32_t>(quote) || cp == '\\') {
      out += '\\';
      out += static_cast<char>(cp);
    } else if (cp == '\t') {
      out += "\\t";
    } else if (cp == '\n') {
      out += "\\n";
    } else if (cp == '\r') {
      out += "\\r";
    } else if (cp >= 0x80 && pos - start == 1) {
      std::snprintf(buf, sizeof buf, "\\x%02x", static_cast<unsigned>(cp));  // invalid byte
      out += buf;
    } else if (is_printable(cp)) {
      out.append(s.substr(start, pos - start));
    } else {
      if (cp <= 0xFF)
        std::snprintf(buf, sizeof buf, "\\x%02x", static_cast<unsigned>(cp));
      else if (cp <= 0xFFFF)
        std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(cp));
      else
        std::snprintf(buf, sizeof buf, "\\U%08x", static_cast<unsigned>(cp));
      out += buf;
    }
  }
  out += quote;
  return out;
}

std::string py_repr(const Value& v, int depth) {
  using Kind = Value::Kind;
  if (depth > kMaxValueDepth) fail(ErrorKind::Limit, "value nested too deeply to print");
  switch (v.kind()) {
    case Kind::Undefined:
      return "Undefined";
    case Kind::String:
      return v.is_markup() ? "Markup(" + string_repr(v.as_string()) + ")" : string_repr(v.as_string());
    case Kind::List: {
      const ValueList& items = v.as_list();
      std::string out = v.is_tuple() ? "(" : "[";
      for (size_t i = 0; i < items.size(); ++i) {
        if (i > 0) out += ", ";
        out += py_repr(items[i], depth + 1);
      }
      if (v.is_tuple() && items.size() == 1) out += ",";
      return out + (v.is_tuple() ? ")" : "]");
    }
    case Kind::Dict: {
      std::string out = "{";
      bool first = true;
      for (const auto& [key, value] : v.as_dict().entries()) {
        if (!first) out += ", ";
        first = false;
        out += py_repr(key, depth + 1) + ": " + py_repr(value, depth + 1);
      }
      return out + "}";
    }
    case Kind::Callable: {
      const Callable& fn = v.as_callable();
      return fn.macro != nullptr ? "<Macro '" + fn.name + "'>" : "<built-in function " + fn.name + ">";
    }
    case Kind::Object:
      return v.as_object()->repr(depth + 1);
    default:
      return py_str(v);
  }
}

std::string py_str(const Value& v) {
  using Kind = Value::Kind;
  switch (v.kind()) {
    case Kind::Undefined:
      return "";
    case Kind::None:
      return "None";
    case Kind::Bool:
      return v.as_bool() ? "True" : "False";
    case Kind::Int:
      return std::to_string(v.as_int());
    case Kind::Float:
      return float_repr(v.as_float());
    case Kind::String:
      return v.as_string();
    default:
      return py_repr(v);
  }
}

std::string html_escape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&#34;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

namespace {

// One conversion's options, shared by `%` formatting and str.format().
struct Spec {
  char fill = ' ';
  char align = 0;  // '<', '>', '^', '=' or 0 for the type's default
  char sign = '-';
  bool alternate = false;
  bool zero = false;
  int width = 0;
  bool grouping = false;
  int precision = -1;
  char type = 0;
};

std::string pad(std::string body, const Spec& spec, bool numeric) {
  const auto len = static_cast<int>(utf8_length(body));
  if (len >= spec.width) return body;
  const auto gap = static_cast<size_t>(spec.width - len);
  char align = spec.align != 0 ? spec.align : (numeric ? '>' : '<');
  char fill = spec.fill;
  if (spec.zero && spec.align == 0 && numeric) {
    align = '=';
    fill = '0';
  }
  if (align == '<') return body + std::string(gap, fill);
  if (align == '^') return std::string(gap / 2, fill) + body + std::string(gap - gap / 2, fill);
  if (align == '=' && !body.empty() && (body[0] == '-' || body[0] == '+' || body[0] == ' ')) {
    return body.substr(0, 1) + std::string(gap, fill) + body.substr(1);
  }
  return std::string(gap, fill) + body;
}

std::string group_thousands(const std::string& digits) {
  const size_t dot = digits.find_first_of(".eE");
  const std::string int_part = digits.substr(0, dot);
  std::string out;
  for (size_t i = 0; i < int_part.size(); ++i) {
    if (i > 0 && (int_part.size() - i) % 3 == 0) out += ',';
    out += int_part[i];
  }
  return out + (dot == std::string::npos ? "" : digits.substr(dot));
}

std::string format_number(const Value& v, Spec spec) {
  char type = spec.type;
  const bool is_float = v.is_float();
  std::string body;
  bool negative = false;
  if (type == 'c') {
    if (!v.is_integral()) fail_type("%c requires int");
    std::string s;
    utf8_append(s, static_cast<char32_t>(v.as_int()));
    return pad(s, spec, false);
  }
  if (type == 'd' || type == 'i' || type == 'n' || type == 'x' || type == 'X' || type == 'o' || type == 'b') {
    if (is_float && type != 'd' && type != 'i')
      fail_type(std::string("format code '") + type + "' requires an integer");
    const int64_t i = is_float ? static_cast<int64_t>(std::trunc(v.as_float())) : v.as_int();
    negative = i < 0;
    const uint64_t mag = negative ? 0 - static_cast<uint64_t>(i) : static_cast<uint64_t>(i);
    char buf[80];
    if (type == 'x' || type == 'X' || type == 'o') {
      std::snprintf(buf, sizeof buf,
                    type == 'x'   ? "%llx"
                    : type == 'X' ? "%llX"
                                  : "%llo",
                    static_cast<unsigned long long>(mag));
      body = buf;
      if (spec.alternate) body = (type == 'o' ? "0o" : type == 'x' ? "0x" : "0X") + body;
    } else if (type == 'b') {
      for (uint64_t m = mag; m > 0; m >>= 1) body.insert(body.begin(), static_cast<char>('0' + (m & 1)));
      if (body.empty()) body = "0";
      if (spec.alternate) body = "0b" + body;
    } else {
      body = std::to_string(mag);
      if (spec.grouping) body = group_thousands(body);
    }
  } else {
    double d = v.as_float();
    negative = std::signbit(d) && !std::isnan(d);
    d = std::fabs(d);
    bool percent = false;
    if (type == '%') {
      percent = true;
      d *= 100;
      type = 'f';
    }
    const bool repr_style = type == 0 && spec.precision < 0;
    if (repr_style) {
      body = float_repr(d);
    } else {
      const int precision = spec.precision < 0 ? 6 : spec.precision;
      const char conv = type == 0 ? 'g' : type;
      if (std::isinf(d) || std::isnan(d)) {
        body = std::isnan(d) ? "nan" : "inf";
        if (conv == 'F' || conv == 'E' || conv == 'G') body = std::isnan(d) ? "NAN" : "INF";
      } else {
        const std::string fmt = std::string("%") + (spec.alternate ? "#" : "") + ".*" + conv;
        std::vector<char> buf(static_cast<size_t>(precision) + 400);
        std::snprintf(buf.data(), buf.size(), fmt.c_str(), precision, d);
        body = buf.data();
        if (type == 0 && body.find_first_of(".eEn") == std::string::npos) body += ".0";
      }
    }
    if (spec.grouping) body = group_thousands(body);
    if (percent) body += '%';
  }
  std::string sign;
  if (negative)
    sign = "-";
  else if (spec.sign == '+')
    sign = "+";
  else if (spec.sign == ' ')
    sign = " ";
  return pad(sign + body, spec, true);
}

std::string format_value(const Value& v, const Spec& spec) {
  if (v.is_undefined() && spec.type != 's' && spec.type != 'r' && spec.type != 0) fail_undefined(v);
  if (spec.type == 'r') return pad(py_repr(v), spec, false);
  if (spec.type == 's' || (spec.type == 0 && !v.is_number())) {
    std::string s = py_str(v);
    if (spec.precision >= 0) {
      const auto chars = utf8_chars(s);
      if (chars.size() > static_cast<size_t>(spec.precision)) {
        std::string cut;
        for (size_t j = 0; j < static_cast<size_t>(spec.precision); ++j) cut.append(chars[j]);
        s = std::move(cut);
      }
    }
    return pad(std::move(s), spec, false);
  }
  if (spec.type == 0 && v.is_bool()) return pad(py_str(v), spec, false);
  if (!v.is_number()) fail_type("a number is required, not " + v.type_name());
  Spec s = spec;
  if (s.type == 0 && v.is_integral()) s.type = 'd';
  return format_number(v, s);
}

int parse_int(std::string_view f, size_t* i) {
  int n = 0;
  while (*i < f.size() && f[*i] >= '0' && f[*i] <= '9') {
    if (n > 100000) fail_type("format width or precision too large");
    n = n * 10 + (f[*i] - '0');
    ++*i;
  }
  return n;
}

}  // namespace

std::string percent_format(std::string_view format, const Value& args) {
  const bool is_tuple = args.is_tuple();
  const bool is_mapping = args.is_dict();
  size_t next_arg = 0;
  auto take = [&]() -> Value {
    if (!is_tuple) {
      if (next_arg++ > 0) fail_type("not enough arguments for format string");
      return args;
    }
    if (next_arg >= args.as_list().size()) fail_type("not enough arguments for format string");
    return args.as_list()[next_arg++];
  };
  std::string out;
  size_t i = 0;
  while (i < format.size()) {
    const char c = format[i++];
    if (c != '%') {
      out += c;
      continue;
    }
    if (i >= format.size()) fail_type("incomplete format");
    if (format[i] == '%') {
      out += '%';
      ++i;
      continue;
    }
    std::optional<Value> arg;
    if (format[i] == '(') {
      const size_t close = format.find(')', i);
      if (close == std::string_view::npos) fail_type("incomplete format key");
      if (!is_mapping) fail_type("format requires a mapping");
      const Value* found = args.as_dict().find(format.substr(i + 1, close - i - 1));
      if (found == nullptr)
        fail_type("format key '" + std::string(format.substr(i + 1, close - i - 1)) + "' not found");
      arg = *found;
      i = close + 1;
    }
    Spec spec;
    for (; i < format.size() && std::string_view("-+ #0").find(format[i]) != std::string_view::npos; ++i) {
      if (format[i] == '-')
        spec.align = '<';
      else if (format[i] == '+' || format[i] == ' ')
        spec.sign = spec.sign == '+' ? '+' : format[i];
      else if (format[i] == '#')
        spec.alternate = true;
      else
        spec.zero = true;
    }
    if (i < format.size() && format[i] == '*')
      fail(ErrorKind::Unsupported, "'*' width in % formatting is not supported");
    spec.width = parse_int(format, &i);
    if (i < format.size() && format[i] == '.') {
      ++i;
      spec.precision = parse_int(format, &i);
    }
    while (i < format.size() && (format[i] == 'l' || format[i] == 'h' || format[i] == 'L')) ++i;
    if (i >= format.size()) fail_type("incomplete format");
    spec.type = format[i++];
    if (std::string_view("sdirxXoeEfFgGc").find(spec.type) == std::string_view::npos) {
      fail_type(std::string("unsupported format character '") + spec.type + "'");
    }
    if (spec.type == 'i') spec.type = 'd';
    // printf alignment: right unless '-'; '0' pads numbers after the sign.
    if (spec.align == 0) {
      const bool numeric = spec.type != 's' && spec.type != 'r' && spec.type != 'c';
      spec.align = spec.zero && numeric ? '=' : '>';
      if (spec.zero && numeric) spec.fill = '0';
    }
    spec.zero = false;
    const Value value = arg ? *arg : take();
    if (spec.type == 's' || spec.type == 'r')
      out += format_value(value, spec);
    else if (value.is_undefined())
      fail_undefined(value);
    else if (!value.is_number())
      fail_type(std::string("%") + spec.type + " format: a real number is required, not " + value.type_name());
    else
      out += format_number(value, spec);
  }
  // Python: an argument that is not a tuple counts as one; lists and dicts (mappings) are exempt.
  const size_t n_args = is_tuple ? args.as_list().size() : 1;
  // (Jinja2's Undefined has __getitem__, so Python treats it as a mapping here too.)
  const bool mapping_like = is_mapping || (args.is_list() && !is_tuple) || args.is_undefined();
  if (next_arg < n_args && !mapping_like) fail_type("not all arguments converted during string formatting");
  return out;
}

std::string str_format(std::string_view format, const CallArgs& args) {
  std::string out;
  size_t auto_index = 0;
  size_t i = 0;
  while (i < format.size()) {
    const char c = format[i++];
    if (c == '}') {
      if (i < format.size() && format[i] == '}')
        ++i;
      else
        fail_type("Single '}' encountered in format string");
      out += '}';
      continue;
    }
    if (c != '{') {
      out += c;
      continue;
    }
    if (i < format.size() && format[i] == '{') {
      out += '{';
      ++i;
      continue;
    }
    const size_t close = format.find('}', i);
    if (close == std::string_view::npos) fail_type("Single '{' encountered in format string");
    std::string_view field = format.substr(i, close - i);
    i = close + 1;
    std::string_view spec_text;
    if (const size_t colon = field.find(':'); colon != std::string_view::npos) {
      spec_text = field.substr(colon + 1);
      field = field.substr(0, colon);
    }
    char conversion = 0;
    if (const size_t bang = field.find('!'); bang != std::string_view::npos) {
      conversion = bang + 1 < field.size() ? field[bang + 1] : 0;
      field = field.substr(0, bang);
    }
    if (field.find_first_of(".[") != std::string_view::npos) {
      fail(ErrorKind::Unsupported, "attribute or index lookups in str.format fields are not supported");
    }
    Value value;
    if (field.empty() || (field[0] >= '0' && field[0] <= '9')) {
      size_t k = 0;
      const size_t index = field.empty() ? auto_index++ : static_cast<size_t>(parse_int(field, &k));
      if (index >= args.positional.size()) fail_type("Replacement index " + std::to_string(index) + " out of range");
      value = args.positional[index];
    } else {
      const Value* found = args.keyword_arg(field);
      if (found == nullptr) fail_type("format key '" + std::string(field) + "' not found");
      value = *found;
    }
    Spec spec;
    size_t k = 0;
    auto is_align = [](char a) { return a == '<' || a == '>' || a == '^' || a == '='; };
    if (spec_text.size() >= 2 && is_align(spec_text[1])) {
      spec.fill = spec_text[0];
      spec.align = spec_text[1];
      k = 2;
    } else if (!spec_text.empty() && is_align(spec_text[0])) {
      spec.align = spec_text[0];
      k = 1;
    }
    if (k < spec_text.size() && (spec_text[k] == '+' || spec_text[k] == '-' || spec_text[k] == ' '))
      spec.sign = spec_text[k++];
    if (k < spec_text.size() && spec_text[k] == '#') spec.alternate = true, ++k;
    if (k < spec_text.size() && spec_text[k] == '0') spec.zero = true, ++k;
    spec.width = parse_int(spec_text, &k);
    if (k < spec_text.size() && spec_text[k] == ',') spec.grouping = true, ++k;
    if (k < spec_text.size() && spec_text[k] == '.') {
      ++k;
      spec.precision = parse_int(spec_text, &k);
    }
    if (k < spec_text.size()) spec.type = spec_text[k++];
    if (k != spec_text.size()) fail_type("Invalid format specifier '" + std::string(spec_text) + "'");
    if (conversion == 'r')
      value = Value::string(py_repr(value));
    else if (conversion == 's')
      value = Value::string(py_str(value));
    else if (conversion != 0)
      fail_type(std::string("Unknown conversion specifier ") + conversion);
    if (value.is_none() && !spec_text.empty()) fail_type("unsupported format string passed to NoneType.__format__");
    out += format_value(value, spec);
  }
  return out;
}

}  // namespace cellserve::engine::chat
