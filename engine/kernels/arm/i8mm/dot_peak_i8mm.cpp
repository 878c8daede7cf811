// The i8mm extension's int8 dot: smmla, a 2x8 by 8x2 product into 2x2 int32, 32 multiply-adds
// each. See engine/kernels/dot_peak.h.
#include <arm_neon.h>

#include "engine/kernels/arm/dot_peak_arm.h"

namespace cellserve::engine::kernels::arm::i8mm {

uint64_t int8_dot_peak(uint64_t iterations, int64_t* sink) {
  int8x16_t a = vdupq_n_s8(1), b = vdupq_n_s8(1);
#define CS_DECLARE(i) int32x4_t c##i = vdupq_n_s32(0);
  CS_PEAK_CHAINS12(CS_DECLARE)
#undef CS_DECLARE
  for (uint64_t i = 0; i < iterations; ++i) {
    asm volatile("" : "+w"(a), "+w"(b));
#define CS_STEP(i)               \
  asm volatile("" : "+w"(c##i)); \
  c##i = vmmlaq_s32(c##i, a, b);
    CS_PEAK_CHAINS12(CS_STEP)
#undef CS_STEP
  }
  int64_t sum = 0;
#define CS_SUM(i) sum += vaddlvq_s32(c##i);
  CS_PEAK_CHAINS12(CS_SUM)
#undef CS_SUM
  *sink = sum;
  return iterations * 12 * 32;
}

}  // namespace cellserve::engine::kernels::arm::i8mm
