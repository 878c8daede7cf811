// Dot products of the blocks-of-32 types with SDOT (see legacy_kernels.h for the arithmetic).
#include "engine/kernels/arm/dotprod/legacy_block_dot.h"
#include "engine/kernels/arm/dotprod/legacy_kernels.h"

namespace cellserve::engine::kernels::arm {
namespace {

// Sum over blocks of d_w * d_a * (q_w · q_a) for a weight type taking Q8_0 activations: each
// block's whole integer sum (SDOT lanes reduced), then acc = fma(float(sum), d_w * d_a, acc).
template <typename Unpack>
float scaled_dot(int64_t n, const void* w, const void* a, Unpack unpack) {
  const auto* x = static_cast<const uint8_t*>(w);
  const auto* y = static_cast<const uint8_t*>(a);
  float acc = 0.0f;
  for (int64_t i = 0; i < n / 32; ++i) {
    const uint8_t* xb = x + i * Unpack::kBlockBytes;
    const uint8_t* yb = y + i * sizeof(BlockQ8_0);
    const int32_t sum = vaddvq_s32(sdot_block(unpack(xb), q8_0_quants(yb)));
    const float d = half_to_float(load_u16(xb)) * half_to_float(load_u16(yb));
    acc = __builtin_fmaf(static_cast<float>(sum), d, acc);  // FMADD, as the tiles' FMLA lanes
  }
  return acc;
}

// Q4_1 / Q5_1 against Q8_1: d_w * d_a * (q_w · q_a) + m_w * s_a per block, where m follows d in
// the weight block. Two accumulators: the minimum terms go to their own lanes.
template <size_t kBlockBytes, typename Unpack>
float offset_dot(int64_t n, const void* w, const void* a, Unpack unpack) {
  const auto* x = static_cast<const uint8_t*>(w);
  const auto* y = static_cast<const uint8_t*>(a);
  float32x4_t acc = vdupq_n_f32(0.0f);
  float32x2_t minimums = vdup_n_f32(0.0f);
  for (int64_t i = 0; i < n / 32; ++i) {
    const uint8_t* xb = x + i * kBlockBytes;
    const uint8_t* yb = y + i * sizeof(BlockQ8_1);
    const float d = half_to_float(load_u16(xb)) * half_to_float(load_u16(yb + offsetof(BlockQ8_1, d)));
    acc = scale_accumulate(acc, sdot_block(unpack(xb), q8_1_quants(yb)), d);
    minimums = vfma_n_f32(minimums, vdup_n_f32(half_to_float(load_u16(xb + 2))),
                          half_to_float(load_u16(yb + offsetof(BlockQ8_1, s))));
  }
  return vaddvq_f32(acc) + vget_lane_f32(minimums, 0);
}

}  // namespace

float vec_dot_q4_0_dotprod(int64_t n, const void* w, const void* a) { return scaled_dot(n, w, a, UnpackQ4_0{}); }
float vec_dot_q5_0_dotprod(int64_t n, const void* w, const void* a) { return scaled_dot(n, w, a, UnpackQ5_0{}); }
float vec_dot_q8_0_dotprod(int64_t n, const void* w, const void* a) { return scaled_dot(n, w, a, UnpackQ8_0{}); }
float vec_dot_iq4_nl_dotprod(int64_t n, const void* w, const void* a) { return scaled_dot(n, w, a, UnpackIq4Nl{}); }

float vec_dot_q4_1_dotprod(int64_t n, const void* w, const void* a) {
  return offset_dot<sizeof(BlockQ4_1)>(n, w, a,
                                       [](const uint8_t* b) { return unpack_q4_1(b + offsetof(BlockQ4_1, qs)); });
}

float vec_dot_q5_1_dotprod(int64_t n, const void* w, const void* a) {
  return offset_dot<sizeof(BlockQ5_1)>(
      n, w, a, [](const uint8_t* b) { return unpack_q5_1(b + offsetof(BlockQ5_1, qs), b + offsetof(BlockQ5_1, qh)); });
}

}  // namespace cellserve::engine::kernels::arm
