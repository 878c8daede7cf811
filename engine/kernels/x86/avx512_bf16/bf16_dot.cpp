// BF16 x BF16 dot products with AVX512-BF16's vdpbf16ps, for the avx512-bf16 table: one
// instruction multiplies 32 pairs of BF16 values and adds each adjacent pair of products into
// one of 16 float lanes. The products are exact in float; the sums are float, not the
// reference's double (as the AVX2 kernel's), and vdpbf16ps flushes denormal inputs and outputs to
// zero, so results agree with the reference within the float tolerance of IsaTest, not bit for
// bit. The tile keeps R rows x C tokens of accumulators in registers; vec_dot is its 1 x 1
// instance, so a tile's entries equal vec_dot's bit for bit.
#include <immintrin.h>

#include "base/check.h"
#include "engine/kernels/x86/avx2/lanes.h"
#include "engine/kernels/x86/avx512/lanes512.h"
#include "engine/kernels/x86/avx512_bf16/bf16_kernels.h"

namespace cellserve::engine::kernels::x86::bf16 {
namespace {

// 32 BF16 values at p as the vdpbf16ps operand; only the first `count` (< 32) when masked, the
// rest zero (whose products add nothing).
inline __m512bh load32(const uint8_t* p, __mmask32 mask) {
  return reinterpret_cast<__m512bh>(_mm512_maskz_loadu_epi16(mask, p));
}
inline __m512bh load32(const uint8_t* p) { return reinterpret_cast<__m512bh>(_mm512_loadu_si512(p)); }

inline float sum16(__m512 v) { return horizontal_sum(_mm256_add_ps(low_half(v), high_half(v))); }

// The four levels of sum16_transposed. Each adds two shuffles of a and b (vshuff32x4 and
// vshufps, written as vector shuffles because GCC 12's intrinsics start from an undefined vector,
// see lanes512.h); every sum is one of sum16's, only the lanes it lands in differ.
// Lanes i + (i + 8) of a into the low 256 bits, of b into the high.
inline __m512 add_halves(__m512 a, __m512 b) {
  return _mm512_add_ps(__builtin_shufflevector(a, b, 0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23),
                       __builtin_shufflevector(a, b, 8, 9, 10, 11, 12, 13, 14, 15, 24, 25, 26, 27, 28, 29, 30, 31));
}
// 128-bit lanes 0 + 1 and 2 + 3 of a into lanes 0 and 1, of b into lanes 2 and 3.
inline __m512 add_lane_pairs(__m512 a, __m512 b) {
  return _mm512_add_ps(__builtin_shufflevector(a, b, 0, 1, 2, 3, 8, 9, 10, 11, 16, 17, 18, 19, 24, 25, 26, 27),
                       __builtin_shufflevector(a, b, 4, 5, 6, 7, 12, 13, 14, 15, 20, 21, 22, 23, 28, 29, 30, 31));
}
// In each 128-bit lane: values 0 + 2 and 1 + 3 of a, then of b.
inline __m512 add_value_pairs(__m512 a, __m512 b) {
  return _mm512_add_ps(__builtin_shufflevector(a, b, 0, 1, 16, 17, 4, 5, 20, 21, 8, 9, 24, 25, 12, 13, 28, 29),
                       __builtin_shufflevector(a, b, 2, 3, 18, 19, 6, 7, 22, 23, 10, 11, 26, 27, 14, 15, 30, 31));
}
// In each 128-bit lane: values 0 + 1 and 2 + 3 of a, then of b.
inline __m512 add_neighbours(__m512 a, __m512 b) {
  return _mm512_add_ps(__builtin_shufflevector(a, b, 0, 2, 16, 18, 4, 6, 20, 22, 8, 10, 24, 26, 12, 14, 28, 30),
                       __builtin_shufflevector(a, b, 1, 3, 17, 19, 5, 7, 21, 23, 9, 11, 25, 27, 13, 15, 29, 31));
}

// sum16 of 16 accumulators at once, transposed: lane 4k + j of the result is sum16(v[4j + k]),
// with every lane's additions those of sum16 (lanes i and i + 8, then j and j + 4, then k and
// k + 2, then the last two), so the tile's sums equal vec_dot's bit for bit. 45 shuffles and adds
// where sixteen sum16 take about 130.
inline __m512 sum16_transposed(const __m512 (&v)[16]) {
  __m512 h[8];  // h[p]: the halves' sums of v[2p] (128-bit lanes 0-1) and v[2p + 1] (lanes 2-3)
#pragma GCC unroll 8
  for (int p = 0; p < 8; ++p) h[p] = add_halves(v[2 * p], v[2 * p + 1]);
  __m512 q[4];  // q[m]: 128-bit lane k holds the four sums of v[4m + k]
#pragma GCC unroll 4
  for (int m = 0; m < 4; ++m) q[m] = add_lane_pairs(h[2 * m], h[2 * m + 1]);
  // Lane k: the two sums of v[k] and v[4 + k] (first), of v[8 + k] and v[12 + k] (second).
  return add_neighbours(add_value_pairs(q[0], q[1]), add_value_pairs(q[2], q[3]));
}

// The 128-bit lane k of v.
template <int K>
inline __m128 lane128(__m512 v) {
  return __builtin_shufflevector(v, v, 4 * K, 4 * K + 1, 4 * K + 2, 4 * K + 3);
}

// One step of the tile: 32 BF16 values of each row and each token, masked when `Masked`. The
// tokens' values stay in registers while each row's are loaded once and met with all of them, so
// a step holds R x C accumulators, C activation registers and one weight register.
template <int R, int C, bool Masked>
inline void bf16_step(const uint8_t* w, size_t w_stride, const uint8_t* a, size_t a_stride, __mmask32 mask,
                      __m512 (&acc)[R][C]) {
  __m512bh av[C];
#pragma GCC unroll 8
  for (int c = 0; c < C; ++c) av[c] = Masked ? load32(a + c * a_stride, mask) : load32(a + c * a_stride);
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
    const __m512bh wv = Masked ? load32(w + r * w_stride, mask) : load32(w + r * w_stride);
#pragma GCC unroll 8
    for (int c = 0; c < C; ++c) acc[r][c] = _mm512_dpbf16_ps(acc[r][c], wv, av[c]);
  }
}

// Token K's six row sums: rows 0-3 from lane K of s03, rows 4-5 from the low half of lane K of s45.
template <int K>
inline void store_token(__m512 s03, __m512 s45, float* y) {
  _mm_storeu_ps(y, lane128<K>(s03));
  _mm_storel_pi(reinterpret_cast<__m64*>(y + 4), lane128<K>(s45));
}

// y[c * y_stride + r] = sum16(acc[r][c]).
template <int R, int C>
inline void store_sums(const __m512 (&acc)[R][C], float* y, int64_t y_stride) {
  if constexpr (R == 6 && C == 4) {
    // Rows 0-3 of the four tokens, then rows 4-5 (each passed twice; the copies' sums unused).
    const __m512 top[16] = {acc[0][0], acc[0][1], acc[0][2], acc[0][3], acc[1][0], acc[1][1], acc[1][2], acc[1][3],
                            acc[2][0], acc[2][1], acc[2][2], acc[2][3], acc[3][0], acc[3][1], acc[3][2], acc[3][3]};
    const __m512 low[16] = {acc[4][0], acc[4][1], acc[4][2], acc[4][3], acc[5][0], acc[5][1], acc[5][2], acc[5][3],
                            acc[4][0], acc[4][1], acc[4][2], acc[4][3], acc[5][0], acc[5][1], acc[5][2], acc[5][3]};
    const __m512 s03 = sum16_transposed(top);
    const __m512 s45 = sum16_transposed(low);
    store_token<0>(s03, s45, y);
    store_token<1>(s03, s45, y + y_stride);
    store_token<2>(s03, s45, y + 2 * y_stride);
    store_token<3>(s03, s45, y + 3 * y_stride);
  } else {
#pragma GCC unroll 8
    for (int c = 0; c < C; ++c) {
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r) y[c * y_stride + r] = sum16(acc[r][c]);
    }
  }
}

