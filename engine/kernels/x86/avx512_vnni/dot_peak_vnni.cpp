// AVX-512 VNNI's int8 dot: vpdpbusd on zmm, 64 multiply-adds each (the tables' kernels use it on
// ymm as well; the peak is the instruction's widest form). See engine/kernels/dot_peak.h.
#include <immintrin.h>

#include "engine/kernels/x86/dot_peak_x86.h"

namespace cellserve::engine::kernels::x86::vnni {
uint64_t int8_dot_peak(uint64_t iterations, int64_t* sink) {
  __m512i a = _mm512_set1_epi8(1), b = _mm512_set1_epi8(1);
#define CS_DECLARE(i) __m512i c##i = _mm512_setzero_si512();
  CS_PEAK_CHAINS12(CS_DECLARE)
#undef CS_DECLARE
  for (uint64_t i = 0; i < iterations; ++i) {
    asm volatile("" : "+v"(a), "+v"(b));
#define CS_STEP(i)               \
  asm volatile("" : "+v"(c##i)); \
  c##i = _mm512_dpbusd_epi32(c##i, a, b);
    CS_PEAK_CHAINS12(CS_STEP)
#undef CS_STEP
  }
  int64_t sum = 0;
#define CS_SUM(i) sum += static_cast<int64_t>(sum_lanes(c##i));
  CS_PEAK_CHAINS12(CS_SUM)
#undef CS_SUM
  *sink = sum;
  return iterations * 12 * 64;
}

}  // namespace cellserve::engine::kernels::x86::vnni
