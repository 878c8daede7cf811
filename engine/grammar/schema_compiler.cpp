// JSON Schema -> SchemaGraph (schema.h). The supported subset is in docs/grammar.md.
#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include <boost/json.hpp>

#include "engine/grammar/output_constraint.h"
#include "engine/grammar/schema.h"
#include "engine/grammar/schema_automata.h"
#include "engine/grammar/string_dfa.h"

namespace cellserve::engine::grammar {
namespace {

namespace json = boost::json;

// Keywords that only annotate; they never constrain the output.
const std::set<std::string_view>& ignored_keywords() {
  static const std::set<std::string_view> k = {
      "$schema",          "$id",        "$comment", "$anchor",    "$defs",    "definitions", "title",
      "description",      "default",    "examples", "deprecated", "readOnly", "writeOnly",   "contentEncoding",
      "contentMediaType", "$vocabulary"};
  return k;
}

// Keywords that constrain in ways the matcher cannot enforce.
const std::set<std::string_view>& unsupported_keywords() {
  static const std::set<std::string_view> k = {"patternProperties",
                                               "uniqueItems",
                                               "contains",
                                               "minContains",
                                               "maxContains",
                                               "not",
                                               "if",
                                               "then",
                                               "else",
                                               "dependentRequired",
                                               "dependentSchemas",
                                               "dependencies",
                                               "propertyNames",
                                               "unevaluatedProperties",
                                               "unevaluatedItems",
                                               "additionalItems",
                                               "$dynamicRef",
                                               "$recursiveRef"};
  return k;
}

const std::set<std::string_view>& object_keywords() {
  static const std::set<std::string_view> k = {"properties", "required", "additionalProperties", "minProperties",
                                               "maxProperties"};
  return k;
}
const std::set<std::string_view>& array_keywords() {
  static const std::set<std::string_view> k = {"items", "prefixItems", "minItems", "maxItems"};
  return k;
}
const std::set<std::string_view>& string_keywords() {
  static const std::set<std::string_view> k = {"minLength", "maxLength", "pattern", "format"};
  return k;
}
const std::set<std::string_view>& number_keywords() {
  static const std::set<std::string_view> k = {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum",
                                               "multipleOf"};
  return k;
}

// A format the matcher enforces (string_dfa.h); any other is an annotation, as JSON Schema
// 2020-12 makes formats by default.
bool enforced_format(const json::value& v) { return v.is_string() && format_regex(v.get_string()).has_value(); }

// The numeric value of a JSON number, exactly for every int64, uint64 and double.
long double number_value(const json::value& v) {
  if (v.is_int64()) return static_cast<long double>(v.get_int64());
  if (v.is_uint64()) return static_cast<long double>(v.get_uint64());
  return static_cast<long double>(v.get_double());
}

uint8_t type_from_name(std::string_view name) {
  if (name == "null") return type_bit::kNull;
  if (name == "boolean") return type_bit::kBoolean;
  if (name == "integer") return type_bit::kInteger;
  if (name == "number") return type_bit::kNumber;
  if (name == "string") return type_bit::kString;
  if (name == "array") return type_bit::kArray;
  if (name == "object") return type_bit::kObject;
  return 0;
}

// Whether a JSON value (an enum/const member) has one of the types in `types`.
bool literal_has_type(const json::value& v, uint8_t types) {
  switch (v.kind()) {
    case json::kind::null:
      return types & type_bit::kNull;
    case json::kind::bool_:
      return types & type_bit::kBoolean;
    case json::kind::int64:
    case json::kind::uint64:
      return types & (type_bit::kInteger | type_bit::kNumber);
    case json::kind::double_: {
      const double d = v.get_double();
      if (types & type_bit::kNumber) return true;
      return (types & type_bit::kInteger) && std::isfinite(d) && d == std::floor(d);
    }
    case json::kind::string:
      return types & type_bit::kString;
    case json::kind::array:
      return types & type_bit::kArray;
    case json::kind::object:
      return types & type_bit::kObject;
  }
  return false;
}

Result<uint32_t> read_count(const json::object& o, std::string_view key, const std::string& path) {
  const json::value& v = o.at(key);
  if (v.is_int64() && v.get_int64() >= 0) return static_cast<uint32_t>(std::min<int64_t>(v.get_int64(), UINT32_MAX));
  if (v.is_uint64()) return static_cast<uint32_t>(std::min<uint64_t>(v.get_uint64(), UINT32_MAX));
  if (v.is_double() && v.get_double() >= 0 && v.get_double() == std::floor(v.get_double()))
    return static_cast<uint32_t>(std::min(v.get_double(), 4294967295.0));
  return Status::invalid_argument(path + ": '" + std::string(key) + "' must be a non-negative integer");
}

class Compiler {
 public:
  Compiler(const json::value& root, const GrammarLimits& limits, SchemaGraph& graph)
      : root_(root), limits_(limits), graph_(graph) {}

