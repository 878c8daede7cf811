// Reference decoders of the legacy block types Q4_0, Q4_1, Q5_0, Q5_1, Q8_0: bit-exact with
// llama.cpp's dequantize_row_* in ggml-quants.c (same operations in the same order).
#include "engine/quant/quant_internal.h"

namespace cellserve::engine::quant {

void dequantize_row_q4_0(const void* src, float* dst, int64_t n) {
  constexpr int qk = kQK4_0;
  for (int64_t i = 0; i < n / qk; ++i) {
    const auto b = load_block<BlockQ4_0>(src, i);
    const float d = fp16_to_fp32(b.d);
    float* y = dst + i * qk;
    for (int j = 0; j < qk / 2; ++j) {
      const int x0 = (b.qs[j] & 0x0F) - 8;
      const int x1 = (b.qs[j] >> 4) - 8;
      y[j] = static_cast<float>(x0) * d;
      y[j + qk / 2] = static_cast<float>(x1) * d;
    }
  }
}

void dequantize_row_q4_1(const void* src, float* dst, int64_t n) {
  constexpr int qk = kQK4_1;
  for (int64_t i = 0; i < n / qk; ++i) {
    const auto b = load_block<BlockQ4_1>(src, i);
    const float d = fp16_to_fp32(b.d);
    const float m = fp16_to_fp32(b.m);
    float* y = dst + i * qk;
    for (int j = 0; j < qk / 2; ++j) {
      const int x0 = b.qs[j] & 0x0F;
      const int x1 = b.qs[j] >> 4;
      y[j] = static_cast<float>(x0) * d + m;
      y[j + qk / 2] = static_cast<float>(x1) * d + m;
    }
  }
}

namespace {

// The 5th-bit word of a Q5 block: bit j belongs to element j.
uint32_t load_qh(const uint8_t qh[4]) {
  return static_cast<uint32_t>(qh[0]) | static_cast<uint32_t>(qh[1]) << 8 | static_cast<uint32_t>(qh[2]) << 16 |
         static_cast<uint32_t>(qh[3]) << 24;
}

}  // namespace

void dequantize_row_q5_0(const void* src, float* dst, int64_t n) {
  constexpr int qk = kQK5_0;
  for (int64_t i = 0; i < n / qk; ++i) {
    const auto b = load_block<BlockQ5_0>(src, i);
    const float d = fp16_to_fp32(b.d);
    const uint32_t qh = load_qh(b.qh);
    float* y = dst + i * qk;
    for (int j = 0; j < qk / 2; ++j) {
      const int xh0 = static_cast<int>(((qh >> j) << 4) & 0x10);
      const int xh1 = static_cast<int>((qh >> (j + 12)) & 0x10);
      const int x0 = ((b.qs[j] & 0x0F) | xh0) - 16;
      const int x1 = ((b.qs[j] >> 4) | xh1) - 16;
      y[j] = static_cast<float>(x0) * d;
      y[j + qk / 2] = static_cast<float>(x1) * d;
    }
  }
}

void dequantize_row_q5_1(const void* src, float* dst, int64_t n) {
  constexpr int qk = kQK5_1;
  for (int64_t i = 0; i < n / qk; ++i) {
    const auto b = load_block<BlockQ5_1>(src, i);
    const float d = fp16_to_fp32(b.d);
    const float m = fp16_to_fp32(b.m);
    const uint32_t qh = load_qh(b.qh);
    float* y = dst + i * qk;
    for (int j = 0; j < qk / 2; ++j) {
      const int xh0 = static_cast<int>(((qh >> j) << 4) & 0x10);
      const int xh1 = static_cast<int>((qh >> (j + 12)) & 0x10);
      const int x0 = (b.qs[j] & 0x0F) | xh0;
      const int x1 = (b.qs[j] >> 4) | xh1;
      y[j] = static_cast<float>(x0) * d + m;
      y[j + qk / 2] = static_cast<float>(x1) * d + m;
    }
  }
}

void dequantize_row_q8_0(const void* src, float* dst, int64_t n) {
  constexpr int qk = kQK8_0;
  for (int64_t i = 0; i < n / qk; ++i) {
    const auto b = load_block<BlockQ8_0>(src, i);
    const float d = fp16_to_fp32(b.d);
    float* y = dst + i * qk;
    for (int j = 0; j < qk; ++j) y[j] = static_cast<float>(b.qs[j]) * d;
  }
}

}  // namespace cellserve::engine::quant
