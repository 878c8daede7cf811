// Expression parsing: Jinja2's grammar, precedence lowest to highest:
//   x if c else y | or | and | not | comparisons, in, not in | + - | ~ | * / // % | ** |
//   unary - + | primary with .attr [item] (call) and then | filter, is test, (call).
#include "engine/chat/error.h"
#include "engine/chat/filters.h"
#include "engine/chat/jinja_tests.h"
#include "engine/chat/methods.h"
#include "engine/chat/parser.h"

namespace cellserve::engine::chat {
namespace {

ExprPtr make(Expr::Kind kind, int line) { return std::make_unique<Expr>(kind, line); }

ExprPtr make_binary(BinaryOp op, ExprPtr a, ExprPtr b, int line) {
  ExprPtr e = make(Expr::Kind::Binary, line);
  e->op = op;
  e->a = std::move(a);
  e->b = std::move(b);
  return e;
}

}  // namespace

ExprPtr Parser::parse_expression(bool with_condexpr) {
  DepthGuard guard(this);
  return with_condexpr ? parse_condexpr() : parse_or();
}

ExprPtr Parser::parse_condexpr() {
  ExprPtr expr1 = parse_or();
  while (at_name("if")) {
    const int line = next().line;
    ExprPtr expr2 = parse_or();
    ExprPtr expr3;
    if (skip_name("else")) expr3 = parse_condexpr();
    ExprPtr cond = make(Expr::Kind::CondExpr, line);
    cond->a = std::move(expr1);
    cond->b = std::move(expr2);
    cond->c = std::move(expr3);
    expr1 = std::move(cond);
  }
  return expr1;
}

ExprPtr Parser::parse_or() {
  ExprPtr left = parse_and();
  while (at_name("or")) {
    const int line = next().line;
    ExprPtr e = make(Expr::Kind::Or, line);
    e->a = std::move(left);
    e->b = parse_and();
    left = std::move(e);
  }
  return left;
}

ExprPtr Parser::parse_and() {
  ExprPtr left = parse_not();
  while (at_name("and")) {
    const int line = next().line;
    ExprPtr e = make(Expr::Kind::And, line);
    e->a = std::move(left);
    e->b = parse_not();
    left = std::move(e);
  }
  return left;
}

ExprPtr Parser::parse_not() {
  if (at_name("not")) {
    DepthGuard guard(this);
    const int line = next().line;
    ExprPtr e = make(Expr::Kind::Not, line);
    e->a = parse_not();
    return e;
  }
  return parse_compare();
}

ExprPtr Parser::parse_compare() {
  const int line = current().line;
  ExprPtr expr = parse_math1();
  ExprPtr cmp;
  while (true) {
    CompareOp op;
    if (at_op("=="))
      op = CompareOp::Eq;
    else if (at_op("!="))
      op = CompareOp::Ne;
    else if (at_op("<"))
      op = CompareOp::Lt;
    else if (at_op("<="))
      op = CompareOp::Le;
    else if (at_op(">"))
      op = CompareOp::Gt;
    else if (at_op(">="))
      op = CompareOp::Ge;
    else if (at_name("in"))
      op = CompareOp::In;
    else if (at_name("not") && look().type == TokenType::Name && look().value == "in") {
      next();
      op = CompareOp::NotIn;
    } else {
      break;
    }
    next();
    if (!cmp) {
      cmp = make(Expr::Kind::Compare, line);
      cmp->a = std::move(expr);
    }
    cmp->ops.push_back(op);
    cmp->items.push_back(parse_math1());
  }
  return cmp ? std::move(cmp) : std::move(expr);
}

ExprPtr Parser::parse_math1() {
  ExprPtr left = parse_concat();
  while (at_op("+") || at_op("-")) {
    const Token& t = next();
    const BinaryOp op = t.value == "+" ? BinaryOp::Add : BinaryOp::Sub;
    ExprPtr right = parse_concat();
    left = make_binary(op, std::move(left), std::move(right), t.line);
  }
  return left;
}

ExprPtr Parser::parse_concat() {
  const int line = current().line;
  ExprPtr first = parse_math2();
  if (!at_op("~")) return first;
  ExprPtr e = make(Expr::Kind::Concat, line);
  e->items.push_back(std::move(first));
  while (skip_op("~")) e->items.push_back(parse_math2());
  return e;
}

ExprPtr Parser::parse_math2() {
  ExprPtr left = parse_pow();
  while (at_op("*") || at_op("/") || at_op("//") || at_op("%")) {
    const Token& t = next();
    const BinaryOp op = t.value == "*"    ? BinaryOp::Mul
                        : t.value == "/"  ? BinaryOp::Div
                        : t.value == "//" ? BinaryOp::FloorDiv
                                          : BinaryOp::Mod;
    ExprPtr right = parse_pow();
    left = make_binary(op, std::move(left), std::move(right), t.line);
  }
  return left;
}

ExprPtr Parser::parse_pow() {
  ExprPtr left = parse_unary();
  while (at_op("**")) {
    const int line = next().line;
    ExprPtr right = parse_unary();
    left = make_binary(BinaryOp::Pow, std::move(left), std::move(right), line);
  }
  return left;
}

ExprPtr Parser::parse_unary(bool with_filter) {
  DepthGuard guard(this);
  ExprPtr node;
  if (at_op("-") || at_op("+")) {
    const Token& t = next();
    node = make(t.value == "-" ? Expr::Kind::Neg : Expr::Kind::Pos, t.line);
    node->a = parse_unary(false);
  } else {
    node = parse_primary();
  }
  node = parse_postfix(std::move(node));
  if (with_filter) node = parse_filter_expr(std::move(node));
  return node;
}

ExprPtr Parser::parse_primary() {
  const Token& t = current();
  ExprPtr node;
  switch (t.type) {
    case TokenType::Name: {
      node = make(Expr::Kind::Const, t.line);
      if (t.value == "true" || t.value == "True")
        node->constant = Value::boolean(true);
      else if (t.value == "false" || t.value == "False")
        node->constant = Value::boolean(false);
      else if (t.value == "none" || t.value == "None")
        node->constant = Value::none();
      else {
        node->kind = Expr::Kind::Name;
        node->name = t.value;
        for (Stmt* macro : macro_stack_) {
          if (t.value == "varargs") macro->uses_varargs = true;
          if (t.value == "kwargs") macro->uses_kwargs = true;
        }
      }
      next();
      return node;
    }
    case TokenType::String: {
      node = make(Expr::Kind::Const, t.line);
      std::string text;
      while (current().type == TokenType::String) text += next().value;  // adjacent literals concatenate
      node->constant = Value::string(std::move(text));
      return node;
    }
    case TokenType::Integer:
    case TokenType::Float:
      node = make(Expr::Kind::Const, t.line);
      node->constant = t.type == TokenType::Integer ? Value::integer(t.int_value) : Value::floating(t.float_value);
      next();
      return node;
    case TokenType::Operator:
      if (t.value == "(") {
        next();
        node = parse_tuple(false, true, {}, true);
        expect_op(")");
        return node;
      }
      if (t.value == "[") return parse_list();
      if (t.value == "{") return parse_dict();
      break;
    default:
      break;
  }
  fail_syntax("unexpected " + describe_token(t), t.line);
}

ExprPtr Parser::parse_tuple(bool simplified, bool with_condexpr,
                            std::initializer_list<std::string_view> extra_end_names, bool explicit_parens) {
  const int line = current().line;
  std::vector<ExprPtr> args;
  bool is_tuple = false;
  while (true) {
    if (!args.empty()) expect_op(",");
    if (is_tuple_end(extra_end_names)) break;
    if (simplified) {
      DepthGuard guard(this);
      args.push_back(parse_primary());
    } else {
      args.push_back(parse_expression(with_condexpr));
    }
    if (at_op(","))
      is_tuple = true;
    else
      break;
  }
  if (!is_tuple) {
    if (!args.empty()) return std::move(args[0]);
    if (!explicit_parens) fail_syntax("expected an expression, got " + describe_token(current()), current().line);
  }
  ExprPtr t = make(Expr::Kind::Tuple, line);
  t->items = std::move(args);
  return t;
}

bool Parser::is_tuple_end(std::initializer_list<std::string_view> extra_end_names) const {
  const Token& t = current();
  if (t.type == TokenType::VariableEnd || t.type == TokenType::BlockEnd || t.type == TokenType::Eof) return true;
  if (t.type == TokenType::Operator && t.value == ")") return true;
  if (t.type == TokenType::Name) {
    for (std::string_view name : extra_end_names) {
      if (t.value == name) return true;
    }
  }
  return false;
}

ExprPtr Parser::parse_list() {
  DepthGuard guard(this);
  ExprPtr node = make(Expr::Kind::List, expect_op("[").line);
  while (!at_op("]")) {
    if (!node->items.empty()) expect_op(",");
    if (at_op("]")) break;
    node->items.push_back(parse_expression());
  }
  expect_op("]");
  return node;
}

ExprPtr Parser::parse_dict() {
  DepthGuard guard(this);
  ExprPtr node = make(Expr::Kind::Dict, expect_op("{").line);
  while (!at_op("}")) {
    if (!node->items.empty()) expect_op(",");
    if (at_op("}")) break;
    node->items.push_back(parse_expression());
    expect_op(":");
    node->items.push_back(parse_expression());
  }
  expect_op("}");
  return node;
}

ExprPtr Parser::parse_postfix(ExprPtr node) {
  while (true) {
    if (at_op(".") || at_op("["))
      node = parse_subscript(std::move(node));
    else if (at_op("("))
      node = parse_call(std::move(node));
    else
      return node;
  }
}

ExprPtr Parser::parse_filter_expr(ExprPtr node) {
  while (true) {
    if (at_op("|"))
      node = parse_filter(std::move(node));
    else if (at_name("is"))
      node = parse_test(std::move(node));
    else if (at_op("("))
      node = parse_call(std::move(node));
    else
      return node;
  }
}

ExprPtr Parser::parse_subscript(ExprPtr node) {
  DepthGuard guard(this);
  const Token& t = next();
  if (t.value == ".") {
    const Token& attr = next();
    if (attr.type == TokenType::Name) {
      ExprPtr e = make(Expr::Kind::GetAttr, t.line);
      e->a = std::move(node);
      e->name = attr.value;
      return e;
    }
    if (attr.type != TokenType::Integer) fail_syntax("expected name or number after '.'", attr.line);
    ExprPtr e = make(Expr::Kind::GetItem, t.line);
    e->a = std::move(node);
    e->b = make(Expr::Kind::Const, attr.line);
    e->b->constant = Value::integer(attr.int_value);
    return e;
  }
  std::vector<ExprPtr> args;
  while (!at_op("]")) {
    if (!args.empty()) expect_op(",");
    args.push_back(parse_subscribed());
  }
  expect_op("]");
  ExprPtr e = make(Expr::Kind::GetItem, t.line);
  e->a = std::move(node);
  if (args.size() == 1) {
    e->b = std::move(args[0]);
  } else {
    e->b = make(Expr::Kind::Tuple, t.line);
    e->b->items = std::move(args);
  }
  return e;
}

ExprPtr Parser::parse_subscribed() {
  const int line = current().line;
  ExprPtr start;
  if (at_op(":")) {
    next();
  } else {
    start = parse_expression();
    if (!at_op(":")) return start;
    next();
  }
  ExprPtr slice = make(Expr::Kind::Slice, line);
  slice->a = std::move(start);
  if (!at_op(":") && !at_op("]") && !at_op(",")) slice->b = parse_expression();
  if (skip_op(":")) {
    if (!at_op("]") && !at_op(",")) slice->c = parse_expression();
  }
  return slice;
}

ExprPtr Parser::parse_call(ExprPtr node) {
  DepthGuard guard(this);
  if (node->kind == Expr::Kind::GetAttr && method_support(node->name) == Support::Unsupported) {
    fail_unsupported("unsupported method '" + node->name + "()'", node->line);
  }
  if (node->kind == Expr::Kind::Name && node->name == "loop")
    fail_unsupported("recursive loop() calls are not supported", node->line);
  ExprPtr call = make(Expr::Kind::Call, current().line);
  call->a = std::move(node);
  parse_call_args(call.get());
  return call;
}

void Parser::parse_call_args(Expr* call) {
  const int line = expect_op("(").line;
  bool require_comma = false;
  while (!at_op(")")) {
    if (require_comma) {
      expect_op(",");
      if (at_op(")")) break;
    }
    if (at_op("*") || at_op("**")) fail_unsupported("*args / **kwargs in calls are not supported", line);
    if (current().type == TokenType::Name && look().type == TokenType::Operator && look().value == "=") {
      Keyword kw;
      kw.name = next().value;
      next();
      kw.value = parse_expression();
      call->kwargs.push_back(std::move(kw));
    } else {
      if (!call->kwargs.empty()) fail_syntax("positional argument follows keyword argument", line);
      call->items.push_back(parse_expression());
    }
    require_comma = true;
  }
  expect_op(")");
}

ExprPtr Parser::parse_filter(ExprPtr node, bool start_inline) {
  while (at_op("|") || start_inline) {
    DepthGuard guard(this);
    if (!start_inline) next();
    start_inline = false;
    const int line = current().line;
    std::string name = expect_name();
    while (skip_op(".")) name += "." + expect_name();
    const Support support = filter_support(name);
    if (support == Support::Unsupported) fail_unsupported("unsupported filter '" + name + "'", line);
    if (support == Support::Unknown) fail_syntax("unknown filter '" + name + "'", line);
    ExprPtr f = make(Expr::Kind::Filter, line);
    f->a = std::move(node);
    f->name = std::move(name);
    if (at_op("(")) parse_call_args(f.get());
    node = std::move(f);
  }
  return node;
}

ExprPtr Parser::parse_test(ExprPtr node) {
  DepthGuard guard(this);
  const int line = next().line;  // `is`
  const bool negated = skip_name("not");
  std::string name = expect_name();
  while (skip_op(".")) name += "." + expect_name();
  const Support support = test_support(name);
  if (support == Support::Unsupported) fail_unsupported("unsupported test '" + name + "'", line);
  if (support == Support::Unknown) fail_syntax("unknown test '" + name + "'", line);
  ExprPtr test = make(Expr::Kind::Test, line);
  test->a = std::move(node);
  test->name = std::move(name);
  const Token& t = current();
  const bool arg_start = t.type == TokenType::Name || t.type == TokenType::String || t.type == TokenType::Integer ||
                         t.type == TokenType::Float ||
                         (t.type == TokenType::Operator && (t.value == "[" || t.value == "{"));
  if (at_op("(")) {
    parse_call_args(test.get());
  } else if (arg_start && !at_name("else") && !at_name("or") && !at_name("and")) {
    if (at_name("is")) fail_syntax("you cannot chain multiple tests with is", t.line);
    test->items.push_back(parse_postfix(parse_primary()));
  }
  if (!negated) return test;
  ExprPtr n = make(Expr::Kind::Not, line);
  n->a = std::move(test);
  return n;
}

Target Parser::parse_assign_target(bool with_tuple, bool name_only,
                                   std::initializer_list<std::string_view> extra_end_names, bool with_namespace) {
  Target target;
  const int line = current().line;
  if (with_namespace && current().type == TokenType::Name && look().type == TokenType::Operator &&
      look().value == ".") {
    target.name = next().value;
    next();
    target.attr = expect_name();
    return target;
  }
  if (name_only) {
    target.name = expect_name();
    return target;
  }
  ExprPtr expr = with_tuple ? parse_tuple(true, true, extra_end_names) : parse_primary();
  auto convert = [&](auto& self, const Expr& e) -> Target {
    Target t;
    if (e.kind == Expr::Kind::Name) {
      t.name = e.name;
    } else if (e.kind == Expr::Kind::Tuple) {
      t.is_tuple = true;
      for (const ExprPtr& item : e.items) t.items.push_back(self(self, *item));
    } else {
      fail_syntax("can't assign to this expression", line);
    }
    return t;
  };
  return convert(convert, *expr);
}

}  // namespace cellserve::engine::chat
