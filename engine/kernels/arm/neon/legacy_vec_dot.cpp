// NEON (no dot-product extension) dot products of the blocks-of-32 types: the weight block is
// unpacked to int8 lanes, multiplied with vmull_s8/vmlal_high_s8 into int16 (two products per
// lane fit: |q_w * q_a| <= 127 * 127) and pairwise-accumulated into int32 with vpadalq_s16.
// Each block's int32x4 partial sums are scaled in F32 lanes; two accumulators hide FMA latency.
#include <arm_neon.h>

#include <cstddef>

#include "engine/kernels/arm/neon/legacy_kernels.h"
#include "engine/kernels/arm/neon/legacy_unpack.h"

namespace cellserve::engine::kernels::arm {
namespace {

int32x4_t dot_block(int8x16x2_t x, int8x16x2_t y) {
  int16x8_t p0 = vmull_s8(vget_low_s8(x.val[0]), vget_low_s8(y.val[0]));
  p0 = vmlal_high_s8(p0, x.val[0], y.val[0]);
  int16x8_t p1 = vmull_s8(vget_low_s8(x.val[1]), vget_low_s8(y.val[1]));
  p1 = vmlal_high_s8(p1, x.val[1], y.val[1]);
  return vpadalq_s16(vpaddlq_s16(p0), p1);
}

// Sum over blocks of (d_w * d_a) * (q_w · q_a): `unpack(block)` gives the weight quants of a
// weight block (byte pointer), which starts with its fp16 scale, as does the activation block.
template <size_t kWeightBlock, size_t kActBlock, size_t kActQs, typename Unpack>
float scaled_block_dot(int64_t n, const void* w, const void* a, Unpack unpack) {
  const auto* x = static_cast<const uint8_t*>(w);
  const auto* y = static_cast<const uint8_t*>(a);
  const int64_t blocks = n / 32;
  auto block = [&](int64_t i, float32x4_t acc) {
    const uint8_t* xb = x + i * kWeightBlock;
    const uint8_t* yb = y + i * kActBlock;
    const int32x4_t s = dot_block(unpack(xb), load_q8(reinterpret_cast<const int8_t*>(yb + kActQs)));
    const float d = half_to_float(load_u16(xb)) * half_to_float(load_u16(yb));
    return vfmaq_n_f32(acc, vcvtq_f32_s32(s), d);
  };
  float32x4_t even = vdupq_n_f32(0.0f), odd = even;  // two chains hide the FMA latency
  int64_t i = 0;
  for (; i + 2 <= blocks; i += 2) {
    even = block(i, even);
    odd = block(i + 1, odd);
  }
  if (i < blocks) even = block(i, even);
  return vaddvq_f32(vaddq_f32(even, odd));
}

// Sum over blocks of m_w * s_a (the minimum term of Q4_1/Q5_1; m follows d in the weight block).
template <size_t kWeightBlock>
float minimum_terms(int64_t n, const void* w, const void* a) {
  const auto* x = static_cast<const uint8_t*>(w);
  const auto* y = static_cast<const uint8_t*>(a);
  float sum = 0.0f;
  for (int64_t i = 0; i < n / 32; ++i) {
    sum += half_to_float(load_u16(x + i * kWeightBlock + 2)) *
           half_to_float(load_u16(y + i * sizeof(BlockQ8_1) + offsetof(BlockQ8_1, s)));
  }
  return sum;
}

}  // namespace

float vec_dot_q8_0_neon(int64_t n, const void* w, const void* a) {
  return scaled_block_dot<sizeof(BlockQ8_0), sizeof(BlockQ8_0), offsetof(BlockQ8_0, qs)>(
      n, w, a, [](const uint8_t* b) { return load_q8(reinterpret_cast<const int8_t*>(b + offsetof(BlockQ8_0, qs))); });
}

float vec_dot_q4_0_neon(int64_t n, const void* w, const void* a) {
  return scaled_block_dot<sizeof(BlockQ4_0), sizeof(BlockQ8_0), offsetof(BlockQ8_0, qs)>(
      n, w, a, [](const uint8_t* b) { return unpack_q4_0(b + offsetof(BlockQ4_0, qs)); });
}

float vec_dot_q5_0_neon(int64_t n, const void* w, const void* a) {
  return scaled_block_dot<sizeof(BlockQ5_0), sizeof(BlockQ8_0), offsetof(BlockQ8_0, qs)>(
      n, w, a, [](const uint8_t* b) { return unpack_q5_0(b + offsetof(BlockQ5_0, qs), b + offsetof(BlockQ5_0, qh)); });
}

float vec_dot_iq4_nl_neon(int64_t n, const void* w, const void* a) {
  const int8x16_t codebook = iq4_nl_codebook();
  return scaled_block_dot<sizeof(BlockIQ4_NL), sizeof(BlockQ8_0), offsetof(BlockQ8_0, qs)>(
      n, w, a, [codebook](const uint8_t* b) { return unpack_iq4_nl(b + offsetof(BlockIQ4_NL, qs), codebook); });
}

float vec_dot_q4_1_neon(int64_t n, const void* w, const void* a) {
  const float sum = scaled_block_dot<sizeof(BlockQ4_1), sizeof(BlockQ8_1), offsetof(BlockQ8_1, qs)>(
      n, w, a, [](const uint8_t* b) { return unpack_q4_1(b + offsetof(BlockQ4_1, qs)); });
  return sum + minimum_terms<sizeof(BlockQ4_1)>(n, w, a);
}

float vec_dot_q5_1_neon(int64_t n, const void* w, const void* a) {
  const float sum = scaled_block_dot<sizeof(BlockQ5_1), sizeof(BlockQ8_1), offsetof(BlockQ8_1, qs)>(
      n, w, a, [](const uint8_t* b) { return unpack_q5_1(b + offsetof(BlockQ5_1, qs), b + offsetof(BlockQ5_1, qh)); });
  return sum + minimum_terms<sizeof(BlockQ5_1)>(n, w, a);
}

}  // namespace cellserve::engine::kernels::arm
