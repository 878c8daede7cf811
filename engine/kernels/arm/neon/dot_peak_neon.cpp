// Plain NEON's int8 dot (smull to int16, then sadalp into int32: 8 multiply-adds per pair of
// instructions) and its F32 FMA (4 per fmla), which BF16 weights are computed with on the NEON
// tables. See engine/kernels/dot_peak.h.
#include <arm_neon.h>

#include "engine/kernels/arm/dot_peak_arm.h"

namespace cellserve::engine::kernels::arm::neon {

// Each chain has its own input: one product for all would be computed once.
uint64_t int8_dot_peak(uint64_t iterations, int64_t* sink) {
  const int8x8_t b = vdup_n_s8(1);
#define CS_DECLARE(i)           \
  int8x8_t a##i = vdup_n_s8(1); \
  int32x4_t c##i = vdupq_n_s32(0);
  CS_PEAK_CHAINS12(CS_DECLARE)
#undef CS_DECLARE
  for (uint64_t i = 0; i < iterations; ++i) {
#define CS_STEP(i)                           \
  asm volatile("" : "+w"(a##i), "+w"(c##i)); \
  c##i = vpadalq_s16(c##i, vmull_s8(a##i, b));
    CS_PEAK_CHAINS12(CS_STEP)
#undef CS_STEP
  }
  int64_t sum = 0;
#define CS_SUM(i) sum += vaddlvq_s32(c##i);
  CS_PEAK_CHAINS12(CS_SUM)
#undef CS_SUM
  *sink = sum;
  return iterations * 12 * 8;
}

uint64_t bf16_dot_peak(uint64_t iterations, int64_t* sink) {
  float32x4_t a = vdupq_n_f32(1.0f);
#define CS_DECLARE(i) float32x4_t c##i = vdupq_n_f32(0.0f);
  CS_PEAK_CHAINS12(CS_DECLARE)
#undef CS_DECLARE
  for (uint64_t i = 0; i < iterations; ++i) {
    asm volatile("" : "+w"(a));
#define CS_STEP(i)               \
  asm volatile("" : "+w"(c##i)); \
  c##i = vfmaq_f32(c##i, a, a);
    CS_PEAK_CHAINS12(CS_STEP)
#undef CS_STEP
  }
  double sum = 0;
#define CS_SUM(i) sum += vaddvq_f32(c##i);
  CS_PEAK_CHAINS12(CS_SUM)
#undef CS_SUM
  *sink = static_cast<int64_t>(sum);
  return iterations * 12 * 4;
}

}  // namespace cellserve::engine::kernels::arm::neon
