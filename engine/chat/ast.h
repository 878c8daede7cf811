// The syntax tree of a parsed template: expressions (Expr) and statements (Stmt), mirroring
// Jinja2's nodes. Both are plain data: the parser builds them, the renderer walks them, and a
// parsed template is immutable and shared by concurrent renders.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "engine/chat/value.h"

namespace cellserve::engine::chat {

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

enum class BinaryOp { Add, Sub, Mul, Div, FloorDiv, Mod, Pow };
enum class CompareOp { Eq, Ne, Lt, Le, Gt, Ge, In, NotIn };

struct Keyword {
  std::string name;
  ExprPtr value;
};

struct Expr {
  enum class Kind {
    Const,     // constant
    Name,      // name
    List,      // items
    Tuple,     // items
    Dict,      // items: key0, value0, key1, value1, ...
    GetAttr,   // a.name
    GetItem,   // a[b]
    Slice,     // a:b:c inside [], each may be null
    Call,      // a(items..., kwargs...)
    Filter,    // a | name(items..., kwargs...); `a` is null in {% filter %} and {% set x | f %}
    Test,      // a is name(items..., kwargs...)
    Neg,       // -a
    Pos,       // +a
    Not,       // not a
    Binary,    // a op b
    Compare,   // a ops[0] items[0] ops[1] items[1] ... (chained like Python)
    And,       // a and b
    Or,        // a or b
    Concat,    // items[0] ~ items[1] ~ ...
    CondExpr,  // a if b else c (c may be null)
  };

  Expr(Kind k, int l) : kind(k), line(l) {}

  Kind kind;
  int line;
  Value constant;
  std::string name;
  BinaryOp op = BinaryOp::Add;
  ExprPtr a, b, c;
  std::vector<ExprPtr> items;
  std::vector<Keyword> kwargs;
  std::vector<CompareOp> ops;
};

// What {% set %} and {% for %} assign to: a name, a tuple of targets (unpacking), or ns.attr.
struct Target {
  std::string name;           // a name, or the namespace variable of ns.attr
  std::string attr;           // non-empty for ns.attr
  std::vector<Target> items;  // non-empty for tuple unpacking
  bool is_tuple = false;
};

struct Stmt;
using Body = std::vector<std::unique_ptr<Stmt>>;

struct IfBranch {
  ExprPtr test;  // null for the final else
  Body body;
};

struct MacroParam {
  std::string name;
  ExprPtr default_value;  // null when required
};

struct Stmt {
  enum class Kind {
    Text,      // text
    Output,    // {{ expr }}
    If,        // branches
    For,       // for target in expr [if test]: body, else_body
    Set,       // {% set target = expr %}
    SetBlock,  // {% set target [| filters] %}body{% endset %}; expr = filter chain or null
    Macro,     // {% macro name(params) %}body{% endmacro %}
    Break,
    Continue,
    Scope,        // {% with %} (assigns) and {% generation %}: body in a new scope
    FilterBlock,  // {% filter expr %}body{% endfilter %}
  };

  Stmt(Kind k, int l) : kind(k), line(l) {}

  Kind kind;
  int line;
  std::string text;
  ExprPtr expr;
  ExprPtr test;
  Target target;
  std::vector<IfBranch> branches;
  Body body;
  Body else_body;
  std::string name;
  std::vector<MacroParam> params;
  bool uses_varargs = false;  // the macro body reads `varargs` / `kwargs`
  bool uses_kwargs = false;
  std::vector<std::pair<Target, ExprPtr>> assigns;  // {% with a = 1, b = 2 %}
};

// A parsed template: the statements of the top level.
struct Template {
  Body body;
};

}  // namespace cellserve::engine::chat
