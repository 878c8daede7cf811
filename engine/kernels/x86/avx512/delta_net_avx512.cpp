// The float Gated DeltaNet (delta_net_float.h) with 512-bit primitives for its two matrix
// products, for the avx512 tables; the rest is the AVX2 primitives'. Both give the AVX2 kernel's
// results bit for bit, so the tables agree with each other:
//   - dot_tile: a register holds two b rows' 8-lane sums in its halves (as the attention scores
//     hold two keys), each half the AVX2 accumulator of that dot product, reduced by the same
//     horizontal sum; so the tile can be 4 x 6 where AVX2's 16 registers allow 4 x 3.
//   - rows_axpy: 64 dimensions of up to three rows in 12 registers; each element's fma chain
//     runs over m in order whatever the vector width.
#include <immintrin.h>

#include "engine/kernels/delta_net_float.h"
#include "engine/kernels/x86/avx2/delta_net_ops_avx2.h"
#include "engine/kernels/x86/avx512/avx512_kernels.h"
#include "engine/kernels/x86/avx512/lanes512.h"

namespace cellserve::engine::kernels::x86::avx512 {
namespace {

// Eight floats of row a in the low half and eight of row b in the high half.
inline __m512 load_row_pair(const float* a, const float* b) {
  return __builtin_shufflevector(_mm256_loadu_ps(a), _mm256_loadu_ps(b), 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13,
                                 14, 15);
}

struct Avx512Ops : Avx2Ops {
  static constexpr int kTileRows = 4;
  static constexpr int kTileCols = 6;

  // out[i * out_row + j * out_col] = dot(a + i a_stride, b + j b_stride, n) for i < R, j < C; b rows
  // 2p and 2p + 1 share register p (for odd C the last pair's second row repeats its first, and is
  // not stored).
  template <int R, int C>
  static void dot_tile(const float* a, int64_t a_stride, const float* b, int64_t b_stride, int64_t n, float* out,
                       int64_t out_row, int64_t out_col) {
    constexpr int P = (C + 1) / 2;
    const float* second[P];
#pragma GCC unroll 3
    for (int p = 0; p < P; ++p) second[p] = b + (2 * p + 1 < C ? 2 * p + 1 : 2 * p) * b_stride;
    __m512 acc[R][P];
#pragma GCC unroll 4
    for (int i = 0; i < R; ++i) {
#pragma GCC unroll 3
      for (int p = 0; p < P; ++p) acc[i][p] = _mm512_setzero_ps();
    }
    int64_t d = 0;
    for (; d + 8 <= n; d += 8) {
      __m512 bv[P];
#pragma GCC unroll 3
      for (int p = 0; p < P; ++p) bv[p] = load_row_pair(b + 2 * p * b_stride + d, second[p] + d);
#pragma GCC unroll 4
      for (int i = 0; i < R; ++i) {
        const __m512 av = _mm512_maskz_broadcast_f32x8(kAll16, _mm256_loadu_ps(a + i * a_stride + d));
#pragma GCC unroll 3
        for (int p = 0; p < P; ++p) acc[i][p] = _mm512_fmadd_ps(av, bv[p], acc[i][p]);
      }
    }
#pragma GCC unroll 4
    for (int i = 0; i < R; ++i) {
#pragma GCC unroll 6
      for (int j = 0; j < C; ++j) {
        const __m512 both = acc[i][j / 2];
        float sum = horizontal_sum(j % 2 == 0 ? low_half(both) : high_half(both));
        for (int64_t e = d; e < n; ++e) sum += a[i * a_stride + e] * b[j * b_stride + e];
        out[i * out_row + j * out_col] = sum;
      }
    }
  }

  // Avx2Ops::rows_axpy's contract (y_i += Σ_m c[i c_row + m c_m] x_m for rows i < R), 64
  // dimensions a pass; what is left below 64 goes to the AVX2 primitive.
  template <int R>
  static void rows_axpy(float* y, int64_t y_stride, const float* c, int64_t c_row, int64_t c_m, const float* x,
                        int64_t x_stride, int64_t count, int64_t n) {
    int64_t d = 0;
    for (; d + 64 <= n; d += 64) {
      __m512 acc[R][4];
#pragma GCC unroll 3
      for (int i = 0; i < R; ++i) {
#pragma GCC unroll 4
        for (int u = 0; u < 4; ++u) acc[i][u] = _mm512_loadu_ps(y + i * y_stride + d + 16 * u);
      }
      for (int64_t m = 0; m < count; ++m) {
        const float* xm = x + m * x_stride + d;
        __m512 cv[R];
#pragma GCC unroll 3
        for (int i = 0; i < R; ++i) cv[i] = _mm512_set1_ps(c[i * c_row + m * c_m]);
#pragma GCC unroll 4
        for (int u = 0; u < 4; ++u) {
          const __m512 xv = _mm512_loadu_ps(xm + 16 * u);
#pragma GCC unroll 3
          for (int i = 0; i < R; ++i) acc[i][u] = _mm512_fmadd_ps(cv[i], xv, acc[i][u]);
        }
      }
#pragma GCC unroll 3
      for (int i = 0; i < R; ++i) {
#pragma GCC unroll 4
        for (int u = 0; u < 4; ++u) _mm512_storeu_ps(y + i * y_stride + d + 16 * u, acc[i][u]);
      }
    }
    if (d < n) Avx2Ops::rows_axpy<R>(y + d, y_stride, c, c_row, c_m, x + d, x_stride, count, n - d);
  }
};

}  // namespace

void delta_net_chunked(const reference::DeltaNetHeadArgs& a, float* state, int64_t chunk_size) {
  delta_net_chunked_float<Avx512Ops>(a, state, chunk_size);
}

}  // namespace cellserve::engine::kernels::x86::avx512
