// A GGUF metadata value: one of the 13 value types of the GGUF spec, arrays nested to any depth.
//
// Spec: https://github.com/ggml-org/ggml/blob/master/docs/gguf.md ("gguf_metadata_value_type").
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace cellserve::engine {

// Numbering is the file format's.
enum class GgufValueType : uint32_t {
  UInt8 = 0,
  Int8 = 1,
  UInt16 = 2,
  Int16 = 3,
  UInt32 = 4,
  Int32 = 5,
  Float32 = 6,
  Bool = 7,
  String = 8,
  Array = 9,
  UInt64 = 10,
  Int64 = 11,
  Float64 = 12,
};

const char* gguf_value_type_name(GgufValueType type);

class GgufValue;

// An array value: every element has type `element_type` (arrays of arrays may differ inside).
struct GgufArray {
  GgufValueType element_type = GgufValueType::UInt8;
  std::vector<GgufValue> items;

  bool operator==(const GgufArray&) const;
};

class GgufValue {
 public:
  // The alternatives are in GgufValueType order, so index() == type.
  using Storage = std::variant<uint8_t, int8_t, uint16_t, int16_t, uint32_t, int32_t, float, bool, std::string,
                               GgufArray, uint64_t, int64_t, double>;

  GgufValue() = default;
  explicit GgufValue(Storage storage) : storage_(std::move(storage)) {}

  static GgufValue u8(uint8_t v) { return GgufValue(Storage(std::in_place_index<0>, v)); }
  static GgufValue i8(int8_t v) { return GgufValue(Storage(std::in_place_index<1>, v)); }
  static GgufValue u16(uint16_t v) { return GgufValue(Storage(std::in_place_index<2>, v)); }
  static GgufValue i16(int16_t v) { return GgufValue(Storage(std::in_place_index<3>, v)); }
  static GgufValue u32(uint32_t v) { return GgufValue(Storage(std::in_place_index<4>, v)); }
  static GgufValue i32(int32_t v) { return GgufValue(Storage(std::in_place_index<5>, v)); }
  static GgufValue f32(float v) { return GgufValue(Storage(std::in_place_index<6>, v)); }
  static GgufValue boolean(bool v) { return GgufValue(Storage(std::in_place_index<7>, v)); }
  static GgufValue string(std::string v) { return GgufValue(Storage(std::in_place_index<8>, std::move(v))); }
  static GgufValue array(GgufArray v) { return GgufValue(Storage(std::in_place_index<9>, std::move(v))); }
  static GgufValue u64(uint64_t v) { return GgufValue(Storage(std::in_place_index<10>, v)); }
  static GgufValue i64(int64_t v) { return GgufValue(Storage(std::in_place_index<11>, v)); }
  static GgufValue f64(double v) { return GgufValue(Storage(std::in_place_index<12>, v)); }

  // Array helpers for the common homogeneous cases.
  static GgufValue string_array(const std::vector<std::string>& items);
  static GgufValue f32_array(const std::vector<float>& items);
  static GgufValue i32_array(const std::vector<int32_t>& items);

  GgufValueType type() const { return static_cast<GgufValueType>(storage_.index()); }
  const Storage& storage() const { return storage_; }

  // Any integer type (or bool) as int64; nullopt for other types or a uint64 above INT64_MAX.
  std::optional<int64_t> as_int() const;
  // Any integer or float type as double; nullopt otherwise.
  std::optional<double> as_float() const;
  std::optional<bool> as_bool() const;
  // Non-null only for String values.
  const std::string* as_string() const { return std::get_if<std::string>(&storage_); }
  // Non-null only for Array values.
  const GgufArray* as_array() const { return std::get_if<GgufArray>(&storage_); }

  // A short human-readable rendering; arrays longer than `max_items` are elided.
  std::string to_display_string(size_t max_items = 8) const;

  bool operator==(const GgufValue& other) const { return storage_ == other.storage_; }

 private:
  Storage storage_;
};

inline bool GgufArray::operator==(const GgufArray& o) const {
  return element_type == o.element_type && items == o.items;
}

// One metadata key-value pair, in file order.
struct GgufKeyValue {
  std::string key;
  GgufValue value;
};

}  // namespace cellserve::engine
