#include "engine/chat/objects.h"

#include "engine/chat/call_args.h"
#include "engine/chat/error.h"
#include "engine/chat/py_format.h"

namespace cellserve::engine::chat {

Value NamespaceObject::get_attr(std::string_view name) const {
  if (const Value* v = attrs_.find(name)) return *v;
  return Value::undefined("'jinja2.utils.Namespace object' has no attribute '" + std::string(name) + "'");
}

bool NamespaceObject::set_attr(const std::string& name, Value value) {
  attrs_.set(Value::string(name), std::move(value));
  return true;
}

std::string NamespaceObject::repr(int depth) const { return "<Namespace " + py_repr(Value::dict(attrs_), depth) + ">"; }

Value LoopObject::get_attr(std::string_view name) const {
  const auto n = static_cast<int64_t>(items_->size());
  const auto i = static_cast<int64_t>(index_);
  if (name == "index") return Value::integer(i + 1);
  if (name == "index0") return Value::integer(i);
  if (name == "revindex") return Value::integer(n - i);
  if (name == "revindex0") return Value::integer(n - i - 1);
  if (name == "first") return Value::boolean(i == 0);
  if (name == "last") return Value::boolean(i == n - 1);
  if (name == "length") return Value::integer(n);
  if (name == "depth") return Value::integer(1);
  if (name == "depth0") return Value::integer(0);
  if (name == "previtem") {
    return i > 0 ? (*items_)[index_ - 1] : Value::undefined("there is no previous item");
  }
  if (name == "nextitem") {
    return i + 1 < n ? (*items_)[index_ + 1] : Value::undefined("there is no next item");
  }
  if (name == "cycle") {
    auto self = std::const_pointer_cast<LoopObject>(shared_from_this());
    auto fn = std::make_shared<Callable>();
    fn->name = "loop.cycle";
    fn->native = [self](Renderer&, CallArgs& args) -> Value {
      if (args.positional.empty()) fail_type("no items for cycling given");
      return args.positional[self->index_ % args.positional.size()];
    };
    return Value::callable(std::move(fn));
  }
  if (name == "changed") {
    auto self = std::const_pointer_cast<LoopObject>(shared_from_this());
    auto fn = std::make_shared<Callable>();
    fn->name = "loop.changed";
    fn->native = [self](Renderer&, CallArgs& args) -> Value {
      return Value::boolean(self->changed(Value::tuple(args.positional)));
    };
    return Value::callable(std::move(fn));
  }
  return Value::undefined("'jinja2.runtime.LoopContext object' has no attribute '" + std::string(name) + "'");
}

bool LoopObject::changed(const Value& v) {
  if (has_last_changed_ && py_equal(v, last_changed_)) return false;
  has_last_changed_ = true;
  last_changed_ = v;
  return true;
}

std::string LoopObject::repr(int) const {
  return "<LoopContext " + std::to_string(index_ + 1) + "/" + std::to_string(items_->size()) + ">";
}

}  // namespace cellserve::engine::chat
