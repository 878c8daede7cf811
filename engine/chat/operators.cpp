#include "engine/chat/operators.h"

#include <cmath>
#include <limits>
#include <string>

#include "engine/chat/error.h"
#include "engine/chat/py_format.h"
#include "engine/chat/user_data.h"
#include "engine/chat/utf8.h"

namespace cellserve::engine::chat {
namespace {

const char* op_symbol(BinaryOp op) {
  switch (op) {
    case BinaryOp::Add:
      return "+";
    case BinaryOp::Sub:
      return "-";
    case BinaryOp::Mul:
      return "*";
    case BinaryOp::Div:
      return "/";
    case BinaryOp::FloorDiv:
      return "//";
    case BinaryOp::Mod:
      return "%";
    case BinaryOp::Pow:
      return "** or pow()";
  }
  return "?";
}

[[noreturn]] void unsupported_operands(BinaryOp op, const Value& a, const Value& b) {
  fail_type(std::string("unsupported operand type(s) for ") + op_symbol(op) + ": '" + a.type_name() + "' and '" +
            b.type_name() + "'");
}

constexpr size_t kMaxIteratedChars = size_t{1} << 20;

// Lists may hold at most one item per 16 bytes of the output limit (a million items by default).
size_t max_list_items(size_t max_bytes) { return max_bytes / 16; }

[[noreturn]] void overflow() { fail(ErrorKind::Type, "integer overflow (cellserve's integers are 64-bit)"); }

// Applies a __builtin_*_overflow operation and fails on overflow.
template <typename Op>
int64_t checked(Op op, int64_t a, int64_t b) {
  int64_t r = 0;
  if (op(a, b, &r)) overflow();
  return r;
}
bool add_op(int64_t a, int64_t b, int64_t* r) { return __builtin_add_overflow(a, b, r); }
bool sub_op(int64_t a, int64_t b, int64_t* r) { return __builtin_sub_overflow(a, b, r); }
bool mul_op(int64_t a, int64_t b, int64_t* r) { return __builtin_mul_overflow(a, b, r); }

Value repeat(const Value& seq, int64_t times, size_t max_bytes) {
  const int64_t n = times < 0 ? 0 : times;
  if (seq.is_string()) {
    const std::string& s = seq.as_string();
    if (!s.empty() && static_cast<uint64_t>(n) > max_bytes / s.size())
      fail(ErrorKind::Limit, "string repetition exceeds the output size limit");
    MarkedText out;
    out.text.reserve(s.size() * static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) out.append(s, seq.user_spans());
    return Value::string(std::move(out), seq.is_markup());
  }
  const ValueList& items = seq.as_list();
  if (!items.empty() && static_cast<uint64_t>(n) > max_list_items(max_bytes) / items.size()) {
    fail(ErrorKind::Limit, "list repetition exceeds the size limit");
  }
  ValueList out;
  for (int64_t i = 0; i < n; ++i) out.insert(out.end(), items.begin(), items.end());
  return seq.is_tuple() ? Value::tuple(std::move(out)) : Value::list(std::move(out));
}

Value add(const Value& a, const Value& b, size_t max_bytes) {
  if (a.is_number() && b.is_number()) {
    if (a.is_float() || b.is_float()) return Value::floating(a.as_float() + b.as_float());
    return Value::integer(checked(add_op, a.as_int(), b.as_int()));
  }
  if (a.is_string() && b.is_string()) {
    // Markup + str escapes the str (and str + Markup likewise), as markupsafe does.
    const bool markup = a.is_markup() || b.is_markup();
    const Value left = markup && !a.is_markup() ? map_chars(a, html_escape, true) : a;
    const Value right = markup && !b.is_markup() ? map_chars(b, html_escape, true) : b;
    if (left.as_string().size() + right.as_string().size() > max_bytes)
      fail(ErrorKind::Limit, "string exceeds the output size limit");
    MarkedText out = marked_text(left);
    out.append(right.as_string(), right.user_spans());
    return Value::string(std::move(out), markup);
  }
  if (a.is_list() && b.is_list() && a.is_tuple() == b.is_tuple()) {
    if (a.as_list().size() + b.as_list().size() > max_list_items(max_bytes))
      fail(ErrorKind::Limit, "list exceeds the size limit");
    ValueList out = a.as_list();
    out.insert(out.end(), b.as_list().begin(), b.as_list().end());
    return a.is_tuple() ? Value::tuple(std::move(out)) : Value::list(std::move(out));
  }
  if (a.is_string() && !a.is_markup()) fail_type("can only concatenate str (not \"" + b.type_name() + "\") to str");
  if (a.is_list())
    fail_type("can only concatenate " + a.type_name() + " (not \"" + b.type_name() + "\") to " + a.type_name());
  unsupported_operands(BinaryOp::Add, a, b);
}

// Python's float floor division and modulo (divmod semantics).
std::pair<double, double> float_divmod(double vx, double wx) {
  double mod = std::fmod(vx, wx);
  double div = (vx - mod) / wx;
  if (mod != 0) {
    if ((wx < 0) != (mod < 0)) {
      mod += wx;
      div -= 1.0;
    }
  } else {
    mod = std::copysign(0.0, wx);
  }
  double floordiv = 0;
  if (div != 0) {
    floordiv = std::floor(div);
    if (div - floordiv > 0.5) floordiv += 1.0;
  } else {
    floordiv = std::copysign(0.0, vx / wx);
  }
  return {floordiv, mod};
}

Value int_pow(int64_t base, int64_t exp) {
  int64_t result = 1;
  while (exp > 0) {
    if (exp & 1) result = checked(mul_op, result, base);
    exp >>= 1;
    if (exp > 0) base = checked(mul_op, base, base);
  }
  return Value::integer(result);
}

Value arithmetic(BinaryOp op, const Value& a, const Value& b) {
  if (!a.is_number() || !b.is_number()) unsupported_operands(op, a, b);
  const bool ints = !a.is_float() && !b.is_float();
  const double x = a.as_float();
  const double y = b.as_float();
  switch (op) {
    case BinaryOp::Sub:
      if (ints) return Value::integer(checked(sub_op, a.as_int(), b.as_int()));
      return Value::floating(x - y);
    case BinaryOp::Mul:
      if (ints) return Value::integer(checked(mul_op, a.as_int(), b.as_int()));
      return Value::floating(x * y);
    case BinaryOp::Div:
      if (y == 0) fail_type(ints ? "division by zero" : "float division by zero");
      return Value::floating(x / y);
    case BinaryOp::FloorDiv:
    case BinaryOp::Mod: {
      if (ints) {
        const int64_t i = a.as_int();
        const int64_t j = b.as_int();
        if (j == 0) fail_type("integer division or modulo by zero");
        if (i == std::numeric_limits<int64_t>::min() && j == -1) {
          if (op == BinaryOp::Mod) return Value::integer(0);
          overflow();
        }
        int64_t q = i / j;
        int64_t m = i % j;
        if (m != 0 && ((m < 0) != (j < 0))) {
          m += j;
          q -= 1;
        }
        return Value::integer(op == BinaryOp::FloorDiv ? q : m);
      }
      if (y == 0) fail_type(op == BinaryOp::FloorDiv ? "float floor division by zero" : "float modulo");
      const auto [q, m] = float_divmod(x, y);
      return Value::floating(op == BinaryOp::FloorDiv ? q : m);
    }
    case BinaryOp::Pow: {
      if (ints && b.as_int() >= 0) return int_pow(a.as_int(), b.as_int());
      if (x == 0 && y < 0) fail_type("0.0 cannot be raised to a negative power");
      if (x < 0 && y != std::floor(y)) fail_type("negative number raised to a fractional power (complex result)");
      const double r = std::pow(x, y);
      if (std::isinf(r) && std::isfinite(x) && std::isfinite(y)) fail_type("(34, 'Numerical result out of range')");
      return Value::floating(r);
    }
    default:
      break;
  }
  unsupported_operands(op, a, b);
}

// -1, 0 or 1 for orderable values; NaN compares as unordered (returns 2).
int order(const Value& a, const Value& b, int depth) {
  if (depth > kMaxValueDepth) fail(ErrorKind::Limit, "values nested too deeply to compare");
  if (a.is_number() && b.is_number()) {
    if (!a.is_float() && !b.is_float()) return a.as_int() < b.as_int() ? -1 : a.as_int() > b.as_int() ? 1 : 0;
    const double x = a.as_float();
    const double y = b.as_float();
    if (x < y) return -1;
    if (x > y) return 1;
    return x == y ? 0 : 2;
  }
  if (a.is_string() && b.is_string()) {
    const int c = a.as_string().compare(b.as_string());  // byte order is code point order in UTF-8
    return c < 0 ? -1 : c > 0 ? 1 : 0;
  }
  if (a.is_list() && b.is_list() && a.is_tuple() == b.is_tuple()) {
    const ValueList& x = a.as_list();
    const ValueList& y = b.as_list();
    for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
      if (!py_equal(x[i], y[i], depth + 1)) return order(x[i], y[i], depth + 1);
    }
    return x.size() < y.size() ? -1 : x.size() > y.size() ? 1 : 0;
  }
  return 3;  // not orderable
}

}  // namespace

