// dequantize_row: dispatch by type, plus the float types (F32, F16, BF16).
//
// The per-type decoders live in dequantize_legacy.cpp (Q4_0..Q8_0), dequantize_kquants.cpp
// (Q2_K..Q8_K) and dequantize_iq.cpp (IQ4_NL, IQ4_XS).
#include <cstring>

#include "base/check.h"
#include "base/half.h"
#include "engine/quant/quant_internal.h"
#include "engine/quant/quantize.h"

namespace cellserve::engine {
namespace {

using DequantizeFn = void (*)(const void* src, float* dst, int64_t n);

void dequantize_row_f32(const void* src, float* dst, int64_t n) {
  std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
}

void dequantize_row_f16(const void* src, float* dst, int64_t n) {
  const auto* bytes = static_cast<const unsigned char*>(src);
  for (int64_t i = 0; i < n; ++i) {
    uint16_t h;
    std::memcpy(&h, bytes + 2 * i, 2);
    dst[i] = fp16_to_fp32(h);
  }
}

void dequantize_row_bf16(const void* src, float* dst, int64_t n) {
  const auto* bytes = static_cast<const unsigned char*>(src);
  for (int64_t i = 0; i < n; ++i) {
    uint16_t b;
    std::memcpy(&b, bytes + 2 * i, 2);
    dst[i] = bf16_to_fp32(b);
  }
}

// One decoder per supported type.
struct Decoder {
  GgmlType type;
  DequantizeFn fn;
};
constexpr Decoder kDecoders[] = {
    {GgmlType::F32, dequantize_row_f32},
    {GgmlType::F16, dequantize_row_f16},
    {GgmlType::BF16, dequantize_row_bf16},
    {GgmlType::Q4_0, quant::dequantize_row_q4_0},
    {GgmlType::Q4_1, quant::dequantize_row_q4_1},
    {GgmlType::Q5_0, quant::dequantize_row_q5_0},
    {GgmlType::Q5_1, quant::dequantize_row_q5_1},
    {GgmlType::Q8_0, quant::dequantize_row_q8_0},
    {GgmlType::Q2_K, quant::dequantize_row_q2_k},
    {GgmlType::Q3_K, quant::dequantize_row_q3_k},
    {GgmlType::Q4_K, quant::dequantize_row_q4_k},
    {GgmlType::Q5_K, quant::dequantize_row_q5_k},
    {GgmlType::Q6_K, quant::dequantize_row_q6_k},
    {GgmlType::Q8_K, quant::dequantize_row_q8_k},
    {GgmlType::IQ4_NL, quant::dequantize_row_iq4_nl},
    {GgmlType::IQ4_XS, quant::dequantize_row_iq4_xs},
};

// The decoder of `type`, or nullptr when there is none.
DequantizeFn dequantizer(GgmlType type) {
  for (const Decoder& d : kDecoders) {
    if (d.type == type) return d.fn;
  }
  return nullptr;
}

}  // namespace

bool can_dequantize(GgmlType type) { return dequantizer(type) != nullptr; }

void dequantize_row(GgmlType type, const void* src, float* dst, int64_t n) {
  const DequantizeFn fn = dequantizer(type);
  CS_CHECK(fn != nullptr) << "dequantize_row: unsupported type " << ggml_type_name(type);
  CS_CHECK(n >= 0 && n % ggml_block_size(type) == 0)
      << "dequantize_row: " << n << " values is not a whole number of " << ggml_type_name(type) << " blocks";
  fn(src, dst, n);
}

}  // namespace cellserve::engine
