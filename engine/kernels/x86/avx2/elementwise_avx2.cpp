// AVX2 element-wise kernels: attention's F16 axpy and SwiGLU with a vectorised exp.
#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "engine/kernels/x86/avx2/lanes.h"
#include "engine/kernels/x86/avx2/legacy_kernels.h"

namespace cellserve::engine::kernels::x86 {
namespace {

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
