// AVX2 element-wise kernels: attention's F16 axpy and SwiGLU with a vectorised exp.
#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "engine/kernels/x86/avx2/legacy_kernels.h"

namespace cellserve::engine::kernels::x86 {
namespace {

// e^x within ~2 ulp: x = n ln2 + r with |r| <= ln2/2 (ln2 split in two so n ln2 is exact),
// e^r by Cephes' degree-6 polynomial, then 2^n applied as 2^(n-1) * 2 so that n = 128 (x up to
// the overflow threshold) still scales by normal numbers. Above ~88.72 the result is +inf;
// below -86.6 it is flushed to 0 (true value < 2^-124: 1 + e^x is 1 there anyway). Never NaN
// for non-NaN x.
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

// silu(g) * u = g / (1 + e^-g) * u. For g << 0, e^-g is +inf and the quotient a signed zero,
// as in the reference.
inline __m256 swiglu8(__m256 g, __m256 u) {
  const __m256 e = exp_ps(_mm256_sub_ps(_mm256_setzero_ps(), g));
  return _mm256_mul_ps(_mm256_div_ps(g, _mm256_add_ps(_mm256_set1_ps(1.0f), e)), u);
}

}  // namespace

void axpy_f16(int64_t n, float alpha, const uint16_t* x, float* y) {
  const __m256 a = _mm256_set1_ps(alpha);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 xv = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x + i)));
    _mm256_storeu_ps(y + i, _mm256_fmadd_ps(a, xv, _mm256_loadu_ps(y + i)));
  }
  if (i < n) {
    const auto count = static_cast<size_t>(n - i);
    uint16_t xt[8] = {};
    float yt[8] = {};
    std::memcpy(xt, x + i, count * sizeof(uint16_t));
    std::memcpy(yt, y + i, count * sizeof(float));
    const __m256 xv = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(xt)));
    _mm256_storeu_ps(yt, _mm256_fmadd_ps(a, xv, _mm256_loadu_ps(yt)));
    std::memcpy(y + i, yt, count * sizeof(float));
  }
}

void swiglu(int64_t n, const float* gate, const float* up, float* h) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(h + i, swiglu8(_mm256_loadu_ps(gate + i), _mm256_loadu_ps(up + i)));
  if (i < n) {
    const auto count = static_cast<size_t>(n - i);
    float gt[8] = {};
    float ut[8] = {};
    std::memcpy(gt, gate + i, count * sizeof(float));
    std::memcpy(ut, up + i, count * sizeof(float));
    _mm256_storeu_ps(gt, swiglu8(_mm256_loadu_ps(gt), _mm256_loadu_ps(ut)));
    std::memcpy(h + i, gt, count * sizeof(float));
  }
}

}  // namespace cellserve::engine::kernels::x86
