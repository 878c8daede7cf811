#include "engine/chat/jinja_tests.h"

#include <cmath>

#include "engine/chat/filters.h"
#include "engine/chat/operators.h"
#include "engine/chat/py_format.h"
#include "engine/chat/utf8.h"

namespace cellserve::engine::chat {
namespace {

bool no_args(CallArgs& args, const char* name) {
  bind_args(args, {}, name);
  return true;
}

bool t_defined(Renderer&, const Value& v, CallArgs& a) { return no_args(a, "defined") && !v.is_undefined(); }
bool t_undefined(Renderer&, const Value& v, CallArgs& a) { return no_args(a, "undefined") && v.is_undefined(); }
bool t_none(Renderer&, const Value& v, CallArgs& a) { return no_args(a, "none") && v.is_none(); }
bool t_boolean(Renderer&, const Value& v, CallArgs& a) { return no_args(a, "boolean") && v.is_bool(); }
bool t_true(Renderer&, const Value& v, CallArgs& a) { return no_args(a, "true") && v.is_bool() && v.as_bool(); }
bool t_false(Renderer&, const Value& v, CallArgs& a) { return no_args(a, "false") && v.is_bool() && !v.as_bool(); }
bool t_integer(Renderer&, const Value& v, CallArgs& a) { return no_args(a, "integer") && v.is_int(); }
bool t_float(Renderer&, const Value& v, CallArgs& a) { return no_args(a, "float") && v.is_float(); }
bool t_number(Renderer&, const Value& v, CallArgs& a) { return no_args(a, "number") && v.is_number(); }
bool t_string(Renderer&, const Value& v, CallArgs& a) { return no_args(a, "string") && v.is_string(); }
bool t_mapping(Renderer&, const Value& v, CallArgs& a) { return no_args(a, "mapping") && v.is_dict(); }
// Jinja2's Undefined defines __call__ (to fail), so Python's callable() is true for it.
bool t_callable(Renderer&, const Value& v, CallArgs& a) {
  return no_args(a, "callable") && (v.is_callable() || v.is_undefined());
}
bool t_escaped(Renderer&, const Value& v, CallArgs& a) { return no_args(a, "escaped") && v.is_markup(); }
// iter() works on strings, lists, tuples, dicts and (in Jinja2) undefined values.
bool t_iterable(Renderer&, const Value& v, CallArgs& a) {
  return no_args(a, "iterable") && (v.is_undefined() || v.is_string() || v.is_list() || v.is_dict());
}
// len() and __getitem__: strings, lists, tuples, dicts and undefined values.
bool t_sequence(Renderer&, const Value& v, CallArgs& a) {
  return no_args(a, "sequence") && (v.is_undefined() || v.is_string() || v.is_list() || v.is_dict());
}

Value mod2(const Value& v) {
  if (v.is_undefined()) fail_undefined(v);
  if (!v.is_number()) fail_type("unsupported operand type(s) for %: '" + v.type_name() + "' and 'int'");
  return binary_op(BinaryOp::Mod, v, Value::integer(2), 0);
}
// Jinja2: even is `value % 2 == 0`, odd is `value % 2 == 1` (so 0.5 is neither).
bool t_even(Renderer&, const Value& v, CallArgs& a) {
  return no_args(a, "even") && py_equal(mod2(v), Value::integer(0));
}
bool t_odd(Renderer&, const Value& v, CallArgs& a) { return no_args(a, "odd") && py_equal(mod2(v), Value::integer(1)); }
bool t_divisibleby(Renderer&, const Value& v, CallArgs& args) {
  auto a = bind_args(args, {"num"}, "divisibleby");
  if (!v.is_number()) fail_type("unsupported operand type(s) for %: '" + v.type_name() + "'");
  return !binary_op(BinaryOp::Mod, v, a[0], 0).truthy();
}

// Python's str.islower() / isupper(): some cased character, none of the other case.
bool case_test(const Value& v, bool upper) {
  const std::string s = py_str(v);
  bool any_cased = false;
  size_t pos = 0;
  while (pos < s.size()) {
    const char32_t cp = utf8_decode(s, &pos);
    if (upper ? is_lower_cp(cp) : is_upper_cp(cp)) return false;
    any_cased = any_cased || is_cased(cp);
  }
  return any_cased;
}
bool t_lower(Renderer&, const Value& v, CallArgs& a) { return no_args(a, "lower") && case_test(v, false); }
bool t_upper(Renderer&, const Value& v, CallArgs& a) { return no_args(a, "upper") && case_test(v, true); }

template <CompareOp Op>
bool t_compare(Renderer&, const Value& v, CallArgs& args) {
  auto a = bind_args(args, {"other"}, "compare");
  return compare(Op, v, a[0]);
}
bool t_in(Renderer&, const Value& v, CallArgs& args) {
  auto a = bind_args(args, {"seq"}, "in");
  return py_contains(a[0], v);
}
bool t_sameas(Renderer&, const Value& v, CallArgs& args) {
  auto a = bind_args(args, {"other"}, "sameas");
  return v.same_as(a[0]);
}
bool t_filter(Renderer&, const Value& v, CallArgs& a) {
  return no_args(a, "filter") && v.is_string() && filter_support(v.as_string()) == Support::Supported;
}
bool t_test(Renderer&, const Value& v, CallArgs& a) {
  return no_args(a, "test") && v.is_string() && test_support(v.as_string()) == Support::Supported;
}

struct TestEntry {
  std::string_view name;
  TestFn fn;
};

constexpr TestEntry kTests[] = {
    {"defined", t_defined},
    {"undefined", t_undefined},
    {"none", t_none},
    {"boolean", t_boolean},
    {"true", t_true},
    {"false", t_false},
    {"integer", t_integer},
    {"float", t_float},
    {"number", t_number},
    {"string", t_string},
    {"mapping", t_mapping},
    {"callable", t_callable},
    {"escaped", t_escaped},
    {"iterable", t_iterable},
    {"sequence", t_sequence},
    {"even", t_even},
    {"odd", t_odd},
    {"divisibleby", t_divisibleby},
    {"lower", t_lower},
    {"upper", t_upper},
    {"eq", t_compare<CompareOp::Eq>},
    {"equalto", t_compare<CompareOp::Eq>},
    {"==", t_compare<CompareOp::Eq>},
    {"ne", t_compare<CompareOp::Ne>},
    {"!=", t_compare<CompareOp::Ne>},
    {"lt", t_compare<CompareOp::Lt>},
    {"lessthan", t_compare<CompareOp::Lt>},
    {"<", t_compare<CompareOp::Lt>},
    {"le", t_compare<CompareOp::Le>},
    {"<=", t_compare<CompareOp::Le>},
    {"gt", t_compare<CompareOp::Gt>},
    {"greaterthan", t_compare<CompareOp::Gt>},
    {">", t_compare<CompareOp::Gt>},
    {"ge", t_compare<CompareOp::Ge>},
    {">=", t_compare<CompareOp::Ge>},
    {"in", t_in},
    {"sameas", t_sameas},
    {"filter", t_filter},
    {"test", t_test},
};

}  // namespace

TestFn find_test(std::string_view name) {
  for (const TestEntry& t : kTests) {
    if (t.name == name) return t.fn;
  }
  return nullptr;
}

Support test_support(std::string_view name) {
  return find_test(name) != nullptr ? Support::Supported : Support::Unknown;
}

}  // namespace cellserve::engine::chat
