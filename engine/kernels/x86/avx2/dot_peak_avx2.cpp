// AVX2's int8 dot (vpmaddubsw, then vpmaddwd with ones and vpaddd: 32 multiply-adds per three
// instructions, as the AVX2 kernels do it) and its F32 FMA (8 per vfmadd), which BF16 weights are
// computed with on this table. See engine/kernels/dot_peak.h.
#include <immintrin.h>

#include "engine/kernels/x86/dot_peak_x86.h"

namespace cellserve::engine::kernels::x86::avx2 {
// Four chains, each with its own input (one product for all would be computed once): with the
// constants and the products in flight, more do not fit the 16 registers.
uint64_t int8_dot_peak(uint64_t iterations, int64_t* sink) {
  const __m256i b = _mm256_set1_epi8(1), ones = _mm256_set1_epi16(1);
  __m256i a0 = _mm256_set1_epi8(1), a1 = a0, a2 = a0, a3 = a0;
  __m256i c0 = _mm256_setzero_si256(), c1 = c0, c2 = c0, c3 = c0;
  for (uint64_t i = 0; i < iterations; ++i) {
    asm volatile("" : "+x"(a0), "+x"(a1), "+x"(a2), "+x"(a3), "+x"(c0), "+x"(c1), "+x"(c2), "+x"(c3));
    c0 = _mm256_add_epi32(c0, _mm256_madd_epi16(_mm256_maddubs_epi16(a0, b), ones));
    c1 = _mm256_add_epi32(c1, _mm256_madd_epi16(_mm256_maddubs_epi16(a1, b), ones));
    c2 = _mm256_add_epi32(c2, _mm256_madd_epi16(_mm256_maddubs_epi16(a2, b), ones));
    c3 = _mm256_add_epi32(c3, _mm256_madd_epi16(_mm256_maddubs_epi16(a3, b), ones));
  }
  *sink = static_cast<int64_t>(sum_lanes(c0) + sum_lanes(c1) + sum_lanes(c2) + sum_lanes(c3));
  return iterations * 4 * 32;
}

uint64_t bf16_dot_peak(uint64_t iterations, int64_t* sink) {
  __m256 a = _mm256_set1_ps(1.0f);
#define CS_DECLARE(i) __m256 c##i = _mm256_setzero_ps();
  CS_PEAK_CHAINS8(CS_DECLARE)
#undef CS_DECLARE
  for (uint64_t i = 0; i < iterations; ++i) {
    asm volatile("" : "+x"(a));
#define CS_STEP(i)               \
  asm volatile("" : "+x"(c##i)); \
  c##i = _mm256_fmadd_ps(a, a, c##i);
    CS_PEAK_CHAINS8(CS_STEP)
#undef CS_STEP
  }
  double sum = 0;
#define CS_SUM(i) sum += sum_lanes(c##i);
  CS_PEAK_CHAINS8(CS_SUM)
#undef CS_SUM
  *sink = static_cast<int64_t>(sum);
  return iterations * 8 * 8;
}

}  // namespace cellserve::engine::kernels::x86::avx2
