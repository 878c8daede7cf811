// Scalar <-> lane helpers shared by the AVX2 kernels. AVX2-compiled files only; everything has
// internal linkage (docs/kernels.md, compile-flag hygiene).
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <cstring>

namespace cellserve::engine::kernels::x86 {
namespace {

// The fp16 value at p (any alignment) as a float.
inline float load_fp16(const void* p) {
  uint16_t h;
  std::memcpy(&h, p, sizeof(h));
  return _cvtsh_ss(h);
}

// Sum of the 8 lanes in a fixed order, ((l0+l4)+(l2+l6))+((l1+l5)+(l3+l7)): kernels whose
// results must match each other or a scalar reference bit for bit rely on it.
inline float horizontal_sum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

// 4 activation quants broadcast to every 32-bit lane, to meet 4 quants of each of 8 rows.
inline __m256i broadcast_u32(const int8_t* p) {
  int32_t v;
  std::memcpy(&v, p, sizeof(v));
  return _mm256_set1_epi32(v);
}

// e^x within ~2 ulp (reference::attn_exp does the same operations in scalar code, so the
// softmax built on it equals its reference bit for bit): x = n ln2 + r with |r| <= ln2/2 (ln2 split in two so n ln2 is
// exact), e^r by Cephes' degree-6 polynomial, then 2^n applied as 2^(n-1) * 2 so that n = 128 (x up to the overflow
// threshold) still scales by normal numbers. Above ~88.72 the result is +inf; below -86.6 it is flushed to 0 (true
// value < 2^-124: 1 + e^x is 1 there anyway). Never NaN for non-NaN x.
inline __m256 exp_ps(__m256 x) {
  const __m256 overflow = _mm256_cmp_ps(x, _mm256_set1_ps(88.72283935546875f), _CMP_GT_OQ);
  const __m256 underflow = _mm256_cmp_ps(x, _mm256_set1_ps(-86.6f), _CMP_LT_OQ);
  x = _mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(-86.6f)), _mm256_set1_ps(88.72283935546875f));
  const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                                   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
  __m256 p = _mm256_set1_ps(1.9875691500e-4f);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894e-2f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459e-1f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201e-1f));
  const __m256 r2 = _mm256_mul_ps(r, r);
  const __m256 er = _mm256_add_ps(_mm256_fmadd_ps(p, r2, r), _mm256_set1_ps(1.0f));
  // n is in [-125, 128], so 2^(n-1) has a normal exponent field.
  const __m256i half_scale = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(126)), 23);
  __m256 e = _mm256_mul_ps(_mm256_mul_ps(er, _mm256_castsi256_ps(half_scale)), _mm256_set1_ps(2.0f));
  e = _mm256_blendv_ps(e, _mm256_set1_ps(__builtin_inff()), overflow);
  return _mm256_andnot_ps(underflow, e);
}

}  // namespace
}  // namespace cellserve::engine::kernels::x86