template <int R, int C>
void bf16_tile(int64_t n, const uint8_t* w, size_t w_stride, const uint8_t* a, size_t a_stride, float* y,
               int64_t y_stride) {
  __m512 acc[R][C];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 8
    for (int c = 0; c < C; ++c) acc[r][c] = _mm512_setzero_ps();
  }
  // Plain loads for whole steps, a masked one for the tail: on Zen 5 a decode whose every load was
  // masked read BF16 rows at a third of llama.cpp's speed. The zeroed lanes add nothing either way.
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) bf16_step<R, C, false>(w + i * 2, w_stride, a + i * 2, a_stride, 0, acc);
  if (i < n) {
    const auto mask = static_cast<__mmask32>((1u << (n - i)) - 1u);
    bf16_step<R, C, true>(w + i * 2, w_stride, a + i * 2, a_stride, mask, acc);
  }
  store_sums(acc, y, y_stride);
}

}  // namespace

float vec_dot_bf16(int64_t n, const void* w, const void* a) {
  float y;
  bf16_tile<1, 1>(n, static_cast<const uint8_t*>(w), 0, static_cast<const uint8_t*>(a), 0, &y, 1);
  return y;
}

void tile_dot_bf16(int64_t n, const void* w, size_t w_stride, const void* a, size_t a_stride, float* y,
                   int64_t y_stride) {
  bf16_tile<kTileBf16Rows, kTileBf16Cols>(n, static_cast<const uint8_t*>(w), w_stride, static_cast<const uint8_t*>(a),
                                          a_stride, y, y_stride);
}

void tile_dot_bf16_rows(int rows, int64_t n, const void* w, size_t w_stride, const void* a, size_t a_stride, float* y,
                        int64_t y_stride) {
  static_assert(kTileBf16Rows == 6, "one case per row count below the tile's");
  const auto* wb = static_cast<const uint8_t*>(w);
  const auto* ab = static_cast<const uint8_t*>(a);
  switch (rows) {
    case 1:
      return bf16_tile<1, kTileBf16Cols>(n, wb, w_stride, ab, a_stride, y, y_stride);
    case 2:
      return bf16_tile<2, kTileBf16Cols>(n, wb, w_stride, ab, a_stride, y, y_stride);
    case 3:
      return bf16_tile<3, kTileBf16Cols>(n, wb, w_stride, ab, a_stride, y, y_stride);
    case 4:
      return bf16_tile<4, kTileBf16Cols>(n, wb, w_stride, ab, a_stride, y, y_stride);
    case 5:
      return bf16_tile<5, kTileBf16Cols>(n, wb, w_stride, ab, a_stride, y, y_stride);
    default:
      CS_CHECK(false) << "tile_dot_bf16_rows: " << rows << " rows";
  }
}

}  // namespace cellserve::engine::kernels::x86::bf16
