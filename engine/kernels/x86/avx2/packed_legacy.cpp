// AVX2 dot products of packed Q4_0 / Q8_0 weight groups (8 interleaved rows, see kernel_table.h)
// with up to 4 Q8_0 activation rows. Each 32-bit lane belongs to one weight row, so a block's
// integer dot products for all 8 rows come out of one register and need no horizontal sum:
// lane r of unit u holds 4 consecutive quants of row r, multiplied with the matching 4
// activation quants broadcast to every lane.
//
// Per lane the float arithmetic is the reference's (packed_legacy.cpp): acc = fma(float(isum),
// d_w * d_a, acc), block by block, so results match it bit for bit whatever `cols` is.
#include <immintrin.h>

#include <cstring>

#include "engine/kernels/x86/avx2/lanes.h"
#include "engine/kernels/x86/avx2/legacy_kernels.h"
#include "engine/kernels/x86/avx2/packed_common.h"
#include "engine/quant/block_types.h"

namespace cellserve::engine::kernels::x86 {
namespace {

constexpr int kRows = 8;
constexpr size_t kScaleBytes = kRows * sizeof(uint16_t);

// Q4_0: the nibbles are used unsigned (0..15) with the signed activations, and 8 * sum(a) is
// subtracted afterwards: sum((q - 8) * a) = sum(q * a) - 8 * sum(a). Eight maddubs results add up
// in int16 without overflow (8 * 2 * 15 * 128 < 32768).
template <int C>
void packed_q4_0(int64_t n, const uint8_t* w, const uint8_t* a, size_t a_stride, const int32_t* sums,
                 int64_t sums_stride, float* y, int64_t y_stride) {
  const __m256i low_mask = _mm256_set1_epi8(0x0F);
  const __m256i ones = _mm256_set1_epi16(1);
  __m256 acc[C];
#pragma GCC unroll 4
  for (int c = 0; c < C; ++c) acc[c] = _mm256_setzero_ps();
  const int64_t blocks = n / 32;
  for (int64_t b = 0; b < blocks; ++b) {
    const uint8_t* g = w + b * kRows * static_cast<int64_t>(sizeof(BlockQ4_0));
    prefetch_ahead<kRows * sizeof(BlockQ4_0)>(g);
    const __m256 dw = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(g)));
    __m256i lo[4];
    __m256i hi[4];
#pragma GCC unroll 4
    for (int u = 0; u < 4; ++u) {
      const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(g + kScaleBytes + 32 * u));
      lo[u] = _mm256_and_si256(v, low_mask);
      hi[u] = _mm256_and_si256(_mm256_srli_epi16(v, 4), low_mask);
    }
#pragma GCC unroll 4
    for (int c = 0; c < C; ++c) {
      const uint8_t* ab = a + c * a_stride + b * static_cast<int64_t>(sizeof(BlockQ8_0));
      const auto* q = reinterpret_cast<const int8_t*>(ab + offsetof(BlockQ8_0, qs));
      __m256i p = _mm256_maddubs_epi16(lo[0], broadcast_u32(q));
#pragma GCC unroll 4
      for (int u = 1; u < 4; ++u) p = _mm256_add_epi16(p, _mm256_maddubs_epi16(lo[u], broadcast_u32(q + 4 * u)));
#pragma GCC unroll 4
      for (int u = 0; u < 4; ++u) p = _mm256_add_epi16(p, _mm256_maddubs_epi16(hi[u], broadcast_u32(q + 16 + 4 * u)));
      const __m256i isum =
          _mm256_sub_epi32(_mm256_madd_epi16(p, ones), _mm256_set1_epi32(8 * sums[c * sums_stride + b]));
      const __m256 d = _mm256_mul_ps(dw, _mm256_set1_ps(load_fp16(ab)));
      acc[c] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum), d, acc[c]);
    }
  }
#pragma GCC unroll 4
  for (int c = 0; c < C; ++c) _mm256_storeu_ps(y + c * y_stride, acc[c]);
}

// Q8_0: signed by signed, so the sign trick (|w| * (a with w's sign)) feeds maddubs, and each
// unit's pairs widen to int32 at once (two units could overflow int16).
template <int C>
void packed_q8_0(int64_t n, const uint8_t* w, const uint8_t* a, size_t a_stride, float* y, int64_t y_stride) {
  const __m256i ones = _mm256_set1_epi16(1);
  __m256 acc[C];
#pragma GCC unroll 4
  for (int c = 0; c < C; ++c) acc[c] = _mm256_setzero_ps();
  const int64_t blocks = n / 32;
  for (int64_t b = 0; b < blocks; ++b) {
    const uint8_t* g = w + b * kRows * static_cast<int64_t>(sizeof(BlockQ8_0));
    const __m256 dw = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(g)));
    const auto* units = reinterpret_cast<const __m256i*>(g + kScaleBytes);
#pragma GCC unroll 4
    for (int c = 0; c < C; ++c) {
      const uint8_t* ab = a + c * a_stride + b * static_cast<int64_t>(sizeof(BlockQ8_0));
      const auto* q = reinterpret_cast<const int8_t*>(ab + offsetof(BlockQ8_0, qs));
      __m256i isum = _mm256_setzero_si256();
#pragma GCC unroll 8
      for (int u = 0; u < 8; ++u) {
        const __m256i v = _mm256_loadu_si256(units + u);
        const __m256i pairs =
            _mm256_maddubs_epi16(_mm256_sign_epi8(v, v), _mm256_sign_epi8(broadcast_u32(q + 4 * u), v));
        isum = _mm256_add_epi32(isum, _mm256_madd_epi16(pairs, ones));
      }
      const __m256 d = _mm256_mul_ps(dw, _mm256_set1_ps(load_fp16(ab)));
      acc[c] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum), d, acc[c]);
    }
  }
#pragma GCC unroll 4
  for (int c = 0; c < C; ++c) _mm256_storeu_ps(y + c * y_stride, acc[c]);
}

}  // namespace

void packed_dot_q4_0(int64_t n, const void* w, const void* a, size_t a_stride, const int32_t* a_sums,
                     int64_t sums_stride, int cols, float* y, int64_t y_stride) {
  const auto* wb = static_cast<const uint8_t*>(w);
  const auto* ab = static_cast<const uint8_t*>(a);
  with_cols(cols, [&]<int C>() { packed_q4_0<C>(n, wb, ab, a_stride, a_sums, sums_stride, y, y_stride); });
}

void packed_dot_q8_0(int64_t n, const void* w, const void* a, size_t a_stride, const int32_t* /*a_sums*/,
                     int64_t /*sums_stride*/, int cols, float* y, int64_t y_stride) {
  const auto* wb = static_cast<const uint8_t*>(w);
  const auto* ab = static_cast<const uint8_t*>(a);
  with_cols(cols, [&]<int C>() { packed_q8_0<C>(n, wb, ab, a_stride, y, y_stride); });
}

}  // namespace cellserve::engine::kernels::x86
