// AVX512-BF16's dot: vdpbf16ps on zmm, 32 BF16 multiply-adds each (16 float lanes, two pairs per
// lane). See engine/kernels/dot_peak.h.
#include <immintrin.h>

#include "engine/kernels/x86/dot_peak_x86.h"

namespace cellserve::engine::kernels::x86::bf16 {
uint64_t bf16_dot_peak(uint64_t iterations, int64_t* sink) {
  __m512bh a = reinterpret_cast<__m512bh>(_mm512_set1_epi16(0x3f80));  // BF16 1.0
#define CS_DECLARE(i) __m512 c##i = _mm512_setzero_ps();
  CS_PEAK_CHAINS12(CS_DECLARE)
#undef CS_DECLARE
  for (uint64_t i = 0; i < iterations; ++i) {
    asm volatile("" : "+v"(a));
#define CS_STEP(i)               \
  asm volatile("" : "+v"(c##i)); \
  c##i = _mm512_dpbf16_ps(c##i, a, a);
    CS_PEAK_CHAINS12(CS_STEP)
#undef CS_STEP
  }
  double sum = 0;
#define CS_SUM(i) sum += sum_lanes(c##i);
  CS_PEAK_CHAINS12(CS_SUM)
#undef CS_SUM
  *sink = static_cast<int64_t>(sum);
  return iterations * 12 * 32;
}

}  // namespace cellserve::engine::kernels::x86::bf16
