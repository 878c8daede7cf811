// Scalar reference: activations converted to the block format a weight type's dot product takes,
// computed exactly as llama.cpp's CPU backend does on x86 (the machine the goldens came from):
// Q8_0/Q8_1 use q = round-half-even(x * 127/amax) (what _mm256_round_ps does), Q8_K uses
// ggml's quantize_row_q8_K_ref, F16/BF16 round to nearest-even.
#include <cmath>
#include <cstddef>
#include <cstring>

#include "base/half.h"
#include "engine/kernels/reference/reference_kernels.h"
#include "engine/quant/block_types.h"

namespace cellserve::engine::kernels::reference {

void from_float_f32(const float* src, void* dst, int64_t n) { std::memcpy(dst, src, static_cast<size_t>(n) * 4); }

// Half-precision rows are written with memcpy: dst may have any alignment.
void round_f16(const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = fp16_to_fp32(fp32_to_fp16(x[i]));
}

void from_float_f16(const float* src, void* dst, int64_t n) {
  auto* y = static_cast<std::byte*>(dst);
  for (int64_t i = 0; i < n; ++i) {
    const uint16_t h = fp32_to_fp16(src[i]);
    std::memcpy(y + 2 * i, &h, 2);
  }
}

void from_float_bf16(const float* src, void* dst, int64_t n) {
  auto* y = static_cast<std::byte*>(dst);
  for (int64_t i = 0; i < n; ++i) {
    const uint16_t h = fp32_to_bf16(src[i]);
    std::memcpy(y + 2 * i, &h, 2);
  }
}

namespace {

// One block of 32: scale d = amax/127, quants round-half-even(x * 127/amax). Returns sum(q).
int quantize_block_32(const float* x, float* d, int8_t* q) {
  float amax = 0.0f;
  for (int j = 0; j < 32; ++j) amax = std::fmax(amax, std::fabs(x[j]));
  *d = amax / 127.0f;
  const float id = amax != 0.0f ? 127.0f / amax : 0.0f;
  int sum = 0;
  for (int j = 0; j < 32; ++j) {
    q[j] = static_cast<int8_t>(std::nearbyint(x[j] * id));  // default rounding mode: ties to even
    sum += q[j];
  }
  return sum;
}

}  // namespace

// Blocks are built locally and copied out: dst may have any alignment.
void from_float_q8_0(const float* src, void* dst, int64_t n) {
  auto* out = static_cast<std::byte*>(dst);
  for (int64_t i = 0; i < n / 32; ++i) {
    BlockQ8_0 y{};
    float d = 0.0f;
    quantize_block_32(src + i * 32, &d, y.qs);
    y.d = fp32_to_fp16(d);
    std::memcpy(out + i * static_cast<int64_t>(sizeof y), &y, sizeof y);
  }
}

void from_float_q8_1(const float* src, void* dst, int64_t n) {
  auto* out = static_cast<std::byte*>(dst);
  for (int64_t i = 0; i < n / 32; ++i) {
    BlockQ8_1 y{};
    float d = 0.0f;
    const int sum = quantize_block_32(src + i * 32, &d, y.qs);
    y.d = fp32_to_fp16(d);
    y.s = fp32_to_fp16(d * static_cast<float>(sum));
    std::memcpy(out + i * static_cast<int64_t>(sizeof y), &y, sizeof y);
  }
}

void from_float_q8_k(const float* src, void* dst, int64_t n) {
  auto* out = static_cast<std::byte*>(dst);
  for (int64_t i = 0; i < n / 256; ++i) {
    const float* x = src + i * 256;
    BlockQ8_K y{};  // all zero: the block of an all-zero input
    float max = 0.0f;
    float amax = 0.0f;
    for (int j = 0; j < 256; ++j) {
      const float ax = std::fabs(x[j]);
      if (ax > amax) {
        amax = ax;
        max = x[j];
      }
    }
    if (amax != 0.0f) {
      // The signed extreme maps to -127, so +127 is never exceeded except by rounding (clamped).
      const float iscale = -127.0f / max;
      for (int j = 0; j < 256; ++j) {
        const int v = static_cast<int>(std::nearbyint(iscale * x[j]));
        y.qs[j] = static_cast<int8_t>(v > 127 ? 127 : v);
      }
      for (int j = 0; j < 16; ++j) {
        int sum = 0;
        for (int l = 0; l < 16; ++l) sum += y.qs[j * 16 + l];
        y.bsums[j] = static_cast<int16_t>(sum);
      }
      y.d = 1.0f / iscale;
    }
    std::memcpy(out + i * static_cast<int64_t>(sizeof y), &y, sizeof y);
  }
}

}  // namespace cellserve::engine::kernels::reference
