// Scalar reference dot products for the blocks-of-32 types against Q8_0 / Q8_1 activations,
// in the arithmetic order of ggml's generic kernels: an exact integer sum per block, then
// scaled by the two fp16 scales.
#include "base/half.h"
#include "engine/kernels/reference/reference_kernels.h"
#include "engine/quant/block_types.h"
#include "engine/quant/quant_internal.h"

namespace cellserve::engine::kernels::reference {
namespace {

using quant::kIq4nlValues;
using quant::load_block;

// Sum of q[j] * y[j] over a block whose weight quants are low/high nibbles mapped through `map`.
template <typename Map>
int nibble_dot(const uint8_t* qs, const int8_t* y, Map map) {
  int sum = 0;
  for (int j = 0; j < 16; ++j) {
    sum += map(qs[j] & 0xF) * y[j];
    sum += map(qs[j] >> 4) * y[j + 16];
  }
  return sum;
}

uint32_t load_qh(const uint8_t* qh) { return qh[0] | qh[1] << 8 | qh[2] << 16 | static_cast<uint32_t>(qh[3]) << 24; }

// Sum of (5-bit q - offset) * y for a Q5 block.
int five_bit_dot(const uint8_t* qs, const uint8_t* qh_bytes, const int8_t* y, int offset) {
  const uint32_t qh = load_qh(qh_bytes);
  int sum = 0;
  for (int j = 0; j < 16; ++j) {
    const int lo = (qs[j] & 0xF) | static_cast<int>((qh >> j) & 1) << 4;
    const int hi = (qs[j] >> 4) | static_cast<int>((qh >> (j + 16)) & 1) << 4;
    sum += (lo - offset) * y[j] + (hi - offset) * y[j + 16];
  }
  return sum;
}

}  // namespace

float vec_dot_q4_0(int64_t n, const void* w, const void* a) {
  float sum = 0.0f;
  for (int64_t i = 0; i < n / 32; ++i) {
    const auto x = load_block<BlockQ4_0>(w, i);
    const auto y = load_block<BlockQ8_0>(a, i);
    const int sumi = nibble_dot(x.qs, y.qs, [](int q) { return q - 8; });
    sum += static_cast<float>(sumi) * fp16_to_fp32(x.d) * fp16_to_fp32(y.d);
  }
  return sum;
}

float vec_dot_q4_1(int64_t n, const void* w, const void* a) {
  float sum = 0.0f;
  for (int64_t i = 0; i < n / 32; ++i) {
    const auto x = load_block<BlockQ4_1>(w, i);
    const auto y = load_block<BlockQ8_1>(a, i);
    const int sumi = nibble_dot(x.qs, y.qs, [](int q) { return q; });
    sum += fp16_to_fp32(x.d) * fp16_to_fp32(y.d) * static_cast<float>(sumi) + fp16_to_fp32(x.m) * fp16_to_fp32(y.s);
  }
  return sum;
}

float vec_dot_q5_0(int64_t n, const void* w, const void* a) {
  float sum = 0.0f;
  for (int64_t i = 0; i < n / 32; ++i) {
    const auto x = load_block<BlockQ5_0>(w, i);
    const auto y = load_block<BlockQ8_0>(a, i);
    const int sumi = five_bit_dot(x.qs, x.qh, y.qs, 16);
    sum += static_cast<float>(sumi) * fp16_to_fp32(x.d) * fp16_to_fp32(y.d);
  }
  return sum;
}

float vec_dot_q5_1(int64_t n, const void* w, const void* a) {
  float sum = 0.0f;
  for (int64_t i = 0; i < n / 32; ++i) {
    const auto x = load_block<BlockQ5_1>(w, i);
    const auto y = load_block<BlockQ8_1>(a, i);
    const int sumi = five_bit_dot(x.qs, x.qh, y.qs, 0);
    sum += fp16_to_fp32(x.d) * fp16_to_fp32(y.d) * static_cast<float>(sumi) + fp16_to_fp32(x.m) * fp16_to_fp32(y.s);
  }
  return sum;
}

float vec_dot_q8_0(int64_t n, const void* w, const void* a) {
  float sum = 0.0f;
  for (int64_t i = 0; i < n / 32; ++i) {
    const auto x = load_block<BlockQ8_0>(w, i);
    const auto y = load_block<BlockQ8_0>(a, i);
    int sumi = 0;
    for (int j = 0; j < 32; ++j) sumi += x.qs[j] * y.qs[j];
    sum += static_cast<float>(sumi) * fp16_to_fp32(x.d) * fp16_to_fp32(y.d);
  }
  return sum;
}

float vec_dot_iq4_nl(int64_t n, const void* w, const void* a) {
  float sum = 0.0f;
  for (int64_t i = 0; i < n / 32; ++i) {
    const auto x = load_block<BlockIQ4_NL>(w, i);
    const auto y = load_block<BlockQ8_0>(a, i);
    const int sumi = nibble_dot(x.qs, y.qs, [](int q) { return static_cast<int>(kIq4nlValues[q]); });
    sum += fp16_to_fp32(x.d) * fp16_to_fp32(y.d) * static_cast<float>(sumi);
  }
  return sum;
}

}  // namespace cellserve::engine::kernels::reference
