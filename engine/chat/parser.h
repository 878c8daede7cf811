// The parser: template text → Template (ast.h), following Jinja2's grammar and operator
// precedence. Anything outside the supported subset (see docs/chat_templates.md) is rejected here,
// at parse time, with a message naming the construct: unknown or unsupported tags, filters, tests
// and Python methods, recursive loops, call blocks, *args/**kwargs.
#pragma once

#include <initializer_list>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "engine/chat/ast.h"
#include "engine/chat/lexer.h"

namespace cellserve::engine::chat {

// Parses a whole template. Throws TemplateError (Syntax or Unsupported, with the line).
std::shared_ptr<const Template> parse_template(std::string_view source);

// Internal: the recursive-descent parser shared by parser.cpp (statements) and parse_expr.cpp
// (expressions).
class Parser {
 public:
  explicit Parser(std::vector<Token> tokens) : tokens_(std::move(tokens)) {}

  Body parse_top_level();

  // Expressions (parse_expr.cpp).
  ExprPtr parse_expression(bool with_condexpr = true);
  // A comma-separated list of expressions: one expression, or a Tuple when there is a comma.
  ExprPtr parse_tuple(bool simplified = false, bool with_condexpr = true,
                      std::initializer_list<std::string_view> extra_end_names = {}, bool explicit_parens = false);
  // The chain of `| filter(args)` after `node` (node may be null for filter blocks).
  ExprPtr parse_filter(ExprPtr node, bool start_inline = false);
  Target parse_assign_target(bool with_tuple, bool name_only, std::initializer_list<std::string_view> extra_end_names,
                             bool with_namespace);

 private:
  friend struct DepthGuard;

  // Statements (parser.cpp).
  Body subparse(std::initializer_list<std::string_view> end_tags);
  Body parse_statements(std::initializer_list<std::string_view> end_tags, bool drop_needle);
  std::unique_ptr<Stmt> parse_statement();
  std::unique_ptr<Stmt> parse_for();
  std::unique_ptr<Stmt> parse_if();
  std::unique_ptr<Stmt> parse_set();
  std::unique_ptr<Stmt> parse_macro();
  std::unique_ptr<Stmt> parse_with();
  std::unique_ptr<Stmt> parse_filter_block();
  std::unique_ptr<Stmt> parse_generation();
  std::unique_ptr<Stmt> parse_print();

  // Expressions (parse_expr.cpp).
  ExprPtr parse_condexpr();
  ExprPtr parse_or();
  ExprPtr parse_and();
  ExprPtr parse_not();
  ExprPtr parse_compare();
  ExprPtr parse_math1();
  ExprPtr parse_concat();
  ExprPtr parse_math2();
  ExprPtr parse_pow();
  ExprPtr parse_unary(bool with_filter = true);
  ExprPtr parse_primary();
  ExprPtr parse_list();
  ExprPtr parse_dict();
  ExprPtr parse_postfix(ExprPtr node);
  ExprPtr parse_filter_expr(ExprPtr node);
  ExprPtr parse_subscript(ExprPtr node);
  ExprPtr parse_subscribed();
  ExprPtr parse_call(ExprPtr node);
  ExprPtr parse_test(ExprPtr node);
  void parse_call_args(Expr* call);
  bool is_tuple_end(std::initializer_list<std::string_view> extra_end_names) const;

  // Token stream.
  const Token& current() const { return tokens_[pos_]; }
  const Token& look() const { return tokens_[pos_ + 1 < tokens_.size() ? pos_ + 1 : pos_]; }
  const Token& next() {
    const Token& t = tokens_[pos_];
    if (pos_ + 1 < tokens_.size()) ++pos_;
    return t;
  }
  bool at_name(std::string_view name) const { return current().type == TokenType::Name && current().value == name; }
  bool at_op(std::string_view op) const { return current().type == TokenType::Operator && current().value == op; }
  bool skip_name(std::string_view name);
  bool skip_op(std::string_view op);
  const Token& expect(TokenType type, std::string_view what);
  const Token& expect_op(std::string_view op);
  std::string expect_name();
  void expect_name(std::string_view name);
  [[noreturn]] void fail_syntax(const std::string& message, int line = 0) const;
  [[noreturn]] void fail_unsupported(const std::string& message, int line = 0) const;

  std::vector<Token> tokens_;
  size_t pos_ = 0;
  int depth_ = 0;       // nesting of expressions and blocks being parsed
  int loop_depth_ = 0;  // {% for %} blocks around the current statement (reset inside macros)
  std::vector<std::string> tag_stack_;
  std::vector<Stmt*> macro_stack_;  // macros being parsed (for varargs/kwargs use)
};

// Deepest nesting of brackets, operators and blocks the parser accepts (each level costs stack).
inline constexpr int kMaxParseDepth = 200;

// Counts one level of parser nesting for its lifetime; fails past kMaxParseDepth.
struct DepthGuard {
  explicit DepthGuard(Parser* p);
  ~DepthGuard() { --parser->depth_; }
  DepthGuard(const DepthGuard&) = delete;
  DepthGuard& operator=(const DepthGuard&) = delete;
  Parser* parser;
};

}  // namespace cellserve::engine::chat
