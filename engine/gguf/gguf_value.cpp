#include "engine/gguf/gguf_value.h"

#include <cmath>
#include <cstdio>
#include <limits>

namespace cellserve::engine {

const char* gguf_value_type_name(GgufValueType type) {
  switch (type) {
    case GgufValueType::UInt8:
      return "u8";
    case GgufValueType::Int8:
      return "i8";
    case GgufValueType::UInt16:
      return "u16";
    case GgufValueType::Int16:
      return "i16";
    case GgufValueType::UInt32:
      return "u32";
    case GgufValueType::Int32:
      return "i32";
    case GgufValueType::Float32:
      return "f32";
    case GgufValueType::Bool:
      return "bool";
    case GgufValueType::String:
      return "str";
    case GgufValueType::Array:
      return "arr";
    case GgufValueType::UInt64:
      return "u64";
    case GgufValueType::Int64:
      return "i64";
    case GgufValueType::Float64:
      return "f64";
  }
  return "?";
}

GgufValue GgufValue::string_array(const std::vector<std::string>& items) {
  GgufArray a{GgufValueType::String, {}};
  a.items.reserve(items.size());
  for (const auto& s : items) a.items.push_back(string(s));
  return array(std::move(a));
}

GgufValue GgufValue::f32_array(const std::vector<float>& items) {
  GgufArray a{GgufValueType::Float32, {}};
  a.items.reserve(items.size());
  for (float v : items) a.items.push_back(f32(v));
  return array(std::move(a));
}

GgufValue GgufValue::i32_array(const std::vector<int32_t>& items) {
  GgufArray a{GgufValueType::Int32, {}};
  a.items.reserve(items.size());
  for (int32_t v : items) a.items.push_back(i32(v));
  return array(std::move(a));
}

std::optional<int64_t> GgufValue::as_int() const {
  return std::visit(
      [](const auto& v) -> std::optional<int64_t> {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, uint64_t>) {
          if (v > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return std::nullopt;
          return static_cast<int64_t>(v);
        } else if constexpr (std::is_integral_v<T>) {
          return static_cast<int64_t>(v);
        } else {
          return std::nullopt;
        }
      },
      storage_);
}

std::optional<double> GgufValue::as_float() const {
  return std::visit(
      [](const auto& v) -> std::optional<double> {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_arithmetic_v<T> && !std::is_same_v<T, bool>) return static_cast<double>(v);
        return std::nullopt;
      },
      storage_);
}

std::optional<bool> GgufValue::as_bool() const {
  if (const bool* b = std::get_if<bool>(&storage_)) return *b;
  return std::nullopt;
}

namespace {

std::string quote(const std::string& s, size_t max_chars) {
  std::string out = "\"";
  for (size_t i = 0; i < s.size() && i < max_chars; ++i) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c == '\n')
      out += "\\n";
    else if (c == '\t')
      out += "\\t";
    else if (c == '"')
      out += "\\\"";
    else if (c == '\\')
      out += "\\\\";
    else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    } else
      out += static_cast<char>(c);
  }
  if (s.size() > max_chars) out += "...";
  return out + "\"";
}

}  // namespace

std::string GgufValue::to_display_string(size_t max_items) const {
  return std::visit(
      [&](const auto& v) -> std::string {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, std::string>) {
          return quote(v, 120);
        } else if constexpr (std::is_same_v<T, GgufArray>) {
          std::string out = "[";
          for (size_t i = 0; i < v.items.size() && i < max_items; ++i) {
            if (i) out += ", ";
            out += v.items[i].to_display_string(max_items);
          }
          if (v.items.size() > max_items) out += ", ... (" + std::to_string(v.items.size()) + " items)";
          return out + "]";
        } else if constexpr (std::is_same_v<T, bool>) {
          return v ? "true" : "false";
        } else if constexpr (std::is_floating_point_v<T>) {
          char buf[32];
          std::snprintf(buf, sizeof buf, "%.9g", static_cast<double>(v));
          return buf;
        } else {
          return std::to_string(v);
        }
      },
      storage_);
}

}  // namespace cellserve::engine
