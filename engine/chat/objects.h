// The attribute objects templates use: namespace() (mutable state that survives loop scopes) and
// the `loop` variable of {% for %}.
#pragma once

#include <memory>
#include <string>

#include "engine/chat/value.h"

namespace cellserve::engine::chat {

// jinja2.utils.Namespace: attributes set by namespace(a=1) and {% set ns.a = ... %}.
class NamespaceObject : public Object {
 public:
  explicit NamespaceObject(Dict attrs) : attrs_(std::move(attrs)) {}
  const char* type_name() const override { return "Namespace"; }
  Value get_attr(std::string_view name) const override;
  bool set_attr(const std::string& name, Value value) override;
  std::string repr(int depth) const override;
  void clear() override { attrs_ = Dict(); }

 private:
  Dict attrs_;
};

// jinja2.runtime.LoopContext for one loop: index/index0/revindex/revindex0/first/last/length,
// previtem/nextitem, depth/depth0, cycle(...) and changed(...). The renderer moves `index` along.
class LoopObject : public Object, public std::enable_shared_from_this<LoopObject> {
 public:
  explicit LoopObject(std::shared_ptr<const ValueList> items) : items_(std::move(items)) {}
  const char* type_name() const override { return "LoopContext"; }
  Value get_attr(std::string_view name) const override;
  std::string repr(int depth) const override;
  void clear() override { last_changed_ = Value(); }

  void set_index(size_t index) { index_ = index; }
  // State of loop.changed(): the last value seen.
  bool changed(const Value& v);

 private:
  std::shared_ptr<const ValueList> items_;
  size_t index_ = 0;
  bool has_last_changed_ = false;
  Value last_changed_;
};

}  // namespace cellserve::engine::chat
