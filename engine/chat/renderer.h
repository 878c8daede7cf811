// Renderer: executes a parsed template against a context, with Jinja2's semantics under Hugging
// Face's sandboxed environment. One Renderer renders once, on one thread; it throws TemplateError.
//
// Scoping follows Jinja2: the top level is one scope (an {% if %} does not open a scope); every
// {% for %} iteration, macro call, {% with %} and {% generation %} opens a new one, so a {% set %}
// inside them is invisible afterwards (namespace() objects are how templates carry state out). A
// macro sees its arguments and the template's top-level variables, not its caller's locals.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "engine/chat/ast.h"
#include "engine/chat/call_args.h"
#include "engine/chat/marked_text.h"
#include "engine/chat/render_options.h"
#include "engine/chat/value.h"

namespace cellserve::engine::chat {

class Renderer {
 public:
  // `context` holds the template's variables (messages, add_generation_prompt, ...).
  Renderer(const RenderOptions& options, Dict context);

  // Renders `tmpl` and returns its output, marked where it came from strings the context marked
  // as request data (user_data.h). Throws TemplateError.
  MarkedText render(const Template& tmpl);

  const RenderOptions& options() const { return options_; }
  // Fails (Limit) when a string of `size` bytes would exceed the output limit.
  void check_size(size_t size) const;
  // Counts `n` steps of work against RenderOptions::max_steps (loop iterations, items built by
  // range(), ...); fails (Limit) past it.
  void charge(uint64_t n);

  // Jinja2's sandboxed `obj.name` and `obj[key]`: missing attributes and items give undefined
  // values; an undefined `obj` fails.
  Value get_attr(const Value& obj, const std::string& name);
  Value get_item(const Value& obj, const Value& key);
  // Calls a builtin, bound method or macro.
  Value call(const Value& callee, CallArgs& args);
  // Runs filter / test `name` (REQUIRES: a supported name).
  Value apply_filter(const std::string& name, const Value& input, CallArgs& args);
  bool apply_test(const std::string& name, const Value& input, CallArgs& args);
  // Keeps `obj` (a namespace() the template created) so its attributes can be dropped when the
  // render ends: a template can make a namespace hold itself, and the cycle would leak.
  void adopt(std::shared_ptr<Object> obj) { adopted_.push_back(std::move(obj)); }

  ~Renderer();
  Renderer(const Renderer&) = delete;
  Renderer& operator=(const Renderer&) = delete;

 private:
  enum class Flow { Normal, Break, Continue };
  struct Frame {
    std::vector<std::pair<std::string, Value>> vars;
  };
  friend struct EvalGuard;

  // Statements (renderer.cpp).
  Flow exec_body(const Body& body);
  Flow exec(const Stmt& s);
  Flow exec_for(const Stmt& s);
  Flow exec_block(const Stmt& s);
  void exec_set(const Stmt& s);
  MarkedText capture(const Body& body);
  Value call_macro(const Value& callee, CallArgs& args);
  void emit(std::string_view text);  // the template's own text
  void emit_value(const Value& v);   // str(v), with its marks

  // Scopes (renderer.cpp).
  Value lookup(const std::string& name) const;
  void assign(const std::string& name, Value value);
  void assign_target(const Target& target, const Value& value);
  void push_frame() { frames_.emplace_back(); }
  void pop_frame() { frames_.pop_back(); }

  // Expressions (eval_expr.cpp).
  Value eval(const Expr& e);
  Value eval_inner(const Expr& e);
  Value eval_collection(const Expr& e);
  Value eval_call(const Expr& e);
  Value eval_operator(const Expr& e);
  Value eval_subscript(const Expr& e);
  CallArgs eval_args(const Expr& e);
  Value eval_slice(const Value& target, const Expr& slice);
  bool eval_compare(const Expr& e);
  Value apply_filter_chain(const Expr& chain, Value input);

  const RenderOptions& options_;
  Dict context_;
  std::vector<Frame> frames_;  // frames_[0] is the template's top level
  size_t floor_ = 0;           // lookups see frames_[floor_..] (a macro's own frames) and frames_[0]
  MarkedText* out_ = nullptr;  // the output, or the buffer of a macro call / block being captured
  int depth_ = 0;
  uint64_t steps_ = 0;
  std::vector<std::shared_ptr<Object>> adopted_;
};

// Steps of work for building or scanning a value: lists and dicts cost one step per 2 items,
// strings one per 16 bytes (small values cost nothing extra). Passing a value around (lookups,
// attribute access) shares it and costs nothing.
inline uint64_t work_units(const Value& v) {
  if (v.is_string()) return v.as_string().size() / 16;
  if (v.is_list()) return v.as_list().size() / 2;
  if (v.is_dict()) return v.as_dict().size() / 2;
  return 0;
}

// Counts one level of evaluation nesting and one step for its lifetime; fails past the limits.
struct EvalGuard {
  explicit EvalGuard(Renderer* r);
  ~EvalGuard() { --renderer->depth_; }
  EvalGuard(const EvalGuard&) = delete;
  EvalGuard& operator=(const EvalGuard&) = delete;
  Renderer* renderer;
};

}  // namespace cellserve::engine::chat
