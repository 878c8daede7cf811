#include "engine/chat/value.h"

#include "engine/chat/error.h"

namespace cellserve::engine::chat {

void fail_undefined(const Value& undefined) {
  const std::string& hint = undefined.undefined_hint();
  if (undefined.is_unsafe_undefined()) fail(ErrorKind::Security, hint);
  fail(ErrorKind::Undefined, hint.empty() ? "value is undefined" : hint);
}

Value Value::undefined(std::string hint, bool unsafe) {
  Value v;
  v.flag_ = unsafe;
  v.payload_ = std::move(hint);
  return v;
}

Value Value::none() {
  Value v;
  v.kind_ = Kind::None;
  return v;
}

Value Value::boolean(bool b) {
  Value v;
  v.kind_ = Kind::Bool;
  v.int_ = b ? 1 : 0;
  return v;
}

Value Value::integer(int64_t i) {
  Value v;
  v.kind_ = Kind::Int;
  v.int_ = i;
  return v;
}

Value Value::floating(double d) {
  Value v;
  v.kind_ = Kind::Float;
  v.float_ = d;
  return v;
}

Value Value::string(std::string s, bool markup) {
  Value v;
  v.kind_ = Kind::String;
  v.flag_ = markup;
  v.payload_ = std::move(s);
  return v;
}

Value Value::string(MarkedText text, bool markup) {
  Value v = string(std::move(text.text), markup);
  if (!text.user_spans.empty()) v.spans_ = std::make_shared<const std::vector<TextSpan>>(std::move(text.user_spans));
  return v;
}

Value Value::list(ValueList items) {
  Value v;
  v.kind_ = Kind::List;
  v.payload_ = std::make_shared<const ValueList>(std::move(items));
  return v;
}

Value Value::tuple(ValueList items) {
  Value v = list(std::move(items));
  v.flag_ = true;
  return v;
}

Value Value::dict(Dict d) {
  Value v;
  v.kind_ = Kind::Dict;
  v.payload_ = std::make_shared<const Dict>(std::move(d));
  return v;
}

Value Value::callable(std::shared_ptr<const Callable> fn) {
  Value v;
  v.kind_ = Kind::Callable;
  v.payload_ = std::move(fn);
  return v;
}

Value Value::object(std::shared_ptr<Object> obj) {
  Value v;
  v.kind_ = Kind::Object;
  v.payload_ = std::move(obj);
  return v;
}

bool Value::truthy() const {
  switch (kind_) {
    case Kind::Undefined:
    case Kind::None:
      return false;
    case Kind::Bool:
    case Kind::Int:
      return int_ != 0;
    case Kind::Float:
      return float_ != 0.0;
    case Kind::String:
      return !as_string().empty();
    case Kind::List:
      return !as_list().empty();
    case Kind::Dict:
      return !as_dict().empty();
    case Kind::Callable:
    case Kind::Object:
      return true;
  }
  return false;
}

std::string Value::type_name() const {
  switch (kind_) {
    case Kind::Undefined:
      return "Undefined";
    case Kind::None:
      return "NoneType";
    case Kind::Bool:
      return "bool";
    case Kind::Int:
      return "int";
    case Kind::Float:
      return "float";
    case Kind::String:
      return flag_ ? "Markup" : "str";
    case Kind::List:
      return flag_ ? "tuple" : "list";
    case Kind::Dict:
      return "dict";
    case Kind::Callable:
      return as_callable().macro != nullptr ? "Macro" : "builtin_function_or_method";
    case Kind::Object:
      return as_object()->type_name();
  }
  return "object";
}

bool Value::is_hashable() const {
  if (kind_ == Kind::Dict) return false;
  if (kind_ != Kind::List) return true;
  if (!flag_) return false;
  for (const Value& item : as_list()) {
    if (!item.is_hashable()) return false;
  }
  return true;
}

bool Value::same_as(const Value& other) const {
  if (kind_ != other.kind_) return false;
  switch (kind_) {
    case Kind::Undefined:
    case Kind::None:
      return true;
    case Kind::Bool:
    case Kind::Int:
      return int_ == other.int_;
    case Kind::Float:
      return float_ == other.float_;
    case Kind::String:
      return as_string() == other.as_string();
    default:
      break;
  }
  return payload_ == other.payload_;  // compares the shared pointers: identity
}

bool Object::set_attr(const std::string&, Value) { return false; }

const Value* Dict::find(const Value& key) const {
  if (key.is_string()) return find(std::string_view(key.as_string()));
  for (const Entry& e : entries_) {
    if (py_equal(e.first, key)) return &e.second;
  }
  return nullptr;
}

const Value* Dict::find(std::string_view key) const {
  const size_t i = index_of(key);
  return i == entries_.size() ? nullptr : &entries_[i].second;
}

size_t Dict::index_of(std::string_view key) const {
  if (entries_.size() > kIndexThreshold) {
    auto it = string_index_.find(std::string(key));
    return it == string_index_.end() ? entries_.size() : it->second;
  }
  for (size_t i = 0; i < entries_.size(); ++i) {
    if (entries_[i].first.is_string() && entries_[i].first.as_string() == key) return i;
  }
  return entries_.size();
}

void Dict::index_entry(size_t i) {
  if (entries_[i].first.is_string()) string_index_.emplace(entries_[i].first.as_string(), i);
}

void Dict::set(Value key, Value value) {
  if (key.is_string()) {
    const size_t i = index_of(key.as_string());
    if (i < entries_.size()) {
      entries_[i].second = std::move(value);
      return;
    }
  } else {
    for (Entry& e : entries_) {
      if (py_equal(e.first, key)) {
        e.second = std::move(value);
        return;
      }
    }
  }
  append(std::move(key), std::move(value));
}

void Dict::append(Value key, Value value) {
  entries_.emplace_back(std::move(key), std::move(value));
  if (entries_.size() == kIndexThreshold + 1) {
    for (size_t i = 0; i < entries_.size(); ++i) index_entry(i);
  } else if (entries_.size() > kIndexThreshold + 1) {
    index_entry(entries_.size() - 1);
  }
}

bool py_equal(const Value& a, const Value& b, int depth) {
  using Kind = Value::Kind;
  if (depth > kMaxValueDepth) fail(ErrorKind::Limit, "values nested too deeply to compare");
  if (a.is_number() && b.is_number()) {
    if (a.is_float() || b.is_float()) return a.as_float() == b.as_float();
    return a.as_int() == b.as_int();
  }
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case Kind::Undefined:
    case Kind::None:
      return true;
    case Kind::String:
      return a.as_string() == b.as_string();
    case Kind::List: {
      if (a.is_tuple() != b.is_tuple()) return false;
      const ValueList& x = a.as_list();
      const ValueList& y = b.as_list();
      if (x.size() != y.size()) return false;
      for (size_t i = 0; i < x.size(); ++i) {
        if (!py_equal(x[i], y[i], depth + 1)) return false;
      }
      return true;
    }
    case Kind::Dict: {
      const Dict& x = a.as_dict();
      const Dict& y = b.as_dict();
      if (x.size() != y.size()) return false;
      for (const auto& [key, value] : x.entries()) {
        const Value* other = y.find(key);
        if (other == nullptr || !py_equal(value, *other, depth + 1)) return false;
      }
      return true;
    }
    default:
      return a.same_as(b);
  }
}

}  // namespace cellserve::engine::chat
