// AVX2 dot products of the float weight types (F32, F16 via F16C, BF16 by a 16-bit shift) in F32
// lanes.
#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "engine/kernels/x86/avx2/lanes.h"
#include "engine/kernels/x86/avx2/legacy_kernels.h"

namespace cellserve::engine::kernels::x86 {
namespace {

// Loaders of 8 lanes, full or the first `count` (< 8) zero-padded.
struct F32Lanes {
  static __m256 load(const uint8_t* p) { return _mm256_loadu_ps(reinterpret_cast<const float*>(p)); }
  static constexpr size_t kBytes = 4;
};
struct F16Lanes {
  static __m256 load(const uint8_t* p) { return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))); }
  static constexpr size_t kBytes = 2;
};

template <typename L>
__m256 load_partial(const uint8_t* p, int64_t count) {
  alignas(32) uint8_t buf[32] = {};
  std::memcpy(buf, p, static_cast<size_t>(count) * L::kBytes);
  return L::load(buf);
}

// Four independent accumulators over 32 elements per step (latency-bound otherwise).
template <typename L>
float stream_dot(int64_t n, const void* wv, const void* av) {
  const auto* w = static_cast<const uint8_t*>(wv);
  const auto* a = static_cast<const uint8_t*>(av);
  constexpr int64_t s = L::kBytes;
  __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps(), acc2 = _mm256_setzero_ps(), acc3 = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    acc0 = _mm256_fmadd_ps(L::load(w + i * s), L::load(a + i * s), acc0);
    acc1 = _mm256_fmadd_ps(L::load(w + (i + 8) * s), L::load(a + (i + 8) * s), acc1);
    acc2 = _mm256_fmadd_ps(L::load(w + (i + 16) * s), L::load(a + (i + 16) * s), acc2);
    acc3 = _mm256_fmadd_ps(L::load(w + (i + 24) * s), L::load(a + (i + 24) * s), acc3);
  }
  for (; i + 8 <= n; i += 8) acc0 = _mm256_fmadd_ps(L::load(w + i * s), L::load(a + i * s), acc0);
  if (i < n) acc1 = _mm256_fmadd_ps(load_partial<L>(w + i * s, n - i), load_partial<L>(a + i * s, n - i), acc1);
  return horizontal_sum(_mm256_add_ps(_mm256_add_ps(acc0, acc1), _mm256_add_ps(acc2, acc3)));
}

// The F16 R x C tile; vec_dot_f16 is its 1 x 1 instance, so tile values equal vec_dot's bit for
// bit. Two accumulators per pair (16 elements per step), so a 2 x 3 tile holds 12 of them.
template <typename L, int R, int C>
void half_tile(int64_t n, const uint8_t* w, size_t w_stride, const uint8_t* a, size_t a_stride, float* y,
               int64_t y_stride) {
  __m256 acc0[R][C];
  __m256 acc1[R][C];
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 16
    for (int c = 0; c < C; ++c) acc0[r][c] = acc1[r][c] = _mm256_setzero_ps();
  }
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    __m256 w0[R], w1[R];
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) {
      w0[r] = L::load(w + r * w_stride + i * 2);
      w1[r] = L::load(w + r * w_stride + i * 2 + 16);
    }
#pragma GCC unroll 16
    for (int c = 0; c < C; ++c) {
      const __m256 a0 = L::load(a + c * a_stride + i * 2);
      const __m256 a1 = L::load(a + c * a_stride + i * 2 + 16);
#pragma GCC unroll 16
      for (int r = 0; r < R; ++r) {
        acc0[r][c] = _mm256_fmadd_ps(w0[r], a0, acc0[r][c]);
        acc1[r][c] = _mm256_fmadd_ps(w1[r], a1, acc1[r][c]);
      }
    }
  }
  // Tail: one full group of 8 into acc0, then a zero-padded partial group into acc1.
  const bool full8 = i + 8 <= n;
  const int64_t rest = full8 ? n - i - 8 : n - i;
#pragma GCC unroll 16
  for (int c = 0; c < C; ++c) {
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) {
      const uint8_t* wr = w + r * w_stride + i * 2;
      const uint8_t* ac = a + c * a_stride + i * 2;
      __m256 s0 = acc0[r][c];
      __m256 s1 = acc1[r][c];
      if (full8) {
        s0 = _mm256_fmadd_ps(L::load(wr), L::load(ac), s0);
        wr += 16;
        ac += 16;
      }
      if (rest > 0) s1 = _mm256_fmadd_ps(load_partial<L>(wr, rest), load_partial<L>(ac, rest), s1);
      y[c * y_stride + r] = horizontal_sum(_mm256_add_ps(s0, s1));
    }
  }
}

