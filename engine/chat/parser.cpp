// Statement parsing: the tags Hugging Face's environment knows (Jinja2's core statements, the
// loopcontrols extension's break/continue and transformers' {% generation %}).
#include "engine/chat/parser.h"

#include "engine/chat/error.h"

namespace cellserve::engine::chat {
namespace {

// Core Jinja2 tags that chat templates do not need (template inheritance, imports, call blocks).
constexpr std::string_view kUnsupportedTags[] = {"block", "extends", "include", "import", "from", "call", "autoescape"};
// Tags of Jinja2 extensions that Hugging Face does not enable: Jinja2 itself rejects them there.
constexpr std::string_view kExtensionTags[] = {"do", "trans", "pluralize", "debug"};

// Tags that only continue or close an open block.
constexpr std::string_view kClosingTags[] = {"endfor", "endif",   "elif",      "else",          "endmacro",
                                             "endset", "endwith", "endfilter", "endgeneration", "endraw"};

template <size_t N>
bool contains(const std::string_view (&list)[N], std::string_view name) {
  for (std::string_view s : list) {
    if (s == name) return true;
  }
  return false;
}

}  // namespace

DepthGuard::DepthGuard(Parser* p) : parser(p) {
  if (++parser->depth_ > kMaxParseDepth) {
    throw TemplateError(ErrorKind::Limit,
                        "template nested too deeply (more than " + std::to_string(kMaxParseDepth) + " levels)",
                        parser->current().line);
  }
}

std::shared_ptr<const Template> parse_template(std::string_view source) {
  Parser parser(tokenize(source));
  auto t = std::make_shared<Template>();
  t->body = parser.parse_top_level();
  return t;
}

void Parser::fail_syntax(const std::string& message, int line) const {
  throw TemplateError(ErrorKind::Syntax, message, line != 0 ? line : current().line);
}

void Parser::fail_unsupported(const std::string& message, int line) const {
  throw TemplateError(ErrorKind::Unsupported, message, line != 0 ? line : current().line);
}

bool Parser::skip_name(std::string_view name) {
  if (!at_name(name)) return false;
  next();
  return true;
}

bool Parser::skip_op(std::string_view op) {
  if (!at_op(op)) return false;
  next();
  return true;
}

const Token& Parser::expect(TokenType type, std::string_view what) {
  if (current().type != type) fail_syntax("expected " + std::string(what) + ", got " + describe_token(current()));
  return next();
}

const Token& Parser::expect_op(std::string_view op) {
  if (!at_op(op)) fail_syntax("expected '" + std::string(op) + "', got " + describe_token(current()));
  return next();
}

std::string Parser::expect_name() { return expect(TokenType::Name, "a name").value; }

void Parser::expect_name(std::string_view name) {
  if (!at_name(name)) fail_syntax("expected '" + std::string(name) + "', got " + describe_token(current()));
  next();
}

Body Parser::parse_top_level() {
  Body body = subparse({});
  if (current().type != TokenType::Eof) fail_syntax("unexpected " + describe_token(current()));
  return body;
}

Body Parser::subparse(std::initializer_list<std::string_view> end_tags) {
  Body body;
  while (current().type != TokenType::Eof) {
    const Token& t = current();
    if (t.type == TokenType::Data) {
      auto s = std::make_unique<Stmt>(Stmt::Kind::Text, t.line);
      s->text = t.value;
      body.push_back(std::move(s));
      next();
    } else if (t.type == TokenType::VariableBegin) {
      next();
      auto s = std::make_unique<Stmt>(Stmt::Kind::Output, t.line);
      s->expr = parse_tuple();
      expect(TokenType::VariableEnd, "end of print statement");
      body.push_back(std::move(s));
    } else if (t.type == TokenType::BlockBegin) {
      next();
      for (std::string_view end : end_tags) {
        if (at_name(end)) return body;
      }
      body.push_back(parse_statement());
      expect(TokenType::BlockEnd, "end of statement block");
    } else {
      fail_syntax("unexpected " + describe_token(t));
    }
  }
  if (!tag_stack_.empty() && end_tags.size() > 0) {
    std::string wanted;
    for (std::string_view end : end_tags) wanted += (wanted.empty() ? "'" : " or '") + std::string(end) + "'";
    fail_syntax("unexpected end of template: looking for " + wanted + " to close '" + tag_stack_.back() + "'");
  }
  return body;
}

Body Parser::parse_statements(std::initializer_list<std::string_view> end_tags, bool drop_needle) {
  DepthGuard guard(this);
  skip_op(":");
  expect(TokenType::BlockEnd, "end of statement block");
  Body body = subparse(end_tags);
  if (current().type == TokenType::Eof) fail_syntax("unexpected end of template");
  if (drop_needle) next();
  return body;
}

std::unique_ptr<Stmt> Parser::parse_statement() {
  const Token& t = current();
  if (t.type != TokenType::Name) fail_syntax("tag name expected");
  const std::string tag = t.value;
  const int line = t.line;
  tag_stack_.push_back(tag);
  std::unique_ptr<Stmt> s;
  if (tag == "for")
    s = parse_for();
  else if (tag == "if")
    s = parse_if();
  else if (tag == "set")
    s = parse_set();
  else if (tag == "macro")
    s = parse_macro();
  else if (tag == "with")
    s = parse_with();
  else if (tag == "filter")
    s = parse_filter_block();
  else if (tag == "generation")
    s = parse_generation();
  else if (tag == "print")
    s = parse_print();
  else if (tag == "break" || tag == "continue") {
    if (loop_depth_ == 0) fail_syntax("'" + tag + "' outside loop", line);
    next();
    s = std::make_unique<Stmt>(tag == "break" ? Stmt::Kind::Break : Stmt::Kind::Continue, line);
  } else if (contains(kClosingTags, tag)) {
    const size_t open = tag_stack_.size() - 1;  // tag_stack_.back() is this tag
    fail_syntax("unexpected '" + tag + "' " +
                    (open == 0 ? std::string("(no block is open)")
                               : "(the innermost open block is '" + tag_stack_[open - 1] + "')"),
                line);
  } else if (contains(kUnsupportedTags, tag)) {
    fail_unsupported("unsupported tag '" + tag + "'", line);
  } else if (contains(kExtensionTags, tag)) {
    fail_syntax("unknown tag '" + tag + "' (it needs a Jinja2 extension that Hugging Face does not enable)", line);
  } else {
    fail_syntax("unknown tag '" + tag + "'", line);
  }
  tag_stack_.pop_back();
  return s;
}

std::unique_ptr<Stmt> Parser::parse_for() {
  auto s = std::make_unique<Stmt>(Stmt::Kind::For, next().line);
  s->target = parse_assign_target(true, false, {"in"}, false);
  expect_name("in");
  s->expr = parse_tuple(false, false, {"recursive"});
  if (skip_name("if")) s->test = parse_expression();
  if (at_name("recursive")) fail_unsupported("recursive for loops are not supported", s->line);
  ++loop_depth_;
  s->body = parse_statements({"endfor", "else"}, false);
  --loop_depth_;
  if (next().value == "else") s->else_body = parse_statements({"endfor"}, true);
  return s;
}

std::unique_ptr<Stmt> Parser::parse_if() {
  auto s = std::make_unique<Stmt>(Stmt::Kind::If, next().line);
  while (true) {
    IfBranch branch;
    branch.test = parse_tuple(false, false);
    branch.body = parse_statements({"elif", "else", "endif"}, false);
    s->branches.push_back(std::move(branch));
    const std::string tag = next().value;
    if (tag == "elif") continue;
    if (tag == "else") {
      IfBranch else_branch;
      else_branch.body = parse_statements({"endif"}, true);
      s->branches.push_back(std::move(else_branch));
    }
    break;
  }
  return s;
}

std::unique_ptr<Stmt> Parser::parse_set() {
  const int line = next().line;
  Target target = parse_assign_target(true, false, {}, true);
  if (skip_op("=")) {
    auto s = std::make_unique<Stmt>(Stmt::Kind::Set, line);
    s->target = std::move(target);
    s->expr = parse_tuple();
    return s;
  }
  auto s = std::make_unique<Stmt>(Stmt::Kind::SetBlock, line);
  s->target = std::move(target);
  s->expr = parse_filter(nullptr);
  s->body = parse_statements({"endset"}, true);
  return s;
}

std::unique_ptr<Stmt> Parser::parse_macro() {
  auto s = std::make_unique<Stmt>(Stmt::Kind::Macro, next().line);
  s->name = expect_name();
  expect_op("(");
  bool has_default = false;
  while (!at_op(")")) {
    if (!s->params.empty()) expect_op(",");
    MacroParam p;
    p.name = expect_name();
    if (skip_op("=")) {
      p.default_value = parse_expression();
      has_default = true;
    } else if (has_default) {
      fail_syntax("non-default argument follows default argument");
    }
    s->params.push_back(std::move(p));
  }
  expect_op(")");
  const int saved_loop_depth = loop_depth_;
  loop_depth_ = 0;
  macro_stack_.push_back(s.get());
  s->body = parse_statements({"endmacro"}, true);
  macro_stack_.pop_back();
  loop_depth_ = saved_loop_depth;
  return s;
}

std::unique_ptr<Stmt> Parser::parse_with() {
  auto s = std::make_unique<Stmt>(Stmt::Kind::Scope, next().line);
  while (current().type != TokenType::BlockEnd) {
    if (!s->assigns.empty()) expect_op(",");
    Target target = parse_assign_target(false, false, {}, false);
    expect_op("=");
    s->assigns.emplace_back(std::move(target), parse_expression());
  }
  s->body = parse_statements({"endwith"}, true);
  return s;
}

std::unique_ptr<Stmt> Parser::parse_filter_block() {
  auto s = std::make_unique<Stmt>(Stmt::Kind::FilterBlock, next().line);
  s->expr = parse_filter(nullptr, true);
  s->body = parse_statements({"endfilter"}, true);
  return s;
}

std::unique_ptr<Stmt> Parser::parse_generation() {
  auto s = std::make_unique<Stmt>(Stmt::Kind::Scope, next().line);
  s->body = parse_statements({"endgeneration"}, true);
  return s;
}

std::unique_ptr<Stmt> Parser::parse_print() {
  auto s = std::make_unique<Stmt>(Stmt::Kind::Output, next().line);
  s->expr = parse_tuple();
  return s;
}

}  // namespace cellserve::engine::chat
