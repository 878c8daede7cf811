// Value: the dynamic value a chat template computes with. It follows Python's object model (which
// is what Jinja2 runs on), cut down to what a chat template can receive from JSON or build itself:
// undefined, None, bool, int, float, str, list/tuple, dict (insertion-ordered), callables
// (builtins, bound methods, macros) and attribute objects (namespace(), the loop variable).
//
// Values are cheap to copy: lists, dicts and callables are shared and immutable (Hugging Face
// renders with Jinja2's ImmutableSandboxedEnvironment, where list.append and friends are refused);
// only namespace() objects are mutable, through `{% set ns.attr = ... %}`.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <variant>
#include <vector>

#include "engine/chat/marked_text.h"

namespace cellserve::engine::chat {

class Value;
class Dict;
class Object;
class Renderer;
struct CallArgs;
struct Stmt;

using ValueList = std::vector<Value>;

// A builtin function or bound method: receives the renderer (for limits, filters, options) and
// the call's arguments; reports failures by throwing TemplateError (see error.h).
using NativeFn = std::function<Value(Renderer&, CallArgs&)>;

// Something a template can call: exactly one of `native` and `macro` is set.
struct Callable {
  std::string name;
  NativeFn native;
  const Stmt* macro = nullptr;  // a {% macro %}; owned by the parsed template, which outlives rendering
  // For a macro defined inside a loop, macro or {% with %}: the local variables it could see there
  // (Jinja2 macros are closures). Empty for macros defined at the top level.
  std::vector<std::pair<std::string, Value>> closure;
};

class Value {
 public:
  enum class Kind : uint8_t { Undefined, None, Bool, Int, Float, String, List, Dict, Callable, Object };

  // An undefined value with no hint.
  Value() = default;

  // `hint` is the message an operation on this value fails with ("'foo' is undefined"). An
  // `unsafe` undefined stands for an attribute the sandbox refuses (list.append): printing it gives
  // "" like any undefined, using it fails with a security error.
  static Value undefined(std::string hint, bool unsafe = false);
  static Value none();
  static Value boolean(bool b);
  static Value integer(int64_t i);
  static Value floating(double d);
  // `markup` marks a string as markupsafe.Markup (from |safe or |escape); see docs/chat_templates.md.
  static Value string(std::string s, bool markup = false);
  // A string some of whose bytes came from the request's data (see marked_text.h, user_data.h).
  static Value string(MarkedText text, bool markup = false);
  static Value list(ValueList items);
  static Value tuple(ValueList items);
  static Value dict(Dict d);
  static Value callable(std::shared_ptr<const Callable> fn);
  static Value object(std::shared_ptr<Object> obj);

  Kind kind() const { return kind_; }
  bool is_undefined() const { return kind_ == Kind::Undefined; }
  bool is_none() const { return kind_ == Kind::None; }
  bool is_bool() const { return kind_ == Kind::Bool; }
  bool is_int() const { return kind_ == Kind::Int; }
  bool is_float() const { return kind_ == Kind::Float; }
  // Python's numbers.Number: bool, int or float.
  bool is_number() const { return kind_ == Kind::Bool || kind_ == Kind::Int || kind_ == Kind::Float; }
  // int or bool (Python's bool is an int).
  bool is_integral() const { return kind_ == Kind::Bool || kind_ == Kind::Int; }
  bool is_string() const { return kind_ == Kind::String; }
  bool is_list() const { return kind_ == Kind::List; }  // lists and tuples
  bool is_tuple() const { return kind_ == Kind::List && flag_; }
  bool is_dict() const { return kind_ == Kind::Dict; }
  bool is_callable() const { return kind_ == Kind::Callable; }
  bool is_object() const { return kind_ == Kind::Object; }
  bool is_markup() const { return kind_ == Kind::String && flag_; }
  bool is_unsafe_undefined() const { return kind_ == Kind::Undefined && flag_; }