  Status compile_root() {
    SchemaNode* root = new_node();
    refs_.emplace("#", root);  // before compiling: the schema may refer to itself
    CS_RETURN_IF_ERROR(compile_into(root, root_, "#"));
    return check_node_count();
  }

  // Where each anyOf/oneOf/$ref node came from, for error messages.
  const std::map<const SchemaNode*, std::string>& alias_paths() const { return alias_paths_; }

 private:
  SchemaNode* new_node() {
    graph_.nodes.push_back(std::make_unique<SchemaNode>());
    return graph_.nodes.back().get();
  }

  Status check_node_count() const {
    if (graph_.nodes.size() <= limits_.max_schema_nodes) return Status::ok_status();
    return Status::invalid_argument("the schema has more than " + std::to_string(limits_.max_schema_nodes) +
                                    " subschemas; the limit (max_schema_nodes) is " +
                                    std::to_string(limits_.max_schema_nodes));
  }

  // Any JSON value: one node per graph, its own items and additional properties.
  SchemaNode* any_node() {
    if (any_ == nullptr) {
      any_ = new_node();
      any_->types = type_bit::kAll;
      any_->items = any_;
      any_->additional = any_;
    }
    return any_;
  }

  // A subschema only its caller refers to (not the root nor a $defs entry, which $refs may reach
  // before they are complete): an identical one compiled before is returned instead, so equal
  // subschemas are one node and equal anyOf branches one branch.
  Result<SchemaNode*> compile(const json::value& v, const std::string& path) {
    SchemaNode* n = new_node();
    CS_RETURN_IF_ERROR(compile_into(n, v, path));
    return interned_.try_emplace(signature(*n), n).first->second;
  }

  void make_alias(SchemaNode* n, std::vector<SchemaNode*> alts, std::string path) {
    n->is_alias = true;
    n->any_of = std::move(alts);
    alias_paths_[n] = std::move(path);
  }

  Result<SchemaNode*> resolve_ref(const std::string& ref, const std::string& path) {
    if (auto it = refs_.find(ref); it != refs_.end()) return it->second;
    std::string_view rest;
    const json::value* container = nullptr;
    for (std::string_view prefix : {"#/$defs/", "#/definitions/"}) {
      if (ref.rfind(prefix, 0) == 0) {
        rest = std::string_view(ref).substr(prefix.size());
        const json::object* root = root_.if_object();
        if (root == nullptr) break;
        container = root->if_contains(prefix.substr(2, prefix.size() - 3));
        if (container == nullptr) return Status::invalid_argument(path + ": dangling $ref '" + ref + "'");
      }
    }
    if (container == nullptr) {
      return Status::unimplemented(path + ": unsupported $ref '" + ref +
                                   "' (only \"#\", \"#/$defs/NAME\" and \"#/definitions/NAME\")");
    }
    // JSON Pointer unescaping of the one segment (~1 is '/', ~0 is '~').
    std::string name;
    for (size_t i = 0; i < rest.size(); ++i) {
      if (rest[i] == '/') return Status::unimplemented(path + ": unsupported $ref '" + ref + "' (nested pointer)");
      if (rest[i] == '~' && i + 1 < rest.size() && (rest[i + 1] == '0' || rest[i + 1] == '1')) {
        name += rest[++i] == '0' ? '~' : '/';
      } else {
        name += rest[i];
      }
    }
    const json::object* defs = container->if_object();
    const json::value* target = defs != nullptr ? defs->if_contains(name) : nullptr;
    if (target == nullptr) return Status::invalid_argument(path + ": dangling $ref '" + ref + "'");
    SchemaNode* n = new_node();
    refs_.emplace(ref, n);  // before compiling: the definition may refer to itself
    CS_RETURN_IF_ERROR(compile_into(n, *target, ref));
    return n;
  }

  Status compile_into(SchemaNode* n, const json::value& v, const std::string& path);
  Status compile_value(SchemaNode* n, const json::value& v, const std::string& path);
  Status compile_literals(SchemaNode* n, const json::object& o, const std::string& path);
  Status compile_object(SchemaNode* n, const json::object& o, const std::string& path);
  Status compile_array(SchemaNode* n, const json::object& o, const std::string& path);
  Status compile_string(SchemaNode* n, const json::object& o, const std::string& path);
  Status compile_number(SchemaNode* n, const json::object& o, const std::string& path);

