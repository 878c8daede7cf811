// NEON dot products of float rows: four F32x4 accumulators (FMA), F16/BF16 widened to F32 first.
#include <arm_neon.h>

#include <cstring>

#include "engine/kernels/arm/neon/legacy_kernels.h"

namespace cellserve::engine::kernels::arm {
namespace {

float scalar_f32(const uint8_t* p) {
  float f;
  std::memcpy(&f, p, sizeof(f));
  return f;
}

float scalar_half(const uint8_t* p) {
  __fp16 h;
  std::memcpy(&h, p, sizeof(h));
  return static_cast<float>(h);
}

float scalar_bf16(const uint8_t* p) {
  uint16_t b;
  std::memcpy(&b, p, sizeof(b));
  const uint32_t bits = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &bits, sizeof(f));
  return f;
}

// Loads 4 elements of a row (byte pointer: rows may be unaligned) widened to F32.
float32x4_t load_f32x4(const uint8_t* p) { return vreinterpretq_f32_u8(vld1q_u8(p)); }
float32x4_t load_f16x4(const uint8_t* p) { return vcvt_f32_f16(vreinterpret_f16_u8(vld1_u8(p))); }
float32x4_t load_bf16x4(const uint8_t* p) {
  return vreinterpretq_f32_u32(vshll_n_u16(vreinterpret_u16_u8(vld1_u8(p)), 16));
}

// Sums w[i] * a[i] for rows of `kBytes`-byte elements; `load` widens 4 elements to F32. Pass
// lambdas, not function pointers, so each element type gets its own inlined instantiation.
template <int kBytes, typename Load, typename Scalar>
float dot_rows(int64_t n, const uint8_t* w, const uint8_t* a, Load load, Scalar scalar) {
  // Four independent accumulators (named, not an array, so they stay in registers).
  float32x4_t acc0 = vdupq_n_f32(0.0f), acc1 = acc0, acc2 = acc0, acc3 = acc0;
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    acc0 = vfmaq_f32(acc0, load(w + kBytes * i), load(a + kBytes * i));
    acc1 = vfmaq_f32(acc1, load(w + kBytes * (i + 4)), load(a + kBytes * (i + 4)));
    acc2 = vfmaq_f32(acc2, load(w + kBytes * (i + 8)), load(a + kBytes * (i + 8)));
    acc3 = vfmaq_f32(acc3, load(w + kBytes * (i + 12)), load(a + kBytes * (i + 12)));
  }
  for (; i + 4 <= n; i += 4) acc0 = vfmaq_f32(acc0, load(w + kBytes * i), load(a + kBytes * i));
  float sum = vaddvq_f32(vaddq_f32(vaddq_f32(acc0, acc1), vaddq_f32(acc2, acc3)));
  for (; i < n; ++i) sum += scalar(w + kBytes * i) * scalar(a + kBytes * i);
  return sum;
}

}  // namespace

float vec_dot_f32_neon(int64_t n, const void* w, const void* a) {
  return dot_rows<4>(
      n, static_cast<const uint8_t*>(w), static_cast<const uint8_t*>(a), [](const uint8_t* p) { return load_f32x4(p); },
      [](const uint8_t* p) { return scalar_f32(p); });
}

float vec_dot_f16_neon(int64_t n, const void* w, const void* a) {
  return dot_rows<2>(
      n, static_cast<const uint8_t*>(w), static_cast<const uint8_t*>(a), [](const uint8_t* p) { return load_f16x4(p); },
      [](const uint8_t* p) { return scalar_half(p); });
}

float vec_dot_bf16_neon(int64_t n, const void* w, const void* a) {
  return dot_rows<2>(
      n, static_cast<const uint8_t*>(w), static_cast<const uint8_t*>(a),
      [](const uint8_t* p) { return load_bf16x4(p); }, [](const uint8_t* p) { return scalar_bf16(p); });
}

}  // namespace cellserve::engine::kernels::arm