Value binary_op(BinaryOp op, const Value& a, const Value& b, size_t max_bytes) {
  if (a.is_undefined()) fail_undefined(a);
  if (op == BinaryOp::Mod && a.is_string()) {
    // str % args: an undefined argument formats as "" (and is only used if the format needs it).
    std::string out = percent_format(a.as_string(), b);
    if (out.size() > max_bytes) fail(ErrorKind::Limit, "string exceeds the output size limit");
    return derived_string(std::move(out), has_user_data(a) || has_user_data(b));
  }
  if (b.is_undefined()) fail_undefined(b);
  switch (op) {
    case BinaryOp::Add:
      return add(a, b, max_bytes);
    case BinaryOp::Mul:
      if ((a.is_string() || a.is_list()) && b.is_integral()) return repeat(a, b.as_int(), max_bytes);
      if (a.is_integral() && (b.is_string() || b.is_list())) return repeat(b, a.as_int(), max_bytes);
      return arithmetic(op, a, b);
    default:
      return arithmetic(op, a, b);
  }
}

Value negate(const Value& v) {
  if (v.is_undefined()) fail_undefined(v);
  if (v.is_float()) return Value::floating(-v.as_float());
  if (!v.is_integral()) fail_type("bad operand type for unary -: '" + v.type_name() + "'");
  if (v.as_int() == std::numeric_limits<int64_t>::min()) overflow();
  return Value::integer(-v.as_int());
}

