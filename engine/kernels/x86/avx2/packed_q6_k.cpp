// AVX2 dot products of packed Q6_K groups (8 interleaved rows, layout in reference/packed_q6_k.cpp)
// with up to 4 Q8_K activation rows. Each sub-block of 16 is three 32-byte loads (two nibble
// vectors, one 2-bit vector) rebuilt into four unit vectors once for all tokens; two maddubs
// results add in int16 without overflow (2 * 2 * 63 * 128 < 32768) before the scales enter
// through madd. The -32 offset is taken out once per super-block from the activation's sums.
#include <immintrin.h>

#include <cstring>

#include "engine/kernels/reference/reference_kernels.h"
#include "engine/kernels/x86/avx2/legacy_kernels.h"
#include "engine/kernels/x86/avx2/packed_common.h"
#include "engine/quant/block_types.h"

namespace cellserve::engine::kernels::x86 {
namespace {

template <int C>
void packed_q6_k(int64_t n, const uint8_t* w, const uint8_t* a, size_t a_stride, float* y, int64_t y_stride) {
  constexpr int64_t kGroupBytes = reference::kPackedQ6_KBytes;
  // Byte shuffles giving each lane (scale of the even / odd sub-block) in both int16 halves
  // (indices count from the start of each 128-bit half).
  const __m256i even = _mm256_setr_epi8(0, 1, 0, 1, 4, 5, 4, 5, 8, 9, 8, 9, 12, 13, 12, 13, 0, 1, 0, 1, 4, 5, 4, 5, 8,
                                        9, 8, 9, 12, 13, 12, 13);
  const __m256i odd = _mm256_setr_epi8(2, 3, 2, 3, 6, 7, 6, 7, 10, 11, 10, 11, 14, 15, 14, 15, 2, 3, 2, 3, 6, 7, 6, 7,
                                       10, 11, 10, 11, 14, 15, 14, 15);
  __m256 acc[C];
#pragma GCC unroll 4
  for (int c = 0; c < C; ++c) acc[c] = _mm256_setzero_ps();
  for (int64_t b = 0; b < n / 256; ++b) {
    const uint8_t* g = w + b * kGroupBytes;
    const int64_t a_off = b * static_cast<int64_t>(sizeof(BlockQ8_K));
    __m256i isum[C];
#pragma GCC unroll 4
    for (int c = 0; c < C; ++c) isum[c] = _mm256_setzero_si256();
    for (int p = 0; p < 8; ++p) {
      prefetch_ahead<kGroupBytes / 8>(g + kGroupBytes / 8 * p);
      const __m256i scales = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(g + 16 + 16 * p)));
#pragma GCC unroll 2
      for (int half = 0; half < 2; ++half) {
        const int s = 2 * p + half;
        __m256i q0, q1, q2, q3;
        q6_k_unit_quants(g + 144 + 96 * s, q0, q1, q2, q3);
        const __m256i sc = _mm256_shuffle_epi8(scales, half == 0 ? even : odd);
#pragma GCC unroll 4
        for (int c = 0; c < C; ++c) {
          const auto* q = reinterpret_cast<const int8_t*>(a + c * a_stride + a_off + offsetof(BlockQ8_K, qs)) + 16 * s;
          const __m256i m01 = _mm256_add_epi16(_mm256_maddubs_epi16(q0, broadcast_u32(q)),
                                               _mm256_maddubs_epi16(q1, broadcast_u32(q + 4)));
          const __m256i m23 = _mm256_add_epi16(_mm256_maddubs_epi16(q2, broadcast_u32(q + 8)),
                                               _mm256_maddubs_epi16(q3, broadcast_u32(q + 12)));
          isum[c] = _mm256_add_epi32(isum[c], _mm256_add_epi32(_mm256_madd_epi16(m01, sc), _mm256_madd_epi16(m23, sc)));
        }
      }
    }
    const __m256 dw = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(g)));
#pragma GCC unroll 4
    for (int c = 0; c < C; ++c) {
      const uint8_t* ab = a + c * a_stride + a_off;
      float da;
      std::memcpy(&da, ab + offsetof(BlockQ8_K, d), sizeof(da));
      const __m256i total = _mm256_sub_epi32(isum[c], _mm256_slli_epi32(q6_k_scaled_sums(g, ab), 5));
      acc[c] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(total), _mm256_mul_ps(dw, _mm256_set1_ps(da)), acc[c]);
    }
  }
#pragma GCC unroll 4
  for (int c = 0; c < C; ++c) _mm256_storeu_ps(y + c * y_stride, acc[c]);
}

}  // namespace

void packed_dot_q6_k(int64_t n, const void* w, const void* a, size_t a_stride, const int32_t* /*a_sums*/,
                     int64_t /*sums_stride*/, int cols, float* y, int64_t y_stride) {
  const auto* wb = static_cast<const uint8_t*>(w);
  const auto* ab = static_cast<const uint8_t*>(a);
  with_cols(cols, [&]<int C>() { packed_q6_k<C>(n, wb, ab, a_stride, y, y_stride); });
}

}  // namespace cellserve::engine::kernels::x86
