// AVX-512's int8 dot without VNNI (vpmaddubsw, vpmaddwd with ones, vpaddd on zmm: 64
// multiply-adds per three instructions) and its F32 FMA (16 per vfmadd). See
// engine/kernels/dot_peak.h.
#include <immintrin.h>

#include "engine/kernels/x86/dot_peak_x86.h"

namespace cellserve::engine::kernels::x86::avx512 {
// Each chain has its own input: one product for all would be computed once.
uint64_t int8_dot_peak(uint64_t iterations, int64_t* sink) {
  const __m512i b = _mm512_set1_epi8(1), ones = _mm512_set1_epi16(1);
#define CS_DECLARE(i)                 \
  __m512i a##i = _mm512_set1_epi8(1); \
  __m512i c##i = _mm512_setzero_si512();
  CS_PEAK_CHAINS12(CS_DECLARE)
#undef CS_DECLARE
  for (uint64_t i = 0; i < iterations; ++i) {
#define CS_STEP(i)                           \
  asm volatile("" : "+v"(a##i), "+v"(c##i)); \
  c##i = _mm512_add_epi32(c##i, _mm512_madd_epi16(_mm512_maddubs_epi16(a##i, b), ones));
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

uint64_t bf16_dot_peak(uint64_t iterations, int64_t* sink) {
  __m512 a = _mm512_set1_ps(1.0f);
#define CS_DECLARE(i) __m512 c##i = _mm512_setzero_ps();
  CS_PEAK_CHAINS12(CS_DECLARE)
#undef CS_DECLARE
  for (uint64_t i = 0; i < iterations; ++i) {
    asm volatile("" : "+v"(a));
#define CS_STEP(i)               \
  asm volatile("" : "+v"(c##i)); \
  c##i = _mm512_fmadd_ps(a, a, c##i);
    CS_PEAK_CHAINS12(CS_STEP)
#undef CS_STEP
  }
  double sum = 0;
#define CS_SUM(i) sum += sum_lanes(c##i);
  CS_PEAK_CHAINS12(CS_SUM)
#undef CS_SUM
  *sink = static_cast<int64_t>(sum);
  return iterations * 12 * 16;
}

}  // namespace cellserve::engine::kernels::x86::avx512
