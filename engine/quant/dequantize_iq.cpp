// Reference decoders of the non-linear 4-bit types IQ4_NL and IQ4_XS: bit-exact with
// llama.cpp's dequantize_row_iq4_nl / dequantize_row_iq4_xs.
#include "engine/quant/quant_internal.h"

namespace cellserve::engine::quant {

// ggml-common.h kvalues_iq4nl: 16 non-uniform levels fitted to the distribution of weights.
const int8_t kIq4nlValues[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};

void dequantize_row_iq4_nl(const void* src, float* dst, int64_t n) {
  constexpr int qk = kQK4_NL;
  for (int64_t i = 0; i < n / qk; ++i) {
    const auto b = load_block<BlockIQ4_NL>(src, i);
    const float d = fp16_to_fp32(b.d);
    float* y = dst + i * qk;
    for (int j = 0; j < qk / 2; ++j) {
      y[j] = d * static_cast<float>(kIq4nlValues[b.qs[j] & 0xF]);
      y[j + qk / 2] = d * static_cast<float>(kIq4nlValues[b.qs[j] >> 4]);
    }
  }
}

void dequantize_row_iq4_xs(const void* src, float* dst, int64_t n) {
  float* y = dst;
  for (int64_t i = 0; i < n / kQK_K; ++i) {
    const auto b = load_block<BlockIQ4_XS>(src, i);
    const float d = fp16_to_fp32(b.d);
    const uint8_t* qs = b.qs;
    for (int ib = 0; ib < kQK_K / 32; ++ib) {
      const int ls = ((b.scales_l[ib / 2] >> 4 * (ib % 2)) & 0xF) | ((b.scales_h >> 2 * ib) & 3) << 4;
      const float dl = d * static_cast<float>(ls - 32);
      for (int j = 0; j < 16; ++j) {
        y[j + 0] = dl * static_cast<float>(kIq4nlValues[qs[j] & 0xF]);
        y[j + 16] = dl * static_cast<float>(kIq4nlValues[qs[j] >> 4]);
      }
      y += 32;
      qs += 16;
    }
  }
}

}  // namespace cellserve::engine::quant
