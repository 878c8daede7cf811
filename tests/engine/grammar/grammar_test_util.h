// Helpers for the grammar tests: running bytes through the matcher, and a validator for the
// JSON Schema subset of docs/grammar.md (written independently of the compiler).
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <regex>
#include <string>
#include <string_view>

#include <boost/json.hpp>

#include "engine/grammar/matcher.h"
#include "engine/grammar/output_constraint.h"
#include "format_reference.h"

namespace cellserve::engine::grammar::testing {

namespace json = boost::json;

inline std::shared_ptr<const OutputConstraint> compile(std::string_view schema_text) {
  auto c = OutputConstraint::from_schema(json::parse(schema_text));
  EXPECT_TRUE(c.ok()) << schema_text << ": " << c.status().to_string();
  return c.ok() ? *c : nullptr;
}

// Whether `text` is a prefix of some document the constraint admits.
inline bool accepts_prefix(const OutputConstraint& c, std::string_view text) {
  ThreadSet state, scratch;
  initial_state(c.root(), state);
  return step_bytes(state, text, scratch);
}

// Whether `text` is a whole document the constraint admits.
inline bool accepts(const OutputConstraint& c, std::string_view text) {
  ThreadSet state, scratch;
  initial_state(c.root(), state);
  return step_bytes(state, text, scratch) && completion_cost(state) == 0;
}

// The shortest completion after `text` (kInf when `text` is no valid prefix).
inline int64_t cost_after(const OutputConstraint& c, std::string_view text) {
  ThreadSet state, scratch;
  initial_state(c.root(), state);
  return step_bytes(state, text, scratch) ? completion_cost(state) : kInf;
}

inline size_t code_points(std::string_view s) {
  size_t n = 0;
  for (char ch : s) n += (static_cast<unsigned char>(ch) & 0xC0) != 0x80;
  return n;
}

// The value of a JSON number as long double (exact for the short numbers the tests write).
inline long double number_of(const json::value& v) {
  if (v.is_int64()) return static_cast<long double>(v.get_int64());
  if (v.is_uint64()) return static_cast<long double>(v.get_uint64());
  return static_cast<long double>(v.get_double());
}

// The number keywords: minimum/maximum, exclusive ones in both drafts' forms, integer multipleOf.
inline bool number_in_bounds(const json::value& v, const json::object& s, std::string& why) {
  const long double x = number_of(v);
  const json::value* exmin = s.if_contains("exclusiveMinimum");
  const json::value* exmax = s.if_contains("exclusiveMaximum");
  if (const auto* m = s.if_contains("minimum")) {
    const bool exclusive = exmin != nullptr && exmin->is_bool() && exmin->get_bool();
    if (exclusive ? x <= number_of(*m) : x < number_of(*m)) return why = "below minimum", false;
  }
  if (const auto* m = s.if_contains("maximum")) {
    const bool exclusive = exmax != nullptr && exmax->is_bool() && exmax->get_bool();
    if (exclusive ? x >= number_of(*m) : x > number_of(*m)) return why = "above maximum", false;
  }
  if (exmin != nullptr && exmin->is_number() && x <= number_of(*exmin))
    return why = "not above exclusiveMinimum", false;
  if (exmax != nullptr && exmax->is_number() && x >= number_of(*exmax))
    return why = "not below exclusiveMaximum", false;
  if (const auto* m = s.if_contains("multipleOf")) {
    if (x != std::floor(x) || std::fmod(x, number_of(*m)) != 0) return why = "not a multiple", false;
  }
  return true;
}

// Validates `v` against `schema` (the supported subset). Stricter than JSON Schema where the
// generator promises more: with "properties" and no "additionalProperties" no other key may
// appear, listed keys appear in declared order, and other keys after them; minProperties counts
// at most one key that "properties" does not list. `pattern` is std::regex's ECMAScript over
// bytes, so the tests give it ASCII only.
inline bool validate(const json::value& v, const json::value& schema, const json::value& root, std::string& why) {
  if (schema.is_bool()) return schema.get_bool() || (why = "false schema", false);
  const json::object& s = schema.as_object();
  if (const auto* ref = s.if_contains("$ref")) {
    std::string r(ref->as_string());
    if (r == "#") return validate(v, root, root, why);
    const std::string defs = r.rfind("#/$defs/", 0) == 0 ? "$defs" : "definitions";
    return validate(v, root.at(defs).at(r.substr(defs.size() + 3)), root, why);
  }
  for (const char* k : {"anyOf", "oneOf"}) {
    if (const auto* alts = s.if_contains(k)) {
      for (const auto& alt : alts->as_array()) {
        std::string ignored;
        if (validate(v, alt, root, ignored)) return true;
      }
      why = std::string("no ") + k + " branch matches " + json::serialize(v);
      return false;
    }
  }
  if (const auto* all = s.if_contains("allOf")) {
    for (const auto& sub : all->as_array())
      if (!validate(v, sub, root, why)) return false;
  }
  if (const auto* e = s.if_contains("enum")) {
    bool found = false;
    for (const auto& x : e->as_array()) found |= x == v;
    if (!found) return why = "not in enum: " + json::serialize(v), false;
  }
  if (const auto* c = s.if_contains("const"); c != nullptr && !(*c == v)) return why = "not const", false;
  if (const auto* t = s.if_contains("type")) {
    auto has = [&](std::string_view name) {
      if (name == "null") return v.is_null();
      if (name == "boolean") return v.is_bool();
      if (name == "string") return v.is_string();
      if (name == "array") return v.is_array();
      if (name == "object") return v.is_object();
      if (name == "number") return v.is_number();
      if (name == "integer")
        return v.is_int64() || v.is_uint64() ||
               (v.is_double() && v.get_double() == static_cast<double>(static_cast<int64_t>(v.get_double())));
      return false;
    };
    bool ok = false;
    if (t->is_string())
      ok = has(t->as_string());
    else
      for (const auto& n : t->as_array()) ok |= has(n.as_string());
    if (!ok) return why = "wrong type: " + json::serialize(v), false;
  }
  if (v.is_string()) {
    const size_t n = code_points(v.get_string());
    if (s.contains("minLength") && n < s.at("minLength").to_number<size_t>()) return why = "too short", false;
    if (s.contains("maxLength") && n > s.at("maxLength").to_number<size_t>()) return why = "too long", false;
    const std::string text(v.get_string());
    if (const auto* p = s.if_contains("pattern");
        p != nullptr && !std::regex_search(text, std::regex(std::string(p->as_string()), std::regex::ECMAScript)))
      return why = "does not match the pattern", false;
    if (const auto* f = s.if_contains("format"); f != nullptr && !matches_format(f->as_string(), text))
      return why = "not a " + std::string(f->as_string()), false;
  }
  if (v.is_number() && !number_in_bounds(v, s, why)) return false;
  if (v.is_array()) {
    const json::array& a = v.get_array();
    if (s.contains("minItems") && a.size() < s.at("minItems").to_number<size_t>()) return why = "too few items", false;
    if (s.contains("maxItems") && a.size() > s.at("maxItems").to_number<size_t>()) return why = "too many items", false;
    size_t i = 0;
    if (const auto* p = s.if_contains("prefixItems")) {
      for (; i < a.size() && i < p->as_array().size(); ++i)
        if (!validate(a[i], p->as_array()[i], root, why)) return false;
    }
    if (const auto* items = s.if_contains("items")) {
      for (; i < a.size(); ++i)
        if (!validate(a[i], *items, root, why)) return false;
    }
  }
  if (v.is_object()) {
    const json::object& o = v.get_object();
    if (s.contains("minProperties")) {
      // The generator counts at most one key that "properties" does not list (docs/grammar.md).
      const json::object* listed = s.contains("properties") ? &s.at("properties").as_object() : nullptr;
      size_t counted = 0, others = 0;
      for (const auto& kv : o) (listed != nullptr && listed->contains(kv.key()) ? counted : others) += 1;
      if (counted + std::min<size_t>(others, 1) < s.at("minProperties").to_number<size_t>())
        return why = "too few properties", false;
    }
    if (s.contains("maxProperties") && o.size() > s.at("maxProperties").to_number<size_t>())
      return why = "too many properties", false;
    const json::object* props = s.contains("properties") ? &s.at("properties").as_object() : nullptr;
    if (const auto* r = s.if_contains("required")) {
      for (const auto& name : r->as_array())
        if (!o.contains(name.as_string())) return why = "missing " + std::string(name.as_string()), false;
    }
    const json::value* additional = s.if_contains("additionalProperties");
    int64_t prev_index = -1;
    bool free_seen = false;  // the generator writes other keys after every listed one
    for (const auto& kv : o) {
      if (props != nullptr && props->contains(kv.key())) {
        if (free_seen) return why = "listed key after another key", false;
        if (!validate(kv.value(), props->at(kv.key()), root, why)) return false;
        size_t index = 0;
        for (const auto& p : *props) {
          if (p.key() == kv.key()) break;
          ++index;
        }
        if (static_cast<int64_t>(index) <= prev_index) return why = "out of order", false;
        prev_index = static_cast<int64_t>(index);
        continue;
      }
      if (additional == nullptr) {
        if (props != nullptr && !props->empty()) return why = "unlisted key " + std::string(kv.key()), false;
        continue;
      }
      if (!validate(kv.value(), *additional, root, why)) return false;
      free_seen = true;
    }
  }
  return true;
}

}  // namespace cellserve::engine::grammar::testing
