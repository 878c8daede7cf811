// AVX2 dot products of packed Q4_K groups (8 interleaved rows, layout in reference/packed_q4_k.cpp)
// with up to 4 Q8_K activation rows. As for packed Q4_0, each 32-bit lane is one weight row; a
// unit's nibbles are unpacked once for all tokens, and the sub-block scales multiply the int16
// pair sums inside madd, so a super-block costs no horizontal sum and one fma per 8 rows.
#include <immintrin.h>

#include <cstring>

#include "engine/kernels/reference/reference_kernels.h"
#include "engine/kernels/x86/avx2/legacy_kernels.h"
#include "engine/kernels/x86/avx2/packed_common.h"
#include "engine/quant/block_types.h"

namespace cellserve::engine::kernels::x86 {
namespace {

// The 8 rows' scales of one sub-block (bytes at p), each in both int16 halves of its lane.
inline __m256i scale_pairs(const uint8_t* p) {
  const __m256i s = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)));
  return _mm256_or_si256(s, _mm256_slli_epi32(s, 16));
}

template <int C>
void packed_q4_k(int64_t n, const uint8_t* w, const uint8_t* a, size_t a_stride, float* y, int64_t y_stride) {
  constexpr int64_t kGroupBytes = reference::kPackedQ4_KBytes;
  const __m256i mask = _mm256_set1_epi8(0x0F);
  __m256 acc[C];
  __m256 macc[C];
#pragma GCC unroll 4
  for (int c = 0; c < C; ++c) acc[c] = macc[c] = _mm256_setzero_ps();
  for (int64_t b = 0; b < n / 256; ++b) {
    const uint8_t* g = w + b * kGroupBytes;
    const int64_t a_off = b * static_cast<int64_t>(sizeof(BlockQ8_K));
    __m256i isum[C];
#pragma GCC unroll 4
    for (int c = 0; c < C; ++c) isum[c] = _mm256_setzero_si256();
    for (int k = 0; k < 4; ++k) {
      prefetch_ahead<kGroupBytes / 4>(g + kGroupBytes / 4 * k);
      __m256i plo[C];
      __m256i phi[C];
#pragma GCC unroll 4
      for (int c = 0; c < C; ++c) plo[c] = phi[c] = _mm256_setzero_si256();
#pragma GCC unroll 8
      for (int u = 0; u < 8; ++u) {
        const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(g + 160 + 256 * k + 32 * u));
        const __m256i lo = _mm256_and_si256(v, mask);
        const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), mask);
#pragma GCC unroll 4
        for (int c = 0; c < C; ++c) {
          const auto* q = reinterpret_cast<const int8_t*>(a + c * a_stride + a_off + offsetof(BlockQ8_K, qs));
          plo[c] = _mm256_add_epi16(plo[c], _mm256_maddubs_epi16(lo, broadcast_u32(q + 64 * k + 4 * u)));
          phi[c] = _mm256_add_epi16(phi[c], _mm256_maddubs_epi16(hi, broadcast_u32(q + 64 * k + 32 + 4 * u)));
        }
      }
      const __m256i sc_lo = scale_pairs(g + 32 + 8 * (2 * k));
      const __m256i sc_hi = scale_pairs(g + 32 + 8 * (2 * k + 1));
#pragma GCC unroll 4
      for (int c = 0; c < C; ++c) {
        isum[c] = _mm256_add_epi32(
            isum[c], _mm256_add_epi32(_mm256_madd_epi16(plo[c], sc_lo), _mm256_madd_epi16(phi[c], sc_hi)));
      }
    }
    const __m256 dw = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(g)));
    const __m256 dmin = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(g + 16)));
#pragma GCC unroll 4
    for (int c = 0; c < C; ++c) {
      const uint8_t* ab = a + c * a_stride + a_off;
      float da;
      std::memcpy(&da, ab + offsetof(BlockQ8_K, d), sizeof(da));
      const __m256i msum = q4_k_min_sums(g, ab);
      const __m256 d8 = _mm256_set1_ps(da);
      acc[c] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum[c]), _mm256_mul_ps(dw, d8), acc[c]);
      macc[c] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(msum), _mm256_mul_ps(dmin, d8), macc[c]);
    }
  }
#pragma GCC unroll 4
  for (int c = 0; c < C; ++c) _mm256_storeu_ps(y + c * y_stride, _mm256_sub_ps(acc[c], macc[c]));
}

}  // namespace

void packed_dot_q4_k(int64_t n, const void* w, const void* a, size_t a_stride, const int32_t* /*a_sums*/,
                     int64_t /*sums_stride*/, int cols, float* y, int64_t y_stride) {
  const auto* wb = static_cast<const uint8_t*>(w);
  const auto* ab = static_cast<const uint8_t*>(a);
  with_cols(cols, [&]<int C>() { packed_q4_k<C>(n, wb, ab, a_stride, y, y_stride); });
}

}  // namespace cellserve::engine::kernels::x86
