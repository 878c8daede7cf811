// quantize_row: dispatch by type, plus the float types (F32, F16, BF16).
//
// The per-type encoders live in quantize_legacy.cpp (Q4_0..Q8_1), quantize_kquants.cpp
// (Q2_K..Q8_K, with the scale searches in kquant_search.cpp) and quantize_iq.cpp.
#include <cstring>

#include "base/check.h"
#include "base/half.h"
#include "engine/quant/quant_internal.h"
#include "engine/quant/quantize.h"

namespace cellserve::engine {
namespace {

using QuantizeFn = void (*)(const float* src, void* dst, int64_t n);

void quantize_row_f32(const float* src, void* dst, int64_t n) {
  std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
}

// Round to nearest even, as F16C's vcvtps2ph and ggml_fp32_to_fp16_row.
void quantize_row_f16(const float* src, void* dst, int64_t n) {
  auto* bytes = static_cast<unsigned char*>(dst);
  for (int64_t i = 0; i < n; ++i) {
    const uint16_t h = fp32_to_fp16(src[i]);
    std::memcpy(bytes + 2 * i, &h, 2);
  }
}

// Round to nearest even with quiet NaNs, as ggml_fp32_to_bf16_row_ref.
void quantize_row_bf16(const float* src, void* dst, int64_t n) {
  auto* bytes = static_cast<unsigned char*>(dst);
  for (int64_t i = 0; i < n; ++i) {
    const uint16_t b = fp32_to_bf16(src[i]);
    std::memcpy(bytes + 2 * i, &b, 2);
  }
}

// One encoder per supported type.
struct Encoder {
  GgmlType type;
  QuantizeFn fn;
};
constexpr Encoder kEncoders[] = {
    {GgmlType::F32, quantize_row_f32},
    {GgmlType::F16, quantize_row_f16},
    {GgmlType::BF16, quantize_row_bf16},
    {GgmlType::Q4_0, quant::quantize_row_q4_0},
    {GgmlType::Q4_1, quant::quantize_row_q4_1},
    {GgmlType::Q5_0, quant::quantize_row_q5_0},
    {GgmlType::Q5_1, quant::quantize_row_q5_1},
    {GgmlType::Q8_0, quant::quantize_row_q8_0},
    {GgmlType::Q8_1, quant::quantize_row_q8_1},
    {GgmlType::Q2_K, quant::quantize_row_q2_k},
    {GgmlType::Q3_K, quant::quantize_row_q3_k},
    {GgmlType::Q4_K, quant::quantize_row_q4_k},
    {GgmlType::Q5_K, quant::quantize_row_q5_k},
    {GgmlType::Q6_K, quant::quantize_row_q6_k},
    {GgmlType::Q8_K, quant::quantize_row_q8_k},
    {GgmlType::IQ4_NL, quant::quantize_row_iq4_nl},
    {GgmlType::IQ4_XS, quant::quantize_row_iq4_xs},
};

// The encoder of `type`, or nullptr when there is none.
QuantizeFn quantizer(GgmlType type) {
  for (const Encoder& e : kEncoders) {
    if (e.type == type) return e.fn;
  }
  return nullptr;
}

}  // namespace

bool can_quantize(GgmlType type) { return quantizer(type) != nullptr; }

void quantize_row(GgmlType type, const float* src, void* dst, int64_t n) {
  const QuantizeFn fn = quantizer(type);
  CS_CHECK(fn != nullptr) << "quantize_row: unsupported type " << ggml_type_name(type);
  CS_CHECK(n >= 0 && n % ggml_block_size(type) == 0)
      << "quantize_row: " << n << " values is not a whole number of " << ggml_type_name(type) << " blocks";
  fn(src, dst, n);
}

}  // namespace cellserve::engine
