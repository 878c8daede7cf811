// AVX2 dot products of the float weight types (F32, F16 via F16C, BF16) in F32 lanes.
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
struct BF16Lanes {
  static __m256 load(const uint8_t* p) {
    const __m256i wide = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    return _mm256_castsi256_ps(_mm256_slli_epi32(wide, 16));
  }
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
template <int R, int C>
void f16_tile(int64_t n, const uint8_t* w, size_t w_stride, const uint8_t* a, size_t a_stride, float* y,
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
      w0[r] = F16Lanes::load(w + r * w_stride + i * 2);
      w1[r] = F16Lanes::load(w + r * w_stride + i * 2 + 16);
    }
#pragma GCC unroll 16
    for (int c = 0; c < C; ++c) {
      const __m256 a0 = F16Lanes::load(a + c * a_stride + i * 2);
      const __m256 a1 = F16Lanes::load(a + c * a_stride + i * 2 + 16);
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
        s0 = _mm256_fmadd_ps(F16Lanes::load(wr), F16Lanes::load(ac), s0);
        wr += 16;
        ac += 16;
      }
      if (rest > 0) s1 = _mm256_fmadd_ps(load_partial<F16Lanes>(wr, rest), load_partial<F16Lanes>(ac, rest), s1);
      y[c * y_stride + r] = horizontal_sum(_mm256_add_ps(s0, s1));
    }
  }
}

}  // namespace

float vec_dot_f32(int64_t n, const void* w, const void* a) { return stream_dot<F32Lanes>(n, w, a); }
float vec_dot_bf16(int64_t n, const void* w, const void* a) { return stream_dot<BF16Lanes>(n, w, a); }

float vec_dot_f16(int64_t n, const void* w, const void* a) {
  float y;
  f16_tile<1, 1>(n, static_cast<const uint8_t*>(w), 0, static_cast<const uint8_t*>(a), 0, &y, 1);
  return y;
}

void tile_dot_f16(int64_t n, const void* w, size_t w_stride, const void* a, size_t a_stride, float* y,
                  int64_t y_stride) {
  f16_tile<kTileF16Rows, kTileF16Cols>(n, static_cast<const uint8_t*>(w), w_stride, static_cast<const uint8_t*>(a),
                                       a_stride, y, y_stride);
}

}  // namespace cellserve::engine::kernels::x86
