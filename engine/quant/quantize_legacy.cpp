// Reference encoders of the legacy block types Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q8_1: the
// algorithms of llama.cpp's quantize_row_*_ref (ggml-quants.c), operation for operation, so
// the bytes match what llama-quantize writes without an importance matrix.
//
// Every float->int conversion below truncates exactly like the C casts it mirrors; the inputs
// must be finite (a NaN or inf would make those casts undefined, in ggml too).
#include <algorithm>
#include <cfloat>
#include <cmath>

#include "engine/quant/quant_internal.h"

namespace cellserve::engine::quant {
namespace {

// The element of largest magnitude, with its sign (the first one on ties).
float signed_absmax(const float* x, int n) {
  float amax = 0.0f, max = 0.0f;
  for (int j = 0; j < n; ++j) {
    if (amax < std::fabs(x[j])) {
      amax = std::fabs(x[j]);
      max = x[j];
    }
  }
  return max;
}

void min_max(const float* x, int n, float* min, float* max) {
  *min = FLT_MAX;
  *max = -FLT_MAX;
  for (int j = 0; j < n; ++j) {
    if (x[j] < *min) *min = x[j];
    if (x[j] > *max) *max = x[j];
  }
}

// Packs 32 five-bit quants into 16 low-nibble bytes and the 32-bit high-bit word.
void pack_q5(const uint8_t q[32], uint8_t qs[16], uint8_t qh[4]) {
  uint32_t h = 0;
  for (int j = 0; j < 16; ++j) {
    qs[j] = static_cast<uint8_t>((q[j] & 0x0F) | (q[j + 16] & 0x0F) << 4);
    h |= ((q[j] & 0x10u) >> 4) << j;
    h |= ((q[j + 16] & 0x10u) >> 4) << (j + 16);
  }
  for (int k = 0; k < 4; ++k) qh[k] = static_cast<uint8_t>(h >> (8 * k));
}

}  // namespace

// Q4_0: the signed extreme maps to -8, so d = max / -8; q = min(15, trunc(x/d + 8.5)).
void quantize_row_q4_0(const float* src, void* dst, int64_t n) {
  constexpr int qk = kQK4_0;
  for (int64_t i = 0; i < n / qk; ++i) {
    const float* x = src + i * qk;
    const float d = signed_absmax(x, qk) / -8;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    BlockQ4_0 b;
    b.d = fp32_to_fp16(d);
    for (int j = 0; j < qk / 2; ++j) {
      const float x0 = x[j] * id;
      const float x1 = x[j + qk / 2] * id;
      const uint8_t xi0 = static_cast<uint8_t>(std::min(15, static_cast<int>(static_cast<int8_t>(x0 + 8.5f))));
      const uint8_t xi1 = static_cast<uint8_t>(std::min(15, static_cast<int>(static_cast<int8_t>(x1 + 8.5f))));
      b.qs[j] = static_cast<uint8_t>(xi0 | xi1 << 4);
    }
    store_block(dst, i, b);
  }
}

// Q4_1: d = (max - min) / 15, m = min; q = min(15, trunc((x - min)/d + 0.5)).
void quantize_row_q4_1(const float* src, void* dst, int64_t n) {
  constexpr int qk = kQK4_1;
  for (int64_t i = 0; i < n / qk; ++i) {
    const float* x = src + i * qk;
    float min, max;
    min_max(x, qk, &min, &max);
    const float d = (max - min) / ((1 << 4) - 1);
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    BlockQ4_1 b;
    b.d = fp32_to_fp16(d);
    b.m = fp32_to_fp16(min);
    for (int j = 0; j < qk / 2; ++j) {
      const float x0 = (x[j] - min) * id;
      const float x1 = (x[j + qk / 2] - min) * id;
      const uint8_t xi0 = static_cast<uint8_t>(std::min(15, static_cast<int>(static_cast<int8_t>(x0 + 0.5f))));
      const uint8_t xi1 = static_cast<uint8_t>(std::min(15, static_cast<int>(static_cast<int8_t>(x1 + 0.5f))));
      b.qs[j] = static_cast<uint8_t>(xi0 | xi1 << 4);
    }
    store_block(dst, i, b);
  }
}

// Q5_0: as Q4_0 with 5 bits: d = max / -16, q = min(31, trunc(x/d + 16.5)).
void quantize_row_q5_0(const float* src, void* dst, int64_t n) {
  constexpr int qk = kQK5_0;
  for (int64_t i = 0; i < n / qk; ++i) {
    const float* x = src + i * qk;
    const float d = signed_absmax(x, qk) / -16;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    uint8_t q[qk];
    for (int j = 0; j < qk; ++j) {
      q[j] = static_cast<uint8_t>(std::min(31, static_cast<int>(static_cast<int8_t>(x[j] * id + 16.5f))));
    }
    BlockQ5_0 b;
    b.d = fp32_to_fp16(d);
    pack_q5(q, b.qs, b.qh);
    store_block(dst, i, b);
  }
}

// Q5_1: d = (max - min) / 31, m = min; q = trunc((x - min)/d + 0.5) (no clamp, as in ggml).
void quantize_row_q5_1(const float* src, void* dst, int64_t n) {
  constexpr int qk = kQK5_1;
  for (int64_t i = 0; i < n / qk; ++i) {
    const float* x = src + i * qk;
    float min, max;
    min_max(x, qk, &min, &max);
    const float d = (max - min) / ((1 << 5) - 1);
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    uint8_t q[qk];
    for (int j = 0; j < qk; ++j) q[j] = static_cast<uint8_t>((x[j] - min) * id + 0.5f);
    BlockQ5_1 b;
    b.d = fp32_to_fp16(d);
    b.m = fp32_to_fp16(min);
    pack_q5(q, b.qs, b.qh);
    store_block(dst, i, b);
  }
}

// Q8_0: d = amax / 127, q = roundf(x / d) (half away from zero).
void quantize_row_q8_0(const float* src, void* dst, int64_t n) {
  constexpr int qk = kQK8_0;
  for (int64_t i = 0; i < n / qk; ++i) {
    const float* x = src + i * qk;
    float amax = 0.0f;
    for (int j = 0; j < qk; ++j) amax = std::max(amax, std::fabs(x[j]));
    const float d = amax / ((1 << 7) - 1);
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    BlockQ8_0 b;
    b.d = fp32_to_fp16(d);
    for (int j = 0; j < qk; ++j) b.qs[j] = static_cast<int8_t>(std::round(x[j] * id));
    store_block(dst, i, b);
  }
}

// Q8_1: as Q8_0, plus s = fp16(sum(q) * d) with d before fp16 rounding.
void quantize_row_q8_1(const float* src, void* dst, int64_t n) {
  constexpr int qk = kQK8_1;
  for (int64_t i = 0; i < n / qk; ++i) {
    const float* x = src + i * qk;
    float amax = 0.0f;
    for (int j = 0; j < qk; ++j) amax = std::max(amax, std::fabs(x[j]));
    const float d = amax / ((1 << 7) - 1);
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    BlockQ8_1 b;
    b.d = fp32_to_fp16(d);
    int sum = 0;
    for (int j = 0; j < qk; ++j) {
      b.qs[j] = static_cast<int8_t>(std::round(x[j] * id));
      sum += b.qs[j];
    }
    b.s = fp32_to_fp16(static_cast<float>(sum) * d);
    store_block(dst, i, b);
  }
}

}  // namespace cellserve::engine::quant