Value unary_plus(const Value& v) {
  if (v.is_undefined()) fail_undefined(v);
  if (!v.is_number()) fail_type("bad operand type for unary +: '" + v.type_name() + "'");
  return v.is_bool() ? Value::integer(v.as_int()) : v;
}

bool py_less(const Value& a, const Value& b) { return compare(CompareOp::Lt, a, b); }

bool compare(CompareOp op, const Value& a, const Value& b) {
  switch (op) {
    case CompareOp::Eq:
      return py_equal(a, b);
    case CompareOp::Ne:
      return !py_equal(a, b);
    case CompareOp::In:
      return py_contains(b, a);
    case CompareOp::NotIn:
      return !py_contains(b, a);
    default:
      break;
  }
  if (a.is_undefined()) fail_undefined(a);
  if (b.is_undefined()) fail_undefined(b);
  const int c = order(a, b, 0);
  const char* symbol = op == CompareOp::Lt ? "<" : op == CompareOp::Le ? "<=" : op == CompareOp::Gt ? ">" : ">=";
  if (c == 3) {
    fail_type(std::string("'") + symbol + "' not supported between instances of '" + a.type_name() + "' and '" +
              b.type_name() + "'");
  }
  if (c == 2) return false;  // NaN
  switch (op) {
    case CompareOp::Lt:
      return c < 0;
    case CompareOp::Le:
      return c <= 0;
    case CompareOp::Gt:
      return c > 0;
    default:
      return c >= 0;
  }
}

