// AVX2 element-wise kernels: attention's F16 axpy, SwiGLU with a vectorised exp, and RMS norm.
#include <immintrin.h>

#include <algorithm>
#include <cmath>
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

// The 8 x 8 transpose: on return v[j] holds element j of the 8 rows that v[0..7] held.
inline void transpose8(__m256 (&v)[8]) {
  __m256 t[8];
  for (int k = 0; k < 8; k += 2) {
    t[k] = _mm256_unpacklo_ps(v[k], v[k + 1]);      // elements 0, 1 | 4, 5 of rows k, k + 1
    t[k + 1] = _mm256_unpackhi_ps(v[k], v[k + 1]);  // elements 2, 3 | 6, 7
  }
  __m256 q[8];  // q[j], q[4 + j]: element j | 4 + j of rows 0-3, of rows 4-7
  for (int h = 0; h < 8; h += 4) {
    q[h] = _mm256_shuffle_ps(t[h], t[h + 2], 0x44);
    q[h + 1] = _mm256_shuffle_ps(t[h], t[h + 2], 0xEE);
    q[h + 2] = _mm256_shuffle_ps(t[h + 1], t[h + 3], 0x44);
    q[h + 3] = _mm256_shuffle_ps(t[h + 1], t[h + 3], 0xEE);
  }
  for (int j = 0; j < 4; ++j) {
    v[j] = _mm256_permute2f128_ps(q[j], q[4 + j], 0x20);
    v[4 + j] = _mm256_permute2f128_ps(q[j], q[4 + j], 0x31);
  }
}

// sums[k] = the sum of row k's float squares in double, in index order, for 8 rows n apart. Each
// row's sum is one lane: the rows are transposed 8 elements at a time so that one vector add
// takes the next element of every row (a row's additions are a serial chain in any order that
// keeps them bit for bit, so the 8 rows' chains run side by side instead).
void sum_squares8(const float* x, int64_t n, double* sums) {
  __m256d lo = _mm256_setzero_pd();  // rows 0-3
  __m256d hi = _mm256_setzero_pd();  // rows 4-7
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m256 v[8];
    for (int k = 0; k < 8; ++k) {
      const __m256 xv = _mm256_loadu_ps(x + k * n + i);
      v[k] = _mm256_mul_ps(xv, xv);
    }
    transpose8(v);
    for (int j = 0; j < 8; ++j) {
      lo = _mm256_add_pd(lo, _mm256_cvtps_pd(_mm256_castps256_ps128(v[j])));
      hi = _mm256_add_pd(hi, _mm256_cvtps_pd(_mm256_extractf128_ps(v[j], 1)));
    }
  }
  _mm256_storeu_pd(sums, lo);
  _mm256_storeu_pd(sums + 4, hi);
  for (; i < n; ++i) {
    for (int k = 0; k < 8; ++k) sums[k] += static_cast<double>(x[k * n + i] * x[k * n + i]);
  }
}

// y = x * scale * w (no w when null): two float products per element, as the reference.
void scale_row(const float* x, float scale, const float* w, float* y, int64_t n) {
  const __m256 s = _mm256_set1_ps(scale);
  int64_t i = 0;
  if (w != nullptr) {
    for (; i + 8 <= n; i += 8) {
      _mm256_storeu_ps(y + i, _mm256_mul_ps(_mm256_mul_ps(_mm256_loadu_ps(x + i), s), _mm256_loadu_ps(w + i)));
    }
    for (; i < n; ++i) y[i] = x[i] * scale * w[i];
  } else {
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, _mm256_mul_ps(_mm256_loadu_ps(x + i), s));
    for (; i < n; ++i) y[i] = x[i] * scale;
  }
}

}  // namespace

void rms_norm(const float* x, const float* w, float* y, int64_t rows, int64_t n, float eps) {
  for (int64_t r = 0; r < rows; r += 8) {
    const int64_t m = std::min<int64_t>(8, rows - r);
    double sums[8] = {};
    if (m == 8) {
      sum_squares8(x + r * n, n, sums);
    } else {
      for (int64_t k = 0; k < m; ++k) {
        const float* xr = x + (r + k) * n;
        for (int64_t i = 0; i < n; ++i) sums[k] += static_cast<double>(xr[i] * xr[i]);
      }
    }
    // Every sum is taken before a row is written: y may be x.
    for (int64_t k = 0; k < m; ++k) {
      const float mean = static_cast<float>(sums[k] / static_cast<double>(n));
      scale_row(x + (r + k) * n, 1.0f / std::sqrt(mean + eps), w, y + (r + k) * n, n);
    }
  }
}

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