// 16 BF16 values as two vectors of floats by interleaving them with zeros (the float's low half):
// the low half holds elements 0-3 and 8-11, the high half 4-7 and 12-15, one instruction each
// where a widening and a shift take two. Weights and activations are split alike, so each product
// meets its pair.
inline __m256 load_bf16_lo(const uint8_t* p) {
  const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
  return _mm256_castsi256_ps(_mm256_unpacklo_epi16(_mm256_setzero_si256(), v));
}
inline __m256 load_bf16_hi(const uint8_t* p) {
  const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
  return _mm256_castsi256_ps(_mm256_unpackhi_epi16(_mm256_setzero_si256(), v));
}

// The BF16 R x C tile; vec_dot_bf16 is its 1 x 1 instance, so tile values equal vec_dot's bit for
// bit. Per 16 elements, the low halves of every pair go into one accumulator and the high halves
// into another (2 x 3 x 2 = 12); the rows stay in registers for a half while the columns pass,
// and a zero-padded copy takes the last n % 16 elements. Each row and column is converted once
// per step for the whole tile: prefill no longer converts a row once per token.
template <int R, int C>
void bf16_tile(int64_t n, const uint8_t* w, size_t w_stride, const uint8_t* a, size_t a_stride, float* y,
               int64_t y_stride) {
  __m256 acc0[R][C];
  __m256 acc1[R][C];
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 16
    for (int c = 0; c < C; ++c) acc0[r][c] = acc1[r][c] = _mm256_setzero_ps();
  }
  const auto step = [&](const uint8_t* const* wr, const uint8_t* const* ac) {
    __m256 wv[R];
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) wv[r] = load_bf16_lo(wr[r]);
#pragma GCC unroll 16
    for (int c = 0; c < C; ++c) {
      const __m256 av = load_bf16_lo(ac[c]);
#pragma GCC unroll 16
      for (int r = 0; r < R; ++r) acc0[r][c] = _mm256_fmadd_ps(wv[r], av, acc0[r][c]);
    }
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) wv[r] = load_bf16_hi(wr[r]);
#pragma GCC unroll 16
    for (int c = 0; c < C; ++c) {
      const __m256 av = load_bf16_hi(ac[c]);
#pragma GCC unroll 16
      for (int r = 0; r < R; ++r) acc1[r][c] = _mm256_fmadd_ps(wv[r], av, acc1[r][c]);
    }
  };
  const uint8_t* wr[R];
  const uint8_t* ac[C];
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) wr[r] = w + r * w_stride + i * 2;
#pragma GCC unroll 16
    for (int c = 0; c < C; ++c) ac[c] = a + c * a_stride + i * 2;
    step(wr, ac);
  }
  if (i < n) {
    alignas(32) uint8_t pad[R + C][32] = {};
    for (int r = 0; r < R; ++r) {
      std::memcpy(pad[r], w + r * w_stride + i * 2, static_cast<size_t>(n - i) * 2);
      wr[r] = pad[r];
    }
    for (int c = 0; c < C; ++c) {
      std::memcpy(pad[R + c], a + c * a_stride + i * 2, static_cast<size_t>(n - i) * 2);
      ac[c] = pad[R + c];
    }
    step(wr, ac);
  }
#pragma GCC unroll 16
  for (int c = 0; c < C; ++c) {
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) y[c * y_stride + r] = horizontal_sum(_mm256_add_ps(acc0[r][c], acc1[r][c]));
  }
}

}  // namespace

float vec_dot_f32(int64_t n, const void* w, const void* a) { return stream_dot<F32Lanes>(n, w, a); }

float vec_dot_f16(int64_t n, const void* w, const void* a) {
  float y;
  half_tile<F16Lanes, 1, 1>(n, static_cast<const uint8_t*>(w), 0, static_cast<const uint8_t*>(a), 0, &y, 1);
  return y;
}

void tile_dot_f16(int64_t n, const void* w, size_t w_stride, const void* a, size_t a_stride, float* y,
                  int64_t y_stride) {
  half_tile<F16Lanes, kTileF16Rows, kTileF16Cols>(n, static_cast<const uint8_t*>(w), w_stride,
                                                  static_cast<const uint8_t*>(a), a_stride, y, y_stride);
}

float vec_dot_bf16(int64_t n, const void* w, const void* a) {
  float y;
  bf16_tile<1, 1>(n, static_cast<const uint8_t*>(w), 0, static_cast<const uint8_t*>(a), 0, &y, 1);
  return y;
}

void tile_dot_bf16(int64_t n, const void* w, size_t w_stride, const void* a, size_t a_stride, float* y,
                   int64_t y_stride) {
  bf16_tile<kTileF16Rows, kTileF16Cols>(n, static_cast<const uint8_t*>(w), w_stride, static_cast<const uint8_t*>(a),
                                        a_stride, y, y_stride);
}

}  // namespace cellserve::engine::kernels::x86