  // Accessors. REQUIRES: the matching kind (as_int also accepts Bool, as_float any number).
  bool as_bool() const { return int_ != 0; }
  int64_t as_int() const { return int_; }
  double as_float() const { return kind_ == Kind::Float ? float_ : static_cast<double>(int_); }
  const std::string& as_string() const { return std::get<std::string>(payload_); }
  const ValueList& as_list() const { return *std::get<std::shared_ptr<const ValueList>>(payload_); }
  const Dict& as_dict() const { return *std::get<std::shared_ptr<const Dict>>(payload_); }
  const Callable& as_callable() const { return *std::get<std::shared_ptr<const Callable>>(payload_); }
  const std::shared_ptr<Object>& as_object() const { return std::get<std::shared_ptr<Object>>(payload_); }
  // The failure message of an undefined value.
  const std::string& undefined_hint() const { return std::get<std::string>(payload_); }
  // The bytes of a string that came from the request's data (a span list); empty for strings the
  // template wrote and for every other kind.
  std::span<const TextSpan> user_spans() const {
    return spans_ ? std::span<const TextSpan>(*spans_) : std::span<const TextSpan>();
  }

  // Python's bool(value).
  bool truthy() const;
  // Python's type name ("int", "str", "NoneType", "Undefined", "Markup", ...), for error messages.
  std::string type_name() const;
  // Python's hashable: everything except lists and dicts (tuples are hashable when their items are).
  bool is_hashable() const;
  // True when both values are the same container/callable/object (Python's `is`); for scalars,
  // equality of kind and value.
  bool same_as(const Value& other) const;

 private:
  using Payload = std::variant<std::monostate, std::string, std::shared_ptr<const ValueList>,
                               std::shared_ptr<const Dict>, std::shared_ptr<const Callable>, std::shared_ptr<Object>>;
  Kind kind_ = Kind::Undefined;
  bool flag_ = false;  // String: markup; List: tuple; Undefined: unsafe
  int64_t int_ = 0;    // Bool, Int
  double float_ = 0;   // Float
  Payload payload_ = std::string();
  std::shared_ptr<const std::vector<TextSpan>> spans_;  // String: user_spans(), null when none
};

// A dict that keeps insertion order (Python 3.7+). Small dicts are searched linearly; past
// kIndexThreshold entries string keys are also indexed by hash, so a template walking a large
// JSON object key by key stays linear.
class Dict {
 public:
  using Entry = std::pair<Value, Value>;

  const std::vector<Entry>& entries() const { return entries_; }
  size_t size() const { return entries_.size(); }
  bool empty() const { return entries_.empty(); }

  // The value under `key` (Python equality: 1 == 1.0 == True), or nullptr.
  const Value* find(const Value& key) const;
  const Value* find(std::string_view key) const;
  // Replaces the value under `key` or appends a new entry.
  void set(Value key, Value value);
  // Appends without looking for an existing key. REQUIRES: `key` is not present.
  void append(Value key, Value value);

 private:
  static constexpr size_t kIndexThreshold = 16;
  void index_entry(size_t i);
  // The position of string key `key`, or size() when absent.
  size_t index_of(std::string_view key) const;

  std::vector<Entry> entries_;
  std::unordered_map<std::string, size_t> string_index_;  // built once size > kIndexThreshold
};

// An object with named attributes: namespace() and the loop variable.
class Object {
 public:
  virtual ~Object() = default;
  // Python's type name ("Namespace", "LoopContext").
  virtual const char* type_name() const = 0;
  // The attribute `name`, or an undefined value.
  virtual Value get_attr(std::string_view name) const = 0;
  // Assigns an attribute; false when the object does not allow it.
  virtual bool set_attr(const std::string& name, Value value);
  // Python's repr(); `depth` guards against reference cycles (ns.self = ns).
  virtual std::string repr(int depth) const = 0;
  // Drops held values; the renderer calls it when a render ends so that reference cycles a
  // template built (ns.self = ns) do not leak.
  virtual void clear() {}
};

// Python's `a == b` (numbers compare across int/float/bool, dicts ignore order, lists and tuples
// never equal each other, undefined equals undefined). Throws on values nested too deeply.
bool py_equal(const Value& a, const Value& b, int depth = 0);

// Deepest nesting of lists/dicts that comparisons, repr and JSON output will walk (a namespace can
// contain itself, so every recursive walk is bounded).
inline constexpr int kMaxValueDepth = 128;

}  // namespace cellserve::engine::chat
