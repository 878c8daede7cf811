// Expression evaluation.
#include "engine/chat/error.h"
#include "engine/chat/operators.h"
#include "engine/chat/py_format.h"
#include "engine/chat/renderer.h"
#include "engine/chat/user_data.h"

namespace cellserve::engine::chat {
namespace {

std::optional<int64_t> slice_index(const Value& v) {
  if (v.is_none()) return std::nullopt;
  if (v.is_undefined()) fail_undefined(v);
  if (!v.is_integral()) fail_type("slice indices must be integers or None or have an __index__ method");
  return v.as_int();
}

}  // namespace

Value Renderer::eval(const Expr& e) {
  EvalGuard guard(this);
  try {
    return eval_inner(e);
  } catch (TemplateError& err) {
    if (err.line() == 0) err.set_line(e.line);
    throw;
  }
}

CallArgs Renderer::eval_args(const Expr& e) {
  CallArgs args;
  args.positional.reserve(e.items.size());
  for (const ExprPtr& item : e.items) args.positional.push_back(eval(*item));
  for (const Keyword& kw : e.kwargs) args.keyword.emplace_back(kw.name, eval(*kw.value));
  return args;
}

Value Renderer::eval_slice(const Value& target, const Expr& slice) {
  const std::optional<int64_t> start = slice.a ? slice_index(eval(*slice.a)) : std::nullopt;
  const std::optional<int64_t> stop = slice.b ? slice_index(eval(*slice.b)) : std::nullopt;
  const std::optional<int64_t> step = slice.c ? slice_index(eval(*slice.c)) : std::nullopt;
  // Jinja2 compiles slicing to plain Python subscription (no sandbox getitem), so slicing
  // anything but a sequence fails.
  if (target.is_undefined()) fail_undefined(target);
  if (target.is_dict()) fail_type("unhashable type: 'slice'");
  if (!target.is_list() && !target.is_string()) fail_type("'" + target.type_name() + "' object is not subscriptable");
  charge(work_units(target));
  return slice_value(target, start, stop, step);
}

bool Renderer::eval_compare(const Expr& e) {
  Value left = eval(*e.a);
  for (size_t i = 0; i < e.ops.size(); ++i) {
    Value right = eval(*e.items[i]);
    charge(work_units(left) + work_units(right));  // comparing or searching big values scans them
    if (!compare(e.ops[i], left, right)) return false;
    left = std::move(right);
  }
  return true;
}

Value Renderer::apply_filter_chain(const Expr& chain, Value input) {
  Value in = chain.a ? apply_filter_chain(*chain.a, std::move(input)) : std::move(input);
  CallArgs args = eval_args(chain);
  return apply_filter(chain.name, in, args);
}

// The heavier cases live in their own functions so that eval_inner's stack frame, which every
// level of expression nesting and macro recursion pays for, stays small.
[[gnu::noinline]] Value Renderer::eval_collection(const Expr& e) {
  if (e.kind == Expr::Kind::Dict) {
    Dict d;
    for (size_t i = 0; i + 1 < e.items.size(); i += 2) {
      Value key = eval(*e.items[i]);
      if (!key.is_hashable()) fail_type("unhashable type: '" + key.type_name() + "'");
      d.set(std::move(key), eval(*e.items[i + 1]));
    }
    return Value::dict(std::move(d));
  }
  ValueList items;
  items.reserve(e.items.size());
  for (const ExprPtr& item : e.items) items.push_back(eval(*item));
  return e.kind == Expr::Kind::Tuple ? Value::tuple(std::move(items)) : Value::list(std::move(items));
}

[[gnu::noinline]] Value Renderer::eval_call(const Expr& e) {
  const Value target = eval(*e.a);
  CallArgs args = eval_args(e);
  Value result;
  switch (e.kind) {
    case Expr::Kind::Call:
      result = call(target, args);
      break;
    case Expr::Kind::Filter:
      result = apply_filter(e.name, target, args);
      break;
    default:
      return Value::boolean(apply_test(e.name, target, args));
  }
  charge(work_units(result));  // what the call built
  return result;
}

[[gnu::noinline]] Value Renderer::eval_operator(const Expr& e) {
  switch (e.kind) {
    case Expr::Kind::Binary: {
      const Value a = eval(*e.a);
      const Value b = eval(*e.b);
      Value result = binary_op(e.op, a, b, options_.max_output_bytes);
      charge(work_units(result));
      return result;
    }
    case Expr::Kind::Concat: {
      MarkedText out;
      for (const ExprPtr& item : e.items) {
        append_str(out, eval(*item));
        check_size(out.text.size());
      }
      Value result = Value::string(std::move(out));
      charge(work_units(result));
      return result;
    }
    case Expr::Kind::Neg:
      return negate(eval(*e.a));
    case Expr::Kind::Pos:
      return unary_plus(eval(*e.a));
    default:
      return Value::boolean(eval_compare(e));
  }
}

[[gnu::noinline]] Value Renderer::eval_subscript(const Expr& e) {
  const Value target = eval(*e.a);
  if (e.kind == Expr::Kind::GetAttr) return get_attr(target, e.name);
  if (e.b->kind == Expr::Kind::Slice) return eval_slice(target, *e.b);
  return get_item(target, eval(*e.b));
}

Value Renderer::eval_inner(const Expr& e) {
  switch (e.kind) {
    case Expr::Kind::Const:
      return e.constant;
    case Expr::Kind::Name:
      return lookup(e.name);
    case Expr::Kind::List:
    case Expr::Kind::Tuple:
    case Expr::Kind::Dict:
      return eval_collection(e);
    case Expr::Kind::GetAttr:
    case Expr::Kind::GetItem:
      return eval_subscript(e);
    case Expr::Kind::Slice:
      fail_type("a slice is only valid inside []");
    case Expr::Kind::Call:
    case Expr::Kind::Filter:
    case Expr::Kind::Test:
      if (!e.a) fail_type("filter without input");
      return eval_call(e);
    case Expr::Kind::Neg:
    case Expr::Kind::Pos:
    case Expr::Kind::Binary:
    case Expr::Kind::Compare:
    case Expr::Kind::Concat:
      return eval_operator(e);
    case Expr::Kind::Not:
      return Value::boolean(!eval(*e.a).truthy());
    case Expr::Kind::And: {
      Value a = eval(*e.a);
      return a.truthy() ? eval(*e.b) : a;
    }
    case Expr::Kind::Or: {
      Value a = eval(*e.a);
      return a.truthy() ? a : eval(*e.b);
    }
    case Expr::Kind::CondExpr:
      if (eval(*e.b).truthy()) return eval(*e.a);
      if (e.c) return eval(*e.c);
      return Value::undefined("the inline if-expression on line " + std::to_string(e.line) +
                              " evaluated to false and no else section was defined.");
  }
  fail_type("unknown expression");
}

}  // namespace cellserve::engine::chat
