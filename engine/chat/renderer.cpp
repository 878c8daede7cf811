// Statement execution, scopes, macro calls, and Jinja2's sandboxed attribute/item access.
#include "engine/chat/renderer.h"

#include <algorithm>

#include "engine/chat/builtins.h"
#include "engine/chat/error.h"
#include "engine/chat/filters.h"
#include "engine/chat/jinja_tests.h"
#include "engine/chat/methods.h"
#include "engine/chat/objects.h"
#include "engine/chat/operators.h"
#include "engine/chat/py_format.h"
#include "engine/chat/user_data.h"
#include "engine/chat/utf8.h"

namespace cellserve::engine::chat {
namespace {

// Jinja2's object_type_repr: "dict object", "None", ...
std::string object_type(const Value& v) { return v.is_none() ? "None" : v.type_name() + " object"; }

Value missing_attribute(const Value& obj, const std::string& name) {
  return Value::undefined("'" + object_type(obj) + "' has no attribute '" + name + "'");
}

}  // namespace

EvalGuard::EvalGuard(Renderer* r) : renderer(r) {
  if (++renderer->depth_ > renderer->options_.max_depth) {
    throw TemplateError(ErrorKind::Limit, "template recursion too deep (more than " +
                                              std::to_string(renderer->options_.max_depth) + " levels)");
  }
  if (++renderer->steps_ > renderer->options_.max_steps) {
    throw TemplateError(ErrorKind::Limit, "template takes too many steps (more than " +
                                              std::to_string(renderer->options_.max_steps) + ")");
  }
}

Renderer::Renderer(const RenderOptions& options, Dict context) : options_(options), context_(std::move(context)) {}

Renderer::~Renderer() {
  for (const auto& obj : adopted_) obj->clear();
}

MarkedText Renderer::render(const Template& tmpl) {
  frames_.clear();
  frames_.emplace_back();
  floor_ = 0;
  MarkedText out;
  out_ = &out;
  exec_body(tmpl.body);
  out_ = nullptr;
  return out;
}

void Renderer::check_size(size_t size) const {
  if (size > options_.max_output_bytes) {
    throw TemplateError(ErrorKind::Limit,
                        "output exceeds the limit of " + std::to_string(options_.max_output_bytes) + " bytes");
  }
}

void Renderer::charge(uint64_t n) {
  steps_ += n;
  if (steps_ > options_.max_steps) {
    throw TemplateError(ErrorKind::Limit,
                        "template takes too many steps (more than " + std::to_string(options_.max_steps) + ")");
  }
}

void Renderer::emit(std::string_view text) {
  check_size(out_->text.size() + text.size());
  out_->append(text);
}

void Renderer::emit_value(const Value& v) {
  if (v.is_string()) {
    check_size(out_->text.size() + v.as_string().size());
    out_->append(v.as_string(), v.user_spans());
    return;
  }
  const std::string text = py_str(v);
  check_size(out_->text.size() + text.size());
  out_->append(text, has_user_data(v));
}

Renderer::Flow Renderer::exec_body(const Body& body) {
  for (const auto& s : body) {
    const Flow flow = exec(*s);
    if (flow != Flow::Normal) return flow;
  }
  return Flow::Normal;
}

Renderer::Flow Renderer::exec(const Stmt& s) {
  EvalGuard guard(this);
  try {
    switch (s.kind) {
      case Stmt::Kind::Text:
        emit(s.text);
        break;
      case Stmt::Kind::Output:
        emit_value(eval(*s.expr));
        break;
      case Stmt::Kind::If:
        for (const IfBranch& branch : s.branches) {
          if (!branch.test || eval(*branch.test).truthy()) return exec_body(branch.body);
        }
        break;
      case Stmt::Kind::For:
        return exec_for(s);
      case Stmt::Kind::Set:
        exec_set(s);
        break;
      case Stmt::Kind::SetBlock:
      case Stmt::Kind::Macro:
      case Stmt::Kind::Scope:
      case Stmt::Kind::FilterBlock:
        return exec_block(s);
      case Stmt::Kind::Break:
        return Flow::Break;
      case Stmt::Kind::Continue:
        return Flow::Continue;
    }
  } catch (TemplateError& e) {
    if (e.line() == 0) e.set_line(s.line);
    throw;
  }
  return Flow::Normal;
}

// Statements with bodies or closures, kept out of exec() so that its frame (paid at every level
// of nesting) stays small.
[[gnu::noinline]] Renderer::Flow Renderer::exec_block(const Stmt& s) {
  switch (s.kind) {
    case Stmt::Kind::SetBlock: {
      Value v = Value::string(capture(s.body));
      if (s.expr) v = apply_filter_chain(*s.expr, std::move(v));
      assign_target(s.target, v);
      return Flow::Normal;
    }
    case Stmt::Kind::Macro: {
      auto fn = std::make_shared<Callable>();
      fn->name = s.name;
      fn->macro = &s;
      // Outside the top level the macro closes over the locals it can see (innermost wins).
      for (size_t i = frames_.size(); i-- > std::max<size_t>(floor_, 1);) {
        for (const auto& var : frames_[i].vars) {
          const bool shadowed =
              std::any_of(fn->closure.begin(), fn->closure.end(), [&](const auto& c) { return c.first == var.first; });
          if (!shadowed) fn->closure.push_back(var);
        }
      }
      assign(s.name, Value::callable(std::move(fn)));
      return Flow::Normal;
    }
    case Stmt::Kind::Scope: {
      std::vector<Value> values;
      for (const auto& [target, expr] : s.assigns) values.push_back(eval(*expr));
      push_frame();
      for (size_t i = 0; i < values.size(); ++i) assign_target(s.assigns[i].first, values[i]);
      const Flow flow = exec_body(s.body);
      pop_frame();
      return flow;
    }
    case Stmt::Kind::FilterBlock:
      emit_value(apply_filter_chain(*s.expr, Value::string(capture(s.body))));
      return Flow::Normal;
    default:
      return Flow::Normal;
  }
}

MarkedText Renderer::capture(const Body& body) {
  MarkedText buffer;
  MarkedText* saved = out_;
  out_ = &buffer;
  try {
    exec_body(body);
  } catch (...) {
    out_ = saved;
    throw;
  }
  out_ = saved;
  return buffer;
}

Renderer::Flow Renderer::exec_for(const Stmt& s) {
  ValueList items = iterate(eval(*s.expr));
  charge(items.size());
  if (s.test) {
    ValueList kept;
    for (Value& item : items) {
      push_frame();
      assign_target(s.target, item);
      const bool keep = eval(*s.test).truthy();
      pop_frame();
      if (keep) kept.push_back(std::move(item));
    }
    items = std::move(kept);
  }
  if (items.empty()) return exec_body(s.else_body);
  auto shared = std::make_shared<const ValueList>(std::move(items));
  auto loop = std::make_shared<LoopObject>(shared);
  const Value loop_value = Value::object(loop);
  // Jinja2 runs the else block unless some iteration reached the end of the body: a loop whose
  // every iteration ends in break or continue also takes the else branch.
  bool body_completed = false;
  for (size_t i = 0; i < shared->size(); ++i) {
    charge(1);
    loop->set_index(i);
    push_frame();
    assign_target(s.target, (*shared)[i]);
    assign("loop", loop_value);
    Flow flow = Flow::Normal;
    try {
      flow = exec_body(s.body);
    } catch (...) {
      pop_frame();
      loop->clear();
      throw;
    }
    pop_frame();
    if (flow == Flow::Normal) body_completed = true;
    if (flow == Flow::Break) break;
  }
  loop->clear();
  if (!body_completed) return exec_body(s.else_body);
  return Flow::Normal;
}

void Renderer::exec_set(const Stmt& s) {
  Value v = eval(*s.expr);
  if (s.target.attr.empty()) return assign_target(s.target, v);
  const Value ns = lookup(s.target.name);
  if (!ns.is_object() || !ns.as_object()->set_attr(s.target.attr, std::move(v))) {
    fail_type("cannot assign attribute on non-namespace object");
  }
}

Value Renderer::lookup(const std::string& name) const {
  for (size_t i = frames_.size(); i-- > floor_;) {
    for (const auto& [key, value] : frames_[i].vars) {
      if (key == name) return value;
    }
  }
  if (floor_ > 0) {
    for (const auto& [key, value] : frames_[0].vars) {
      if (key == name) return value;
    }
  }
  if (const Value* v = context_.find(name)) return *v;
  if (const Value* v = find_global(name)) return *v;
  return Value::undefined("'" + name + "' is undefined");
}

void Renderer::assign(const std::string& name, Value value) {
  for (auto& [key, existing] : frames_.back().vars) {
    if (key == name) {
      existing = std::move(value);
      return;
    }
  }
  frames_.back().vars.emplace_back(name, std::move(value));
}

void Renderer::assign_target(const Target& target, const Value& value) {
  if (!target.is_tuple) return assign(target.name, value);
  const ValueList items = iterate(value);
  if (items.size() != target.items.size()) {
    fail_type(items.size() > target.items.size()
                  ? "too many values to unpack (expected " + std::to_string(target.items.size()) + ")"
                  : "not enough values to unpack (expected " + std::to_string(target.items.size()) + ", got " +
                        std::to_string(items.size()) + ")");
  }
  for (size_t i = 0; i < items.size(); ++i) assign_target(target.items[i], items[i]);
}

Value Renderer::call(const Value& callee, CallArgs& args) {
  if (callee.is_undefined()) fail_undefined(callee);
  if (!callee.is_callable()) fail_type("'" + callee.type_name() + "' object is not callable");
  const Callable& fn = callee.as_callable();
  if (fn.macro != nullptr) return call_macro(callee, args);
  return fn.native(*this, args);
}

Value Renderer::call_macro(const Value& callee, CallArgs& args) {
  const Callable& fn = callee.as_callable();
  const Stmt& m = *fn.macro;
  const size_t n_params = m.params.size();
  if (args.positional.size() > n_params && !m.uses_varargs) {
    fail_type("macro '" + m.name + "' takes not more than " + std::to_string(n_params) + " argument(s)");
  }
  std::vector<std::optional<Value>> bound(n_params);
  for (size_t i = 0; i < n_params && i < args.positional.size(); ++i) bound[i] = args.positional[i];
  Dict extra_kwargs;
  for (const auto& [key, value] : args.keyword) {
    size_t i = 0;
    while (i < n_params && m.params[i].name != key) ++i;
    if (i == n_params) {
      if (!m.uses_kwargs) fail_type("macro '" + m.name + "' takes no keyword argument '" + key + "'");
      extra_kwargs.set(Value::string(key), value);
    } else if (bound[i]) {
      fail_type("macro '" + m.name + "' got multiple values for argument '" + key + "'");
    } else {
      bound[i] = value;
    }
  }
  const size_t saved_floor = floor_;
  const size_t saved_frames = frames_.size();
  if (!fn.closure.empty()) {
    frames_.emplace_back();
    frames_.back().vars.emplace_back(m.name, callee);  // the macro itself, for recursion
    frames_.back().vars.insert(frames_.back().vars.end(), fn.closure.begin(), fn.closure.end());
  }
  floor_ = frames_.size() - (fn.closure.empty() ? 0 : 1);
  frames_.emplace_back();
  MarkedText out;
  try {
    for (size_t i = 0; i < n_params; ++i) {
      const MacroParam& p = m.params[i];
      if (bound[i])
        assign(p.name, *bound[i]);
      else if (p.default_value)
        assign(p.name, eval(*p.default_value));
      else
        assign(p.name, Value::undefined("parameter '" + p.name + "' was not provided"));
    }
    if (m.uses_varargs) {
      ValueList rest;
      for (size_t i = n_params; i < args.positional.size(); ++i) rest.push_back(args.positional[i]);
      assign("varargs", Value::tuple(std::move(rest)));
    }
    if (m.uses_kwargs) assign("kwargs", Value::dict(std::move(extra_kwargs)));
    out = capture(m.body);
  } catch (...) {
    frames_.resize(saved_frames);
    floor_ = saved_floor;
    throw;
  }
  frames_.resize(saved_frames);
  floor_ = saved_floor;
  return Value::string(std::move(out));
}

Value Renderer::get_attr(const Value& obj, const std::string& name) {
  if (obj.is_undefined()) fail_undefined(obj);
  if (name.size() >= 2 && name[0] == '_' && name[1] == '_') {
    return Value::undefined("access to attribute '" + name + "' of '" + obj.type_name() + "' object is unsafe.", true);
  }
  if (obj.is_object()) return obj.as_object()->get_attr(name);
  if (auto method = find_method(obj, name)) return *method;
  if (obj.is_dict()) {
    if (const Value* v = obj.as_dict().find(name)) return *v;
  }
  return missing_attribute(obj, name);
}

Value Renderer::get_item(const Value& obj, const Value& key) {
  if (obj.is_undefined()) fail_undefined(obj);
  if (obj.is_string()) charge(work_units(obj));  // indexing a str counts characters
  switch (obj.kind()) {
    case Value::Kind::List:
    case Value::Kind::String:
      if (key.is_integral()) {
        int64_t i = key.as_int();
        if (obj.is_string() && i >= 0) {  // walk to the character instead of splitting the string
          const std::string& str = obj.as_string();
          size_t pos = 0;
          for (int64_t k = 0; k < i && pos < str.size(); ++k) utf8_decode(str, &pos);
          if (pos < str.size()) {
            const size_t start = pos;
            utf8_decode(str, &pos);
            return substring(obj, start, pos - start, false);
          }
          return Value::undefined(object_type(obj) + " has no element " + py_repr(key));
        }
        const int64_t n = py_len(obj);
        if (i < 0) i += n;
        if (i < 0 || i >= n) return Value::undefined(object_type(obj) + " has no element " + py_repr(key));
        if (obj.is_list()) return obj.as_list()[static_cast<size_t>(i)];
        return slice_value(obj, i, i + 1, 1);
      }
      break;
    case Value::Kind::Dict:
      if (key.is_hashable()) {
        if (const Value* v = obj.as_dict().find(key)) return *v;
      }
      break;
    case Value::Kind::Object:
      if (key.is_string()) return obj.as_object()->get_attr(key.as_string());
      break;
    default:
      break;
  }
  if (key.is_string()) {
    if (auto method = find_method(obj, key.as_string())) return *method;
    return missing_attribute(obj, key.as_string());
  }
  return Value::undefined(object_type(obj) + " has no element " + py_repr(key));
}

Value Renderer::apply_filter(const std::string& name, const Value& input, CallArgs& args) {
  const FilterFn fn = find_filter(name);
  if (fn == nullptr) fail(ErrorKind::Unsupported, "unknown or unsupported filter '" + name + "'");
  // Filters scan their input, except these, which take constant time on a list or dict (so that
  // `messages|length` inside a loop stays cheap for long conversations).
  const bool constant_time =
      (input.is_list() || input.is_dict()) &&
      (name == "length" || name == "count" || name == "first" || name == "last" || name == "default" || name == "d");
  if (!constant_time) charge(work_units(input));
  return fn(*this, input, args);
}

bool Renderer::apply_test(const std::string& name, const Value& input, CallArgs& args) {
  const TestFn fn = find_test(name);
  if (fn == nullptr) fail(ErrorKind::Unsupported, "unknown or unsupported test '" + name + "'");
  if (input.is_string()) charge(work_units(input));
  for (const Value& arg : args.positional) charge(work_units(arg));
  return fn(*this, input, args);
}

}  // namespace cellserve::engine::chat