  const json::value& root_;
  const GrammarLimits& limits_;
  SchemaGraph& graph_;
  AutomatonBuilder automata_{limits_};
  std::map<std::string, SchemaNode*> refs_;
  std::unordered_map<std::string, SchemaNode*> interned_;  // signature -> the first such node
  std::map<const SchemaNode*, std::string> alias_paths_;
  SchemaNode* any_ = nullptr;
  size_t depth_ = 0;  // compile_into calls in progress
};

Status Compiler::compile_into(SchemaNode* n, const json::value& v, const std::string& path) {
  // The recursion is bounded before it can exhaust the connection thread's stack.
  if (depth_ >= limits_.max_schema_depth) {
    return Status::invalid_argument(path + ": subschemas nest more than " + std::to_string(limits_.max_schema_depth) +
                                    " deep (each $ref followed counts); the limit (max_schema_depth) is " +
                                    std::to_string(limits_.max_schema_depth));
  }
  CS_RETURN_IF_ERROR(check_node_count());
  ++depth_;
  const Status s = compile_value(n, v, path);
  --depth_;
  return s;
}

Status Compiler::compile_value(SchemaNode* n, const json::value& v, const std::string& path) {
  if (v.is_bool()) {
    if (v.get_bool()) make_alias(n, {any_node()}, path);
    return Status::ok_status();  // false: types 0, admits nothing
  }
  const json::object* op = v.if_object();
  if (op == nullptr) return Status::invalid_argument(path + ": a schema must be an object or a boolean");
  const json::object& o = *op;

  std::vector<std::string_view> constraining;  // keywords other than annotations
  for (const auto& kv : o) {
    const std::string_view key = kv.key();
    if (ignored_keywords().count(key)) continue;
    if (key == "format") {
      if (!kv.value().is_string()) return Status::invalid_argument(path + ": 'format' must be a string");
      if (!enforced_format(kv.value())) continue;  // an annotation only
    }
    if (unsupported_keywords().count(key)) {
      if (key == "uniqueItems" && kv.value().is_bool() && !kv.value().get_bool()) continue;
      return Status::unimplemented(path + ": unsupported JSON Schema keyword '" + std::string(key) + "'");
    }
    constraining.push_back(key);
  }
  auto only = [&](std::string_view keyword) {
    for (std::string_view k : constraining)
      if (k != keyword) {
        return Status::unimplemented(path + ": '" + std::string(keyword) + "' combined with '" + std::string(k) +
                                     "' is not supported");
      }
    return Status::ok_status();
  };

  if (const json::value* ref = o.if_contains("$ref")) {
    CS_RETURN_IF_ERROR(only("$ref"));
    if (!ref->is_string()) return Status::invalid_argument(path + ": '$ref' must be a string");
    CS_ASSIGN_OR_RETURN(SchemaNode * target, resolve_ref(std::string(ref->get_string()), path));
    make_alias(n, {target}, path + "/$ref");
    return Status::ok_status();
  }
  for (std::string_view keyword : {"anyOf", "oneOf", "allOf"}) {
    const json::value* list = o.if_contains(keyword);
    if (list == nullptr) continue;
    CS_RETURN_IF_ERROR(only(keyword));
    if (!list->is_array() || list->get_array().empty())
      return Status::invalid_argument(path + ": '" + std::string(keyword) + "' must be a non-empty array");
    if (keyword == "allOf" && list->get_array().size() != 1)
      return Status::unimplemented(path + ": unsupported JSON Schema keyword 'allOf' (with more than one schema)");
    std::vector<SchemaNode*> alts;
    std::unordered_set<const SchemaNode*> seen;  // identical branches compile to one node
    const json::array& arr = list->get_array();
    for (size_t i = 0; i < arr.size(); ++i) {
      CS_ASSIGN_OR_RETURN(SchemaNode * alt,
                          compile(arr[i], path + "/" + std::string(keyword) + "/" + std::to_string(i)));
      if (seen.insert(alt).second) alts.push_back(alt);
    }
    make_alias(n, std::move(alts), path + "/" + std::string(keyword));
    return Status::ok_status();
  }

  // type
  bool have_type = false;
  if (const json::value* t = o.if_contains("type")) {
    have_type = true;
    std::vector<const json::value*> names;
    if (t->is_array()) {
      for (const json::value& e : t->get_array()) names.push_back(&e);
    } else {
      names.push_back(t);
    }
    for (const json::value* name : names) {
      const uint8_t bit = name->is_string() ? type_from_name(name->get_string()) : 0;
      if (bit == 0) return Status::invalid_argument(path + ": 'type' must name JSON types (or list them)");
      n->types |= bit;
    }
  }
  if (o.contains("enum") || o.contains("const")) {
    if (!have_type) n->types = type_bit::kAll;
    return compile_literals(n, o, path);
  }
  if (!have_type) {
    // As llama.cpp does: keywords of one type imply that type; none at all admit every type.
    for (std::string_view k : constraining) {
      if (object_keywords().count(k)) n->types |= type_bit::kObject;
      if (array_keywords().count(k)) n->types |= type_bit::kArray;
      if (string_keywords().count(k)) n->types |= type_bit::kString;
      if (number_keywords().count(k)) n->types |= type_bit::kNumber;
    }
    if (n->types == 0) n->types = type_bit::kAll;
  }
  if (o.contains("minLength")) {
    CS_ASSIGN_OR_RETURN(n->min_length, read_count(o, "minLength", path));
  }
  if (o.contains("maxLength")) {
    CS_ASSIGN_OR_RETURN(n->max_length, read_count(o, "maxLength", path));
  }
  CS_RETURN_IF_ERROR(compile_string(n, o, path));
  CS_RETURN_IF_ERROR(compile_number(n, o, path));
  CS_RETURN_IF_ERROR(compile_array(n, o, path));
  return compile_object(n, o, path);
}

// pattern and the enforced formats: one automaton with the lengths folded in (matcher.cpp then
// follows it instead of counting code points).
Status Compiler::compile_string(SchemaNode* n, const json::object& o, const std::string& path) {
  std::string pattern, format;
  const json::value* p = o.if_contains("pattern");
  if (p != nullptr) {
    if (!p->is_string()) return Status::invalid_argument(path + ": 'pattern' must be a string");
    pattern = std::string(p->get_string());
  }
  const json::value* f = o.if_contains("format");
  const bool has_format = f != nullptr && enforced_format(*f);
  if (has_format) format = std::string(f->get_string());
  if ((p == nullptr && !has_format) || !(n->types & type_bit::kString)) return Status::ok_status();
  CS_ASSIGN_OR_RETURN(n->string_automaton,
                      automata_.string_automaton(p != nullptr ? &pattern : nullptr, has_format ? &format : nullptr,
                                                 n->min_length, n->max_length, path));
  return Status::ok_status();
}

// The number bounds and multipleOf: one automaton over the number's text (number_dfa.h).
Status Compiler::compile_number(SchemaNode* n, const json::object& o, const std::string& path) {
  bool any = false;
  for (std::string_view k : number_keywords()) any |= o.contains(k);
  if (!any || !(n->types & (type_bit::kInteger | type_bit::kNumber))) return Status::ok_status();
  NumberBounds bounds;
  bounds.integer = !(n->types & type_bit::kNumber);
  // Each side's strictest bound: `minimum` (made exclusive by draft 4's boolean
  // exclusiveMinimum) and draft 6's numeric exclusiveMinimum may both be given.
  struct Bound {
    const json::value* value = nullptr;
    bool exclusive = false;
  };
  auto side = [&](std::string_view inclusive_key, std::string_view exclusive_key, bool lower) -> Result<Bound> {
    Bound best;
    const json::value* inc = o.if_contains(inclusive_key);
    const json::value* exc = o.if_contains(exclusive_key);
    if (inc != nullptr) {
      if (!inc->is_number())
        return Status::invalid_argument(path + ": '" + std::string(inclusive_key) + "' must be a number");
      best.value = inc;
    }
    if (exc != nullptr && exc->is_bool()) {
      best.exclusive = exc->get_bool() && inc != nullptr;
    } else if (exc != nullptr) {
      if (!exc->is_number())
        return Status::invalid_argument(path + ": '" + std::string(exclusive_key) + "' must be a number");
      const bool stricter = best.value == nullptr || (lower ? number_value(*exc) >= number_value(*best.value)
                                                            : number_value(*exc) <= number_value(*best.value));
      if (stricter) best = {exc, true};
    }
    return best;
  };
  CS_ASSIGN_OR_RETURN(Bound lower, side("minimum", "exclusiveMinimum", true));
  CS_ASSIGN_OR_RETURN(Bound upper, side("maximum", "exclusiveMaximum", false));
  if (lower.value != nullptr) {
    bounds.minimum = json::serialize(*lower.value);
    bounds.exclusive_minimum = lower.exclusive;
  }
  if (upper.value != nullptr) {
    bounds.maximum = json::serialize(*upper.value);
    bounds.exclusive_maximum = upper.exclusive;
  }
  if (const json::value* m = o.if_contains("multipleOf")) {
    if (!m->is_number() || number_value(*m) <= 0)
      return Status::invalid_argument(path + ": 'multipleOf' must be a number above 0");
    const long double v = number_value(*m);
    if (v != std::floor(v) || v > 1e18L)
      return Status::unimplemented(path + ": 'multipleOf' " + json::serialize(*m) +
                                   " is not supported (only integers up to 10^18)");
    // An integer step admits only integers, so the texts are integers even for "number" (1.0E1
    // would be a multiple of 5 too, but the matcher writes 10).
    bounds.integer = true;
    bounds.multiple_of = static_cast<uint64_t>(v);
  }
  CS_ASSIGN_OR_RETURN(n->number_automaton, automata_.number_automaton(bounds, path));
  return Status::ok_status();
}

Status Compiler::compile_literals(SchemaNode* n, const json::object& o, const std::string& path) {
  for (std::string_view k :
       {"properties", "required", "additionalProperties", "items", "prefixItems", "minItems", "maxItems", "minLength",
        "maxLength", "pattern", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"}) {
    if (o.contains(k))
      return Status::unimplemented(path + ": 'enum'/'const' combined with '" + std::string(k) + "' is not supported");
  }
  if (const json::value* f = o.if_contains("format"); f != nullptr && enforced_format(*f))
    return Status::unimplemented(path + ": 'enum'/'const' combined with 'format' is not supported");
  std::vector<json::value> values;
  if (const json::value* e = o.if_contains("enum")) {
    if (!e->is_array()) return Status::invalid_argument(path + ": 'enum' must be an array");
    for (const json::value& x : e->get_array()) values.push_back(x);
  }
  if (const json::value* c = o.if_contains("const")) {
    if (o.contains("enum")) {
      const bool in_enum = std::find(values.begin(), values.end(), *c) != values.end();
      values.clear();
      if (in_enum) values.push_back(*c);
    } else {
      values.push_back(*c);
    }
  }
  n->has_literals = true;
  for (const json::value& x : values) {
    if (literal_has_type(x, n->types)) n->literals.push_back(json::serialize(x));
  }
  std::sort(n->literals.begin(), n->literals.end());
  n->literals.erase(std::unique(n->literals.begin(), n->literals.end()), n->literals.end());
  if (n->literals.size() > limits_.max_enum_values) {
    return Status::invalid_argument(path + ": 'enum' has " + std::to_string(n->literals.size()) +
                                    " distinct values; the limit (max_enum_values) is " +
                                    std::to_string(limits_.max_enum_values));
  }
  return Status::ok_status();
}

Status Compiler::compile_array(SchemaNode* n, const json::object& o, const std::string& path) {
  n->items = any_node();
  if (const json::value* p = o.if_contains("prefixItems")) {
    if (!p->is_array()) return Status::invalid_argument(path + ": 'prefixItems' must be an array");
    const json::array& arr = p->get_array();
    for (size_t i = 0; i < arr.size(); ++i) {
      CS_ASSIGN_OR_RETURN(SchemaNode * item, compile(arr[i], path + "/prefixItems/" + std::to_string(i)));
      n->prefix_items.push_back(item);
    }
  }
  if (const json::value* it = o.if_contains("items")) {
    if (it->is_array()) {  // draft 4-2019 tuple form: like prefixItems, any further items
      if (o.contains("prefixItems"))
        return Status::invalid_argument(path + ": 'items' must be a schema when 'prefixItems' is given");
      const json::array& arr = it->get_array();
      for (size_t i = 0; i < arr.size(); ++i) {
        CS_ASSIGN_OR_RETURN(SchemaNode * item, compile(arr[i], path + "/items/" + std::to_string(i)));
        n->prefix_items.push_back(item);
      }
    } else if (it->is_bool() && !it->get_bool()) {
      n->items = nullptr;
    } else {
      CS_ASSIGN_OR_RETURN(n->items, compile(*it, path + "/items"));
    }
  }
  if (o.contains("minItems")) {
    CS_ASSIGN_OR_RETURN(n->min_items, read_count(o, "minItems", path));
  }
  if (o.contains("maxItems")) {
    CS_ASSIGN_OR_RETURN(n->max_items, read_count(o, "maxItems", path));
  }
  return Status::ok_status();
}

Status Compiler::compile_object(SchemaNode* n, const json::object& o, const std::string& path) {
  const json::object* props = nullptr;
  if (const json::value* p = o.if_contains("properties")) {
    props = p->if_object();
    if (props == nullptr) return Status::invalid_argument(path + ": 'properties' must be an object");
  }
  std::set<std::string> required;
  std::vector<std::string> required_order;
  if (const json::value* r = o.if_contains("required")) {
    if (!r->is_array()) return Status::invalid_argument(path + ": 'required' must be an array of strings");
    for (const json::value& name : r->get_array()) {
      if (!name.is_string()) return Status::invalid_argument(path + ": 'required' must be an array of strings");
      if (required.insert(std::string(name.get_string())).second) required_order.emplace_back(name.get_string());
    }
  }
  // additionalProperties: absent means "none" when properties are listed (llama.cpp's choice), else any.
  const SchemaNode* additional = (props == nullptr || props->empty()) ? any_node() : nullptr;
  if (const json::value* a = o.if_contains("additionalProperties")) {
    if (a->is_bool()) {
      additional = a->get_bool() ? any_node() : nullptr;
    } else if (a->is_object()) {
      CS_ASSIGN_OR_RETURN(additional, compile(*a, path + "/additionalProperties"));
    } else {
      return Status::invalid_argument(path + ": 'additionalProperties' must be a boolean or a schema");
    }
  }
  n->additional = additional;
  std::set<std::string> listed;
  if (props != nullptr) {
    for (const auto& kv : *props) {
      const std::string key(kv.key());
      if (!listed.insert(key).second) continue;
      CS_ASSIGN_OR_RETURN(SchemaNode * value, compile(kv.value(), path + "/properties/" + key));
      n->props.push_back({json::serialize(json::string(key)), value, required.count(key) > 0});
    }
  }
  // Required names that are not listed: emitted last, following additionalProperties.
  for (const std::string& key : required_order) {
    if (listed.count(key)) continue;
    const SchemaNode* value = additional;
    if (value == nullptr) value = new_node();  // admits nothing: the object cannot be produced
    n->props.push_back({json::serialize(json::string(key)), value, true});
  }
  for (uint32_t i = 0; i < n->props.size(); ++i) n->sorted_props.push_back(i);
  std::sort(n->sorted_props.begin(), n->sorted_props.end(),
            [&](uint32_t a, uint32_t b) { return n->props[a].key_json < n->props[b].key_json; });
  for (const auto& p : n->props) n->empty_key_listed |= p.key_json == "\"\"";
  if (o.contains("minProperties")) {
    CS_ASSIGN_OR_RETURN(n->min_props, read_count(o, "minProperties", path));
  }
  if (o.contains("maxProperties")) {
    CS_ASSIGN_OR_RETURN(n->max_props, read_count(o, "maxProperties", path));
  }
  // Free keys are not checked against each other, so only one of them counts for minProperties
  // (schema.h); a minimum that needs two is refused rather than met with a repeated key.
  if (additional != nullptr && n->min_props > n->props.size() + 1 && n->min_props <= n->max_props) {
    return Status::unimplemented(path + ": 'minProperties' " + std::to_string(n->min_props) + " with only " +
                                 std::to_string(n->props.size()) +
                                 " listed properties needs several other keys, whose distinctness cannot be "
                                 "enforced; list the properties it may use");
  }
  if (additional != nullptr && n->max_props != UINT32_MAX && n->max_props > 0xFFFEu) {
    return Status::unimplemented(path + ": 'maxProperties' above 65534 with additionalProperties is not supported");
  }
  return Status::ok_status();
}

int64_t literal_min(const SchemaNode& n) {
  int64_t best = kInf;
  for (const auto& l : n.literals) best = std::min<int64_t>(best, static_cast<int64_t>(l.size()));
  return best;
}

// The shortest object: braces, the required entries, and as many of the cheapest optional ones
// (listed, or free ones, which may repeat) as minProperties needs, commas between.
int64_t object_min_cost(const SchemaNode& n) {
  int64_t obj = 2;
  uint32_t k = 0;
  std::vector<int64_t> optional;
  for (const auto& p : n.props) {
    const int64_t entry = add_cost(static_cast<int64_t>(p.key_json.size()) + 1, p.value->min_cost);
    if (!p.required) {
      if (entry < kInf && n.min_props > 0) optional.push_back(entry);
      continue;
    }
    obj = add_cost(obj, entry);
    ++k;
  }
  if (k > n.max_props || n.min_props > n.max_props) return kInf;
  if (n.min_props > k) {
    std::sort(optional.begin(), optional.end());
    const bool free = n.additional != nullptr && n.additional->min_cost < kInf;
    const int64_t free_entry = free ? add_cost((n.empty_key_listed ? 3 : 2) + 1, n.additional->min_cost) : kInf;
    // The cheapest listed entries, or all but one of them and one free entry (only one counts).
    const uint32_t more = n.min_props - k;
    int64_t listed = 0, best = kInf;
    for (uint32_t j = 0; j <= more && j <= optional.size(); ++j) {
      if (j == more) best = std::min(best, listed);
      if (j + 1 == more && free) best = std::min(best, add_cost(listed, free_entry));
      if (j < optional.size()) listed = add_cost(listed, optional[j]);
    }
    obj = add_cost(obj, best);
    k = n.min_props;
  }
  if (k > 0) obj = add_cost(obj, k - 1);
  return obj;
}

// One round of the shortest-value computation; true when some cost changed.
bool update_costs(SchemaNode& n) {
  int64_t best = kInf;
  if (n.is_alias) {
    for (const SchemaNode* a : n.alts) best = std::min(best, a->min_cost);
  } else if (n.has_literals) {
    best = literal_min(n);
  } else {
    if (n.types & (type_bit::kNull | type_bit::kBoolean)) best = 4;  // null, true
    if (n.types & (type_bit::kInteger | type_bit::kNumber)) {
      const Automaton* a = n.number_automaton.get();
      best = a == nullptr ? 1 : (a->live(a->dfa.start) ? a->dist[a->dfa.start] : kInf);
    }
    if (const Automaton* a = n.string_automaton.get()) {
      n.string_min = (n.types & type_bit::kString) && a->live(a->dfa.start) ? add_cost(2, a->dist[a->dfa.start]) : kInf;
    } else {
      n.string_min = (n.types & type_bit::kString) && n.min_length <= n.max_length ? 2 + int64_t{n.min_length} : kInf;
    }
    // Arrays: minItems shortest items, commas between, brackets.
    int64_t arr = kInf;
    if ((n.types & type_bit::kArray) && n.min_items <= n.max_items) {
      arr = 2 + (n.min_items > 0 ? n.min_items - 1 : 0);
      const uint32_t n_prefix = std::min<uint32_t>(n.min_items, static_cast<uint32_t>(n.prefix_items.size()));
      for (uint32_t i = 0; i < n_prefix; ++i) arr = add_cost(arr, n.prefix_items[i]->min_cost);
      if (n.min_items > n_prefix)
        arr = add_cost(arr, n.items ? mul_cost(n.items->min_cost, n.min_items - n_prefix) : kInf);
    }
    n.array_min = arr;
    n.object_min = (n.types & type_bit::kObject) ? object_min_cost(n) : kInf;
    best = std::min({best, n.string_min, n.array_min, n.object_min});
  }
  const bool changed = best != n.min_cost;
  n.min_cost = best;
  return changed;
}

void finish_object(SchemaNode& n) {
  const uint32_t count = static_cast<uint32_t>(n.props.size());
  n.req_sum.assign(count + 1, 0);
  n.req_count.assign(count + 1, 0);
  n.first_req.assign(count + 1, count);
  n.opt_entry_min.assign(count + 1, kInf);
  n.next_viable.assign(count + 1, count);
  for (uint32_t i = count; i-- > 0;) {
    auto& p = n.props[i];
    p.entry_cost = add_cost(static_cast<int64_t>(p.key_json.size()) + 1, p.value->min_cost);
    n.req_sum[i] = p.required ? add_cost(n.req_sum[i + 1], p.entry_cost) : n.req_sum[i + 1];
    n.req_count[i] = n.req_count[i + 1] + (p.required ? 1 : 0);
    n.first_req[i] = p.required ? i : n.first_req[i + 1];
    n.opt_entry_min[i] = std::min(n.opt_entry_min[i + 1], p.entry_cost);
    n.next_viable[i] = p.value->min_cost < kInf ? i : n.next_viable[i + 1];
  }
  if (n.additional != nullptr) n.free_entry = add_cost((n.empty_key_listed ? 3 : 2) + 1, n.additional->min_cost);
  if (n.min_props == 0) return;
  n.opt_prefix.resize(count + 1);
  std::vector<int64_t> optional;
  for (uint32_t i = count + 1; i-- > 0;) {
    if (i < count && !n.props[i].required && n.props[i].entry_cost < kInf) {
      optional.insert(std::upper_bound(optional.begin(), optional.end(), n.props[i].entry_cost), n.props[i].entry_cost);
    }
    std::vector<int64_t>& prefix = n.opt_prefix[i];
    prefix.assign(1, 0);
    for (int64_t c : optional) prefix.push_back(add_cost(prefix.back(), c));
  }
}

Status finish(SchemaGraph& g) {
  // Shortest values: a fixpoint from "infinite" downwards (Bellman-Ford style; recursion makes
  // the costs depend on each other). Children are mostly created after their parents, so walking
  // the nodes backwards settles most schemas in one or two rounds.
  for (size_t round = 0; round < g.nodes.size() + 64; ++round) {
    bool changed = false;
    for (auto it = g.nodes.rbegin(); it != g.nodes.rend(); ++it) changed |= update_costs(**it);
    if (!changed) break;
  }
  int64_t max_cost = 0, max_automaton_growth = 0;
  uint32_t max_min_props = 0;
  for (auto& n : g.nodes) {
    for (const Automaton* a : {n->string_automaton.get(), n->number_automaton.get()})
      if (a != nullptr) max_automaton_growth = std::max(max_automaton_growth, a->growth);
    finish_object(*n);
    if (n->min_cost < kInf) max_cost = std::max(max_cost, n->min_cost);
    for (const auto& p : n->props)
      if (p.entry_cost < kInf) max_cost = std::max(max_cost, p.entry_cost);
    if (n->free_entry < kInf) max_cost = std::max(max_cost, n->free_entry);
    for (const auto& l : n->literals) max_cost = std::max<int64_t>(max_cost, static_cast<int64_t>(l.size()));
    max_min_props = std::max(max_min_props, n->min_props);
  }
  SchemaNode& root = *g.nodes[0];
  if (root.min_cost >= kInf) return Status::invalid_argument("the schema admits no JSON value");
  // One byte can start a value, choose a property or an anyOf branch, or open an escape; each
  // raises the shortest completion by at most about two of the largest costs. Choosing a key
  // that skips cheap optional properties can also make minProperties need dearer ones, one of
  // the largest costs for each entry still needed.
  // Inside a string or number that follows an automaton, one byte raises the distance by at most
  // its growth (plus 2 around an escape).
  root.growth_bound =
      add_cost(add_cost(mul_cost(max_cost, 4 + 2 * int64_t{max_min_props}), 16), add_cost(max_automaton_growth, 2));
  return Status::ok_status();
}

Result<std::shared_ptr<const OutputConstraint>> compile_schema(const json::value& schema, const GrammarLimits& limits) {
  const size_t bytes = json::serialize(schema).size();
  if (bytes > limits.max_schema_bytes) {
    return Status::invalid_argument("the schema is " + std::to_string(bytes) +
                                    " bytes (as compact JSON); the limit (max_schema_bytes) is " +
                                    std::to_string(limits.max_schema_bytes));
  }
  auto graph = std::make_shared<SchemaGraph>();
  Compiler compiler(schema, limits, *graph);
  CS_RETURN_IF_ERROR(compiler.compile_root());
  const size_t states = prune_unreachable(*graph);
  if (states > limits.max_compiled_states) return compiled_states_error(limits);
  auto describe = [&](const SchemaNode* n) {
    const auto it = compiler.alias_paths().find(n);
    return it != compiler.alias_paths().end() ? it->second : std::string("#");
  };
  CS_RETURN_IF_ERROR(flatten_aliases(*graph, limits, states, describe));
  CS_RETURN_IF_ERROR(finish(*graph));
  std::shared_ptr<const SchemaNode> root(graph, graph->nodes[0].get());  // shares ownership of the graph
  return std::make_shared<const OutputConstraint>(std::move(root), limits);
}

SchemaNode make_literals(std::vector<std::string> literals) {
  SchemaNode n;
  n.has_literals = true;
  n.literals = std::move(literals);
  n.min_cost = literal_min(n);
  return n;
}

}  // namespace

Status compiled_states_error(const GrammarLimits& limits) {
  return Status::invalid_argument("the compiled schema has more than " + std::to_string(limits.max_compiled_states) +
                                  " states (subschemas, flattened anyOf alternatives, properties, items and enum "
                                  "values); the limit (max_compiled_states) is " +
                                  std::to_string(limits.max_compiled_states));
}

const SchemaNode& boolean_literals() {
  static const SchemaNode n = make_literals({"false", "true"});
  return n;
}

const SchemaNode& null_literal() {
  static const SchemaNode n = make_literals({"null"});
  return n;
}

std::shared_ptr<const OutputConstraint> OutputConstraint::any_object() {
  static const std::shared_ptr<const OutputConstraint> c = [] {
    json::object schema;
    schema["type"] = "object";
    return compile_schema(schema, GrammarLimits{}).value();
  }();
  return c;
}

Result<std::shared_ptr<const OutputConstraint>> OutputConstraint::from_schema(const boost::json::value& schema,
                                                                              const GrammarLimits& limits) {
  return compile_schema(schema, limits);
}

}  // namespace cellserve::engine::grammar
