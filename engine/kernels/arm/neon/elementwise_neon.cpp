// NEON element-wise kernels: y += alpha * x over F16 x, and SwiGLU with a vectorised exp.
#include <arm_neon.h>

#include <cstring>

#include "engine/kernels/arm/neon/legacy_kernels.h"

namespace cellserve::engine::kernels::arm {
namespace {

// exp(x) to a few ulp. x = n*ln2 + r with |r| <= ln2/2, exp(r) by its degree-6 Taylor polynomial
// (truncation < 1.2e-7 relative), and 2^n applied as two factors 2^(n/2) * 2^(n - n/2) so results
// overflow to inf and underflow to subnormals/zero exactly where expf does (x is clamped to
// [-104, 89], beyond which expf is already 0 or inf).
float32x4_t exp_f32(float32x4_t x) {
  x = vminq_f32(vmaxq_f32(x, vdupq_n_f32(-104.0f)), vdupq_n_f32(89.0f));
  const float32x4_t n = vrndnq_f32(vmulq_n_f32(x, 1.44269504088896341f));
  float32x4_t r = vfmsq_f32(x, n, vdupq_n_f32(0.693145751953125f));  // ln2 high part (exact n*hi)
  r = vfmsq_f32(r, n, vdupq_n_f32(1.428606765330187e-06f));          // ln2 low part
  float32x4_t p = vdupq_n_f32(1.0f / 720.0f);
  p = vfmaq_f32(vdupq_n_f32(1.0f / 120.0f), p, r);
  p = vfmaq_f32(vdupq_n_f32(1.0f / 24.0f), p, r);
  p = vfmaq_f32(vdupq_n_f32(1.0f / 6.0f), p, r);
  p = vfmaq_f32(vdupq_n_f32(0.5f), p, r);
  p = vfmaq_f32(vdupq_n_f32(1.0f), p, r);
  p = vfmaq_f32(vdupq_n_f32(1.0f), p, r);
  const int32x4_t ni = vcvtq_s32_f32(n);
  const int32x4_t n1 = vshrq_n_s32(ni, 1);
  const int32x4_t n2 = vsubq_s32(ni, n1);
  const float32x4_t s1 = vreinterpretq_f32_s32(vshlq_n_s32(vaddq_s32(n1, vdupq_n_s32(127)), 23));
  const float32x4_t s2 = vreinterpretq_f32_s32(vshlq_n_s32(vaddq_s32(n2, vdupq_n_s32(127)), 23));
  return vmulq_f32(vmulq_f32(p, s1), s2);
}

float32x4_t swiglu4(float32x4_t g, float32x4_t u) {
  const float32x4_t e = exp_f32(vnegq_f32(g));
  return vmulq_f32(vdivq_f32(g, vaddq_f32(vdupq_n_f32(1.0f), e)), u);
}

}  // namespace

void axpy_f16_neon(int64_t n, float alpha, const uint16_t* x, float* y) {
  const auto* xb = reinterpret_cast<const uint8_t*>(x);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const float16x8_t h = vreinterpretq_f16_u8(vld1q_u8(xb + 2 * i));
    vst1q_f32(y + i, vfmaq_n_f32(vld1q_f32(y + i), vcvt_f32_f16(vget_low_f16(h)), alpha));
    vst1q_f32(y + i + 4, vfmaq_n_f32(vld1q_f32(y + i + 4), vcvt_high_f32_f16(h), alpha));
  }
  for (; i < n; ++i) {
    __fp16 h;
    std::memcpy(&h, xb + 2 * i, sizeof(h));
    y[i] += alpha * static_cast<float>(h);
  }
}

void swiglu_neon(int64_t n, const float* gate, const float* up, float* h) {
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) vst1q_f32(h + i, swiglu4(vld1q_f32(gate + i), vld1q_f32(up + i)));
  if (i < n) {  // the tail through a zero-padded vector (same arithmetic as the body)
    float g[4] = {0, 0, 0, 0}, u[4] = {0, 0, 0, 0}, out[4];
    std::memcpy(g, gate + i, static_cast<size_t>(n - i) * sizeof(float));
    std::memcpy(u, up + i, static_cast<size_t>(n - i) * sizeof(float));
    vst1q_f32(out, swiglu4(vld1q_f32(g), vld1q_f32(u)));
    std::memcpy(h + i, out, static_cast<size_t>(n - i) * sizeof(float));
  }
}

}  // namespace cellserve::engine::kernels::arm
