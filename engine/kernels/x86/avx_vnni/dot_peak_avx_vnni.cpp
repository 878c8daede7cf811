// AVX-VNNI's int8 dot: vpdpbusd on ymm (VEX), 32 multiply-adds each. See engine/kernels/dot_peak.h.
#include <immintrin.h>

#include "engine/kernels/x86/dot_peak_x86.h"

namespace cellserve::engine::kernels::x86::avx_vnni {
uint64_t int8_dot_peak(uint64_t iterations, int64_t* sink) {
  __m256i a = _mm256_set1_epi8(1), b = _mm256_set1_epi8(1);
#define CS_DECLARE(i) __m256i c##i = _mm256_setzero_si256();
  CS_PEAK_CHAINS8(CS_DECLARE)
#undef CS_DECLARE
  for (uint64_t i = 0; i < iterations; ++i) {
    asm volatile("" : "+x"(a), "+x"(b));
#define CS_STEP(i)               \
  asm volatile("" : "+x"(c##i)); \
  c##i = _mm256_dpbusd_avx_epi32(c##i, a, b);
    CS_PEAK_CHAINS8(CS_STEP)
#undef CS_STEP
  }
  int64_t sum = 0;
#define CS_SUM(i) sum += static_cast<int64_t>(sum_lanes(c##i));
  CS_PEAK_CHAINS8(CS_SUM)
#undef CS_SUM
  *sink = sum;
  return iterations * 8 * 32;
}

}  // namespace cellserve::engine::kernels::x86::avx_vnni
