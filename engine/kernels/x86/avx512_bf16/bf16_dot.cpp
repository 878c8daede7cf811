// BF16 x BF16 dot products with AVX512-BF16's vdpbf16ps, for the avx512-bf16 table: one
// instruction multiplies 32 pairs of BF16 values and adds each adjacent pair of products into
// one of 16 float lanes. The products are exact in float; the sums are float, not the
// reference's double (as the AVX2 kernel's), and vdpbf16ps flushes denormal inputs and outputs to
// zero, so results agree with the reference within the float tolerance of IsaTest, not bit for
// bit. The tile keeps R rows x C tokens of accumulators in registers; vec_dot is its 1 x 1
// instance, so a tile's entries equal vec_dot's bit for bit.
#include <immintrin.h>

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

// One step of the tile: 32 BF16 values of each row and each token, masked when `Masked`.
template <int R, int C, bool Masked>
inline void bf16_step(const uint8_t* w, size_t w_stride, const uint8_t* a, size_t a_stride, __mmask32 mask,
                      __m512 (&acc)[R][C]) {
  __m512bh wv[R];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) wv[r] = Masked ? load32(w + r * w_stride, mask) : load32(w + r * w_stride);
#pragma GCC unroll 8
  for (int c = 0; c < C; ++c) {
    const __m512bh av = Masked ? load32(a + c * a_stride, mask) : load32(a + c * a_stride);
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) acc[r][c] = _mm512_dpbf16_ps(acc[r][c], wv[r], av);
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
#pragma GCC unroll 8
  for (int c = 0; c < C; ++c) {
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) y[c * y_stride + r] = sum16(acc[r][c]);
  }
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

}  // namespace cellserve::engine::kernels::x86::bf16
