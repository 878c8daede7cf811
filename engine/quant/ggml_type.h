// The tensor element types of ggml / GGUF, with their block geometry.
//
// Numbering follows ggml.h (enum ggml_type) exactly, since it is what GGUF files store. Values
// that ggml removed (4, 5, 31-33, 36-38) are not types: ggml_type_from_u32 rejects them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace cellserve::engine {

enum class GgmlType : uint32_t {
  F32 = 0,
  F16 = 1,
  Q4_0 = 2,
  Q4_1 = 3,
  Q5_0 = 6,
  Q5_1 = 7,
  Q8_0 = 8,
  Q8_1 = 9,
  Q2_K = 10,
  Q3_K = 11,
  Q4_K = 12,
  Q5_K = 13,
  Q6_K = 14,
  Q8_K = 15,
  IQ2_XXS = 16,
  IQ2_XS = 17,
  IQ3_XXS = 18,
  IQ1_S = 19,
  IQ4_NL = 20,
  IQ3_S = 21,
  IQ2_S = 22,
  IQ4_XS = 23,
  I8 = 24,
  I16 = 25,
  I32 = 26,
  I64 = 27,
  F64 = 28,
  IQ1_M = 29,
  BF16 = 30,
  TQ1_0 = 34,
  TQ2_0 = 35,
  MXFP4 = 39,
};

// Geometry of one type: `block_size` elements are stored in `type_size` bytes.
struct GgmlTypeInfo {
  GgmlType type;
  std::string_view name;  // ggml's spelling: "f32", "q4_K", ...
  int64_t block_size;
  size_t type_size;
};

// Returns the type with numeric value `value`, or nullopt if ggml defines no such type.
std::optional<GgmlType> ggml_type_from_u32(uint32_t value);

// Returns the type named `name` (case-insensitive: "Q4_K", "q4_k", "bf16"), or nullopt.
std::optional<GgmlType> ggml_type_from_name(std::string_view name);

const GgmlTypeInfo& ggml_type_info(GgmlType type);
inline std::string_view ggml_type_name(GgmlType t) { return ggml_type_info(t).name; }
inline int64_t ggml_block_size(GgmlType t) { return ggml_type_info(t).block_size; }
inline size_t ggml_type_size(GgmlType t) { return ggml_type_info(t).type_size; }

// Bytes of one row of `n` elements. REQUIRES: n % block_size == 0.
inline size_t ggml_row_size(GgmlType t, int64_t n) {
  return static_cast<size_t>(n / ggml_block_size(t)) * ggml_type_size(t);
}

}  // namespace cellserve::engine