bool py_contains(const Value& container, const Value& item) {
  switch (container.kind()) {
    case Value::Kind::Undefined:
      return false;
    case Value::Kind::String:
      if (!item.is_string()) fail_type("'in <string>' requires string as left operand, not " + item.type_name());
      return container.as_string().find(item.as_string()) != std::string::npos;
    case Value::Kind::List:
      for (const Value& v : container.as_list()) {
        if (py_equal(v, item)) return true;
      }
      return false;
    case Value::Kind::Dict:
      if (!item.is_hashable()) fail_type("unhashable type: '" + item.type_name() + "'");
      return container.as_dict().find(item) != nullptr;
    default:
      fail_type("argument of type '" + container.type_name() + "' is not iterable");
  }
}

ValueList iterate(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::Undefined:
      return {};
    case Value::Kind::List:
      return v.as_list();
    case Value::Kind::Dict: {
      ValueList keys;
      keys.reserve(v.as_dict().size());
      for (const auto& entry : v.as_dict().entries()) keys.push_back(entry.first);
      return keys;
    }
    case Value::Kind::String: {
      // One Value per character: refuse strings whose characters would take gigabytes.
      if (v.as_string().size() > kMaxIteratedChars) fail(ErrorKind::Limit, "string too long to iterate over");
      ValueList chars;
      const char* base = v.as_string().data();
      for (std::string_view c : utf8_chars(v.as_string()))
        chars.push_back(substring(v, static_cast<size_t>(c.data() - base), c.size(), false));
      return chars;
    }
    default:
      fail_type("'" + v.type_name() + "' object is not iterable");
  }
}

Value slice_value(const Value& v, std::optional<int64_t> start, std::optional<int64_t> stop,
                  std::optional<int64_t> step) {
  if (v.is_undefined()) fail_undefined(v);
  const int64_t st = step.value_or(1);
  if (st == 0) fail_type("slice step cannot be zero");
  std::vector<std::string_view> chars;
  int64_t length = 0;
  if (v.is_string()) {
    chars = utf8_chars(v.as_string());
    length = static_cast<int64_t>(chars.size());
  } else if (v.is_list()) {
    length = static_cast<int64_t>(v.as_list().size());
  } else {
    fail_type("'" + v.type_name() + "' object is not subscriptable");
  }
  auto adjust = [&](std::optional<int64_t> index, bool is_start) {
    if (!index) return st < 0 ? (is_start ? length - 1 : -1) : (is_start ? 0 : length);
    int64_t i = *index;
    if (i < 0) {
      i += length;
      if (i < 0) i = st < 0 ? -1 : 0;
    } else if (i >= length) {
      i = st < 0 ? length - 1 : length;
    }
    return i;
  };
  const int64_t first = adjust(start, true);
  const int64_t last = adjust(stop, false);
  MarkedText text;
  ValueList items;
  for (int64_t i = first; st > 0 ? i < last : i > last;) {
    if (v.is_string()) {
      const std::string_view c = chars[static_cast<size_t>(i)];
      const size_t at = static_cast<size_t>(c.data() - v.as_string().data());
      text.append(c, sub_spans(v.user_spans(), at, at + c.size()));
    } else {
      items.push_back(v.as_list()[static_cast<size_t>(i)]);
    }
    if (__builtin_add_overflow(i, st, &i)) break;
  }
  if (v.is_string()) return Value::string(std::move(text), v.is_markup());
  return v.is_tuple() ? Value::tuple(std::move(items)) : Value::list(std::move(items));
}

int64_t py_len(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::Undefined:
      return 0;
    case Value::Kind::String:
      return static_cast<int64_t>(utf8_length(v.as_string()));
    case Value::Kind::List:
      return static_cast<int64_t>(v.as_list().size());
    case Value::Kind::Dict:
      return static_cast<int64_t>(v.as_dict().size());
    default:
      fail_type("object of type '" + v.type_name() + "' has no len()");
  }
}

}  // namespace cellserve::engine::chat
