// The AVX2 + FMA primitives of the float Gated DeltaNet (../../delta_net_float.h), for
// delta_net_avx2.cpp and, as the base of its 512-bit primitives, avx512/delta_net_avx512.cpp.
// Included only by files compiled with AVX2 flags (or wider); internal linkage.
#pragma once

#include <immintrin.h>

#include <cstdint>

#include "engine/kernels/x86/avx2/lanes.h"

namespace cellserve::engine::kernels::x86 {
namespace {

struct Avx2Ops {
  static constexpr int kTileRows = 4;  // dot_tile sizes (delta_net_float.h dot_block)
  static constexpr int kTileCols = 3;

  static float dot(const float* a, const float* b, int64_t n) {
    __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps(), acc2 = _mm256_setzero_ps(),
           acc3 = _mm256_setzero_ps();
    int64_t i = 0;
    for (; i + 32 <= n; i += 32) {
      acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), acc0);
      acc1 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 8), _mm256_loadu_ps(b + i + 8), acc1);
      acc2 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 16), _mm256_loadu_ps(b + i + 16), acc2);
      acc3 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 24), _mm256_loadu_ps(b + i + 24), acc3);
    }
    for (; i + 8 <= n; i += 8) acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), acc0);
    const __m256 acc = _mm256_add_ps(_mm256_add_ps(acc0, acc1), _mm256_add_ps(acc2, acc3));
    float sum = horizontal_sum(acc);
    for (; i < n; ++i) sum += a[i] * b[i];
    return sum;
  }
  static void axpy(float* y, float c, const float* x, int64_t n) {
    const __m256 cv = _mm256_set1_ps(c);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
      _mm256_storeu_ps(y + i, _mm256_fmadd_ps(cv, _mm256_loadu_ps(x + i), _mm256_loadu_ps(y + i)));
    for (; i < n; ++i) y[i] += c * x[i];
  }
  // out[i * out_row + j * out_col] = dot(a + i a_stride, b + j b_stride, n) for i < R, j < C: each
  // 8 dimensions of an a row and of a b row are loaded once for the whole tile.
  template <int R, int C>
  static void dot_tile(const float* a, int64_t a_stride, const float* b, int64_t b_stride, int64_t n, float* out,
                       int64_t out_row, int64_t out_col) {
    __m256 acc[R][C];
#pragma GCC unroll 4
    for (int i = 0; i < R; ++i) {
#pragma GCC unroll 4
      for (int j = 0; j < C; ++j) acc[i][j] = _mm256_setzero_ps();
    }
    int64_t d = 0;
    for (; d + 8 <= n; d += 8) {
      __m256 bv[C];
#pragma GCC unroll 4
      for (int j = 0; j < C; ++j) bv[j] = _mm256_loadu_ps(b + j * b_stride + d);
#pragma GCC unroll 4
      for (int i = 0; i < R; ++i) {
        const __m256 av = _mm256_loadu_ps(a + i * a_stride + d);
#pragma GCC unroll 4
        for (int j = 0; j < C; ++j) acc[i][j] = _mm256_fmadd_ps(av, bv[j], acc[i][j]);
      }
    }
#pragma GCC unroll 4
    for (int i = 0; i < R; ++i) {
#pragma GCC unroll 4
      for (int j = 0; j < C; ++j) {
        float sum = horizontal_sum(acc[i][j]);
        for (int64_t e = d; e < n; ++e) sum += a[i * a_stride + e] * b[j * b_stride + e];
        out[i * out_row + j * out_col] = sum;
      }
    }
  }
  // y_i[0, n) += sum over m < count of c[i * c_row + m * c_m] * x_m[0, n), for rows i < R (y_i at
  // y + i y_stride, x_m at x + m x_stride): 32 dimensions of R rows stay in registers over all m,
  // each element's fma chain in m order (as count calls of axpy would do it).
  template <int R>
  static void rows_axpy(float* y, int64_t y_stride, const float* c, int64_t c_row, int64_t c_m, const float* x,
                        int64_t x_stride, int64_t count, int64_t n) {
    int64_t d = 0;
    for (; d + 32 <= n; d += 32) {
      __m256 acc[R][4];
#pragma GCC unroll 4
      for (int i = 0; i < R; ++i) {
#pragma GCC unroll 4
        for (int u = 0; u < 4; ++u) acc[i][u] = _mm256_loadu_ps(y + i * y_stride + d + 8 * u);
      }
      for (int64_t m = 0; m < count; ++m) {
        const float* xm = x + m * x_stride + d;
        __m256 cv[R];
#pragma GCC unroll 4
        for (int i = 0; i < R; ++i) cv[i] = _mm256_set1_ps(c[i * c_row + m * c_m]);
#pragma GCC unroll 4
        for (int u = 0; u < 4; ++u) {
          const __m256 xv = _mm256_loadu_ps(xm + 8 * u);
#pragma GCC unroll 4
          for (int i = 0; i < R; ++i) acc[i][u] = _mm256_fmadd_ps(cv[i], xv, acc[i][u]);
        }
      }
#pragma GCC unroll 4
      for (int i = 0; i < R; ++i) {
#pragma GCC unroll 4
        for (int u = 0; u < 4; ++u) _mm256_storeu_ps(y + i * y_stride + d + 8 * u, acc[i][u]);
      }
    }
    for (; d + 8 <= n; d += 8) {
      __m256 acc[R];
#pragma GCC unroll 4
      for (int i = 0; i < R; ++i) acc[i] = _mm256_loadu_ps(y + i * y_stride + d);
      for (int64_t m = 0; m < count; ++m) {
        const __m256 xv = _mm256_loadu_ps(x + m * x_stride + d);
#pragma GCC unroll 4
        for (int i = 0; i < R; ++i) acc[i] = _mm256_fmadd_ps(_mm256_set1_ps(c[i * c_row + m * c_m]), xv, acc[i]);
      }
#pragma GCC unroll 4
      for (int i = 0; i < R; ++i) _mm256_storeu_ps(y + i * y_stride + d, acc[i]);
    }
    for (; d < n; ++d) {
      for (int i = 0; i < R; ++i) {
        float yi = y[i * y_stride + d];
        for (int64_t m = 0; m < count; ++m) yi = __builtin_fmaf(c[i * c_row + m * c_m], x[m * x_stride + d], yi);
        y[i * y_stride + d] = yi;
      }
    }
  }
  // scale(y, c, n) then dot(y, b, n), and axpy(y, c, x, n) then dot(y, b, n), each in one pass
  // over y: the same products, sums and order as the two calls, so the same bits, with y read
  // once where the two calls read it twice and the scaled or updated values never reloaded.
  static float scale_then_dot(float* y, float c, const float* b, int64_t n) {
    const __m256 cv = _mm256_set1_ps(c);
    return update_then_dot(
        y, b, n, [&](__m256 yv, int64_t) { return _mm256_mul_ps(cv, yv); }, [&](float yi, int64_t) { return yi * c; });
  }
  static float axpy_then_dot(float* y, float c, const float* x, const float* b, int64_t n) {
    const __m256 cv = _mm256_set1_ps(c);
    return update_then_dot(
        y, b, n, [&](__m256 yv, int64_t i) { return _mm256_fmadd_ps(cv, _mm256_loadu_ps(x + i), yv); },
        [&](float yi, int64_t i) { return yi + c * x[i]; });
  }
  // y[i] = update(y[i]) for every i (8 lanes at a time, then scalar), returning dot(y, b, n) over
  // the new values with dot's accumulators and order.
  template <typename Vector, typename Scalar>
  static float update_then_dot(float* y, const float* b, int64_t n, Vector update, Scalar update_one) {
    __m256 acc[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps()};
    int64_t i = 0;
    for (; i + 32 <= n; i += 32) {
#pragma GCC unroll 4
      for (int u = 0; u < 4; ++u) {
        const __m256 yv = update(_mm256_loadu_ps(y + i + 8 * u), i + 8 * u);
        _mm256_storeu_ps(y + i + 8 * u, yv);
        acc[u] = _mm256_fmadd_ps(yv, _mm256_loadu_ps(b + i + 8 * u), acc[u]);
      }
    }
    for (; i + 8 <= n; i += 8) {
      const __m256 yv = update(_mm256_loadu_ps(y + i), i);
      _mm256_storeu_ps(y + i, yv);
      acc[0] = _mm256_fmadd_ps(yv, _mm256_loadu_ps(b + i), acc[0]);
    }
    float sum = horizontal_sum(_mm256_add_ps(_mm256_add_ps(acc[0], acc[1]), _mm256_add_ps(acc[2], acc[3])));
    for (; i < n; ++i) {
      y[i] = update_one(y[i], i);
      sum += y[i] * b[i];
    }
    return sum;
  }
  static void scale(float* y, float c, int64_t n) {
    const __m256 cv = _mm256_set1_ps(c);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, _mm256_mul_ps(cv, _mm256_loadu_ps(y + i)));
    for (; i < n; ++i) y[i] *= c;
  }
};

}  // namespace
}  // namespace cellserve::engine::kernels::x86
