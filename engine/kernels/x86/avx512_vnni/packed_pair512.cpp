// The packed-group pair kernels (WeightKernels::packed_dot_pair) for Q4_0, Q8_0, Q4_K and Q6_K on
// 512-bit registers: two adjacent groups of 8 rows side by side in one register, group 0 in the
// low 256 bits and group 1 in the high, so one vpdpbusd multiplies a broadcast activation unit by
// 16 rows. The layouts are the 8-row ones of reference/packed_*.cpp, unchanged: a weight unit is
// the two groups' 32-byte units joined (two loads and one shuffle), and the 16 results of a column
// are y[0..15], group 0's 8 rows then group 1's, as the two groups' stores put them.
//
// Per lane the integer sums and the float operations are those of the 256-bit kernels
// (../packed_vnni_body.h), in the same order, so the results equal the reference bit for bit.
// Where 512-bit vector units are full width (Zen 5), this halves the instructions that bound
// prefill; where they are split in two (Zen 4), it still halves the instructions issued.
#include <immintrin.h>

#include <cstring>

#include "engine/kernels/reference/reference_kernels.h"
#include "engine/kernels/x86/avx2/lanes.h"
#include "engine/kernels/x86/avx2/packed_common.h"
#include "engine/kernels/x86/avx512/lanes512.h"
#include "engine/kernels/x86/avx512_vnni/vnni_kernels.h"
#include "engine/quant/block_types.h"

namespace cellserve::engine::kernels::x86::vnni {
namespace {

constexpr int kRows = 8;

// Two 32-byte pieces as one register, p0's in the low half.
inline __m512i join256(const uint8_t* p0, const uint8_t* p1) {
  const __m256i lo = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p0));
  const __m256i hi = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p1));
  return __builtin_shufflevector(lo, hi, 0, 1, 2, 3, 4, 5, 6, 7);
}

// Two 16-byte pieces as one 256-bit register, p0's in the low half.
inline __m256i join128(const uint8_t* p0, const uint8_t* p1) {
  const __m128i lo = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p0));
  const __m128i hi = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p1));
  return __builtin_shufflevector(lo, hi, 0, 1, 2, 3);
}

// Two 8-byte pieces as one 128-bit register, p0's in the low half.
inline __m128i join64(const uint8_t* p0, const uint8_t* p1) {
  return _mm_unpacklo_epi64(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p0)),
                            _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p1)));
}

// The 16 rows' fp16 scales (8 per group) as floats.
inline __m512 scales_fp16(const uint8_t* g0, const uint8_t* g1) { return cvtph_ps(join128(g0, g1)); }

inline __m512i broadcast4(const int8_t* p) {
  int32_t v;
  std::memcpy(&v, p, sizeof(v));
  return _mm512_set1_epi32(v);
}

inline __m512i dpbusd(__m512i acc, __m512i u8, __m512i s8) { return _mm512_dpbusd_epi32(acc, u8, s8); }

// The zero-masked forms of cvtepi32_ps and cvtepu8_epi32 (GCC bug 105593, lanes512.h).
inline __m512 to_float(__m512i v) { return _mm512_maskz_cvtepi32_ps(kAll16, v); }
inline __m512i widen_u8(__m128i v) { return _mm512_maskz_cvtepu8_epi32(kAll16, v); }

template <int C>
void pair_q4_0(int64_t n, const uint8_t* w, const uint8_t* a, size_t a_stride, const int32_t* sums, int64_t sums_stride,
               float* y, int64_t y_stride) {
  constexpr int64_t kBlockBytes = kRows * static_cast<int64_t>(sizeof(BlockQ4_0));
  constexpr int64_t kScaleBytes = kRows * sizeof(uint16_t);
  const int64_t group_stride = n / 32 * kBlockBytes;
  const __m512i low_mask = _mm512_set1_epi8(0x0F);
  __m512 acc[C];
#pragma GCC unroll 4
  for (int c = 0; c < C; ++c) acc[c] = _mm512_setzero_ps();
  for (int64_t b = 0; b < n / 32; ++b) {
    const uint8_t* g0 = w + b * kBlockBytes;
    const uint8_t* g1 = g0 + group_stride;
    const __m512 dw = scales_fp16(g0, g1);
    __m512i lo[4];
    __m512i hi[4];
#pragma GCC unroll 4
    for (int u = 0; u < 4; ++u) {
      const __m512i v = join256(g0 + kScaleBytes + 32 * u, g1 + kScaleBytes + 32 * u);
      lo[u] = _mm512_and_si512(v, low_mask);
      hi[u] = _mm512_and_si512(_mm512_srli_epi16(v, 4), low_mask);
    }
#pragma GCC unroll 4
    for (int c = 0; c < C; ++c) {
      const uint8_t* ab = a + c * a_stride + b * static_cast<int64_t>(sizeof(BlockQ8_0));
      const auto* q = reinterpret_cast<const int8_t*>(ab + offsetof(BlockQ8_0, qs));
      __m512i isum = _mm512_set1_epi32(-8 * sums[c * sums_stride + b]);
#pragma GCC unroll 4
      for (int u = 0; u < 4; ++u) isum = dpbusd(isum, lo[u], broadcast4(q + 4 * u));
#pragma GCC unroll 4
      for (int u = 0; u < 4; ++u) isum = dpbusd(isum, hi[u], broadcast4(q + 16 + 4 * u));
      const __m512 da = _mm512_set1_ps(load_fp16(ab));
      acc[c] = _mm512_fmadd_ps(to_float(isum), _mm512_mul_ps(dw, da), acc[c]);
    }
  }
#pragma GCC unroll 4
  for (int c = 0; c < C; ++c) _mm512_storeu_ps(y + c * y_stride, acc[c]);
}

// Q8_0's signed weights made unsigned by flipping the sign bit (w + 128), 128 · Σa per block taken
// off, as the 256-bit kernel does.
template <int C>
void pair_q8_0(int64_t n, const uint8_t* w, const uint8_t* a, size_t a_stride, const int32_t* sums, int64_t sums_stride,
               float* y, int64_t y_stride) {
  constexpr int64_t kBlockBytes = kRows * static_cast<int64_t>(sizeof(BlockQ8_0));
  constexpr int64_t kScaleBytes = kRows * sizeof(uint16_t);
  const int64_t group_stride = n / 32 * kBlockBytes;
  const __m512i sign_bit = _mm512_set1_epi8(static_cast<char>(0x80));
  __m512 acc[C];
#pragma GCC unroll 4
  for (int c = 0; c < C; ++c) acc[c] = _mm512_setzero_ps();
  for (int64_t b = 0; b < n / 32; ++b) {
    const uint8_t* g0 = w + b * kBlockBytes;
    const uint8_t* g1 = g0 + group_stride;
    const __m512 dw = scales_fp16(g0, g1);
    __m512i units[8];
#pragma GCC unroll 8
    for (int u = 0; u < 8; ++u) {
      units[u] = _mm512_xor_si512(join256(g0 + kScaleBytes + 32 * u, g1 + kScaleBytes + 32 * u), sign_bit);
    }
#pragma GCC unroll 4
    for (int c = 0; c < C; ++c) {
      const uint8_t* ab = a + c * a_stride + b * static_cast<int64_t>(sizeof(BlockQ8_0));
      const auto* q = reinterpret_cast<const int8_t*>(ab + offsetof(BlockQ8_0, qs));
      __m512i isum = _mm512_set1_epi32(-128 * sums[c * sums_stride + b]);
#pragma GCC unroll 8
      for (int u = 0; u < 8; ++u) isum = dpbusd(isum, units[u], broadcast4(q + 4 * u));
      const __m512 d = _mm512_mul_ps(dw, _mm512_set1_ps(load_fp16(ab)));
      acc[c] = _mm512_fmadd_ps(to_float(isum), d, acc[c]);
    }
  }
#pragma GCC unroll 4
  for (int c = 0; c < C; ++c) _mm512_storeu_ps(y + c * y_stride, acc[c]);
}

// q4_k_min_sums (avx2/packed_common.h) for both groups: each row's Σ min · (sub-block sum of a).
inline __m512i q4_k_min_sums2(const uint8_t* g0, const uint8_t* g1, const uint8_t* ab) {
  int16_t bsums[16];
  std::memcpy(bsums, ab + offsetof(BlockQ8_K, bsums), sizeof(bsums));
  __m512i msum = _mm512_setzero_si512();
#pragma GCC unroll 4
  for (int p = 0; p < 4; ++p) {
    const __m512i mins = _mm512_cvtepu8_epi16(join128(g0 + 96 + 16 * p, g1 + 96 + 16 * p));
    const int32_t s0 = bsums[4 * p] + bsums[4 * p + 1];
    const int32_t s1 = bsums[4 * p + 2] + bsums[4 * p + 3];
    const __m512i pair = _mm512_set1_epi32(
        static_cast<int32_t>((static_cast<uint32_t>(s0) & 0xFFFFu) | (static_cast<uint32_t>(s1) << 16)));
    msum = _mm512_add_epi32(msum, _mm512_madd_epi16(mins, pair));
  }
  return msum;
}

template <int C>
void pair_q4_k(int64_t n, const uint8_t* w, const uint8_t* a, size_t a_stride, float* y, int64_t y_stride) {
  constexpr int64_t kGroupBytes = reference::kPackedQ4_KBytes;
  const int64_t group_stride = n / 256 * kGroupBytes;
  const __m512i mask = _mm512_set1_epi8(0x0F);
  __m512 acc[C];
  __m512 macc[C];
#pragma GCC unroll 4
  for (int c = 0; c < C; ++c) acc[c] = macc[c] = _mm512_setzero_ps();
  for (int64_t b = 0; b < n / 256; ++b) {
    const uint8_t* g0 = w + b * kGroupBytes;
    const uint8_t* g1 = g0 + group_stride;
    const int64_t a_off = b * static_cast<int64_t>(sizeof(BlockQ8_K));
    __m512i isum[C];
#pragma GCC unroll 4
    for (int c = 0; c < C; ++c) isum[c] = _mm512_setzero_si512();
    for (int k = 0; k < 4; ++k) {
      __m512i slo[C];
      __m512i shi[C];
#pragma GCC unroll 4
      for (int c = 0; c < C; ++c) slo[c] = shi[c] = _mm512_setzero_si512();
#pragma GCC unroll 8
      for (int u = 0; u < 8; ++u) {
        const int64_t unit = 160 + 256 * k + 32 * u;
        const __m512i v = join256(g0 + unit, g1 + unit);
        const __m512i lo = _mm512_and_si512(v, mask);
        const __m512i hi = _mm512_and_si512(_mm512_srli_epi16(v, 4), mask);
#pragma GCC unroll 4
        for (int c = 0; c < C; ++c) {
          const auto* q = reinterpret_cast<const int8_t*>(a + c * a_stride + a_off + offsetof(BlockQ8_K, qs));
          slo[c] = dpbusd(slo[c], lo, broadcast4(q + 64 * k + 4 * u));
          shi[c] = dpbusd(shi[c], hi, broadcast4(q + 64 * k + 32 + 4 * u));
        }
      }
      // The 16 rows' 6-bit scales of sub-blocks 2k and 2k + 1.
      const __m512i sc_lo = widen_u8(join64(g0 + 32 + 16 * k, g1 + 32 + 16 * k));
      const __m512i sc_hi = widen_u8(join64(g0 + 32 + 16 * k + 8, g1 + 32 + 16 * k + 8));
#pragma GCC unroll 4
      for (int c = 0; c < C; ++c) {
        isum[c] = _mm512_add_epi32(
            isum[c], _mm512_add_epi32(_mm512_mullo_epi32(slo[c], sc_lo), _mm512_mullo_epi32(shi[c], sc_hi)));
      }
    }
    const __m512 dw = scales_fp16(g0, g1);
    const __m512 dmin = scales_fp16(g0 + 16, g1 + 16);
#pragma GCC unroll 4
    for (int c = 0; c < C; ++c) {
      const uint8_t* ab = a + c * a_stride + a_off;
      float da;
      std::memcpy(&da, ab + offsetof(BlockQ8_K, d), sizeof(da));
      const __m512 d8 = _mm512_set1_ps(da);
      acc[c] = _mm512_fmadd_ps(to_float(isum[c]), _mm512_mul_ps(dw, d8), acc[c]);
      macc[c] = _mm512_fmadd_ps(to_float(q4_k_min_sums2(g0, g1, ab)), _mm512_mul_ps(dmin, d8), macc[c]);
    }
  }
#pragma GCC unroll 4
  for (int c = 0; c < C; ++c) _mm512_storeu_ps(y + c * y_stride, _mm512_sub_ps(acc[c], macc[c]));
}

// q6_k_unit_quants (avx2/packed_common.h) for both groups' sub-block at the same offset.
inline void q6_k_unit_quants2(const uint8_t* s0, const uint8_t* s1, __m512i q[4]) {
  const __m512i low4 = _mm512_set1_epi8(0x0F);
  const __m512i top2 = _mm512_set1_epi8(0x30);
  const __m512i n0 = join256(s0, s1);
  const __m512i n1 = join256(s0 + 32, s1 + 32);
  const __m512i h = join256(s0 + 64, s1 + 64);
  q[0] = _mm512_or_si512(_mm512_and_si512(n0, low4), _mm512_and_si512(_mm512_slli_epi16(h, 4), top2));
  q[1] = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(n0, 4), low4),
                         _mm512_and_si512(_mm512_slli_epi16(h, 2), top2));
  q[2] = _mm512_or_si512(_mm512_and_si512(n1, low4), _mm512_and_si512(h, top2));
  q[3] = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(n1, 4), low4),
                         _mm512_and_si512(_mm512_srli_epi16(h, 2), top2));
}

// q6_k_scaled_sums (avx2/packed_common.h) for both groups: each row's Σ scale · (sub-block sum of a).
inline __m512i q6_k_scaled_sums2(const uint8_t* g0, const uint8_t* g1, const uint8_t* ab) {
  __m512i sums = _mm512_setzero_si512();
#pragma GCC unroll 8
  for (int p = 0; p < 8; ++p) {
    const __m512i scales = _mm512_cvtepi8_epi16(join128(g0 + 16 + 16 * p, g1 + 16 + 16 * p));
    int32_t pair;  // bsums[2p], bsums[2p + 1] as two int16
    std::memcpy(&pair, ab + offsetof(BlockQ8_K, bsums) + 4 * p, sizeof(pair));
    sums = _mm512_add_epi32(sums, _mm512_madd_epi16(scales, _mm512_set1_epi32(pair)));
  }
  return sums;
}

template <int C>
void pair_q6_k(int64_t n, const uint8_t* w, const uint8_t* a, size_t a_stride, float* y, int64_t y_stride) {
  constexpr int64_t kGroupBytes = reference::kPackedQ6_KBytes;
  const int64_t group_stride = n / 256 * kGroupBytes;
  __m512 acc[C];
#pragma GCC unroll 4
  for (int c = 0; c < C; ++c) acc[c] = _mm512_setzero_ps();
  for (int64_t b = 0; b < n / 256; ++b) {
    const uint8_t* g0 = w + b * kGroupBytes;
    const uint8_t* g1 = g0 + group_stride;
    const int64_t a_off = b * static_cast<int64_t>(sizeof(BlockQ8_K));
    __m512i isum[C];
#pragma GCC unroll 4
    for (int c = 0; c < C; ++c) isum[c] = _mm512_setzero_si512();
    for (int p = 0; p < 8; ++p) {
      // Each lane: its row's signed scales of sub-blocks 2p (low int16) and 2p + 1 (high int16).
      const __m512i scales = _mm512_cvtepi8_epi16(join128(g0 + 16 + 16 * p, g1 + 16 + 16 * p));
#pragma GCC unroll 2
      for (int half = 0; half < 2; ++half) {
        const int s = 2 * p + half;
        __m512i q[4];
        q6_k_unit_quants2(g0 + 144 + 96 * s, g1 + 144 + 96 * s, q);
        const __m512i sc = half == 0 ? _mm512_maskz_srai_epi32(kAll16, _mm512_maskz_slli_epi32(kAll16, scales, 16), 16)
                                     : _mm512_maskz_srai_epi32(kAll16, scales, 16);
#pragma GCC unroll 4
        for (int c = 0; c < C; ++c) {
          const auto* qa = reinterpret_cast<const int8_t*>(a + c * a_stride + a_off + offsetof(BlockQ8_K, qs)) + 16 * s;
          __m512i sub_sum = _mm512_setzero_si512();
#pragma GCC unroll 4
          for (int u = 0; u < 4; ++u) sub_sum = dpbusd(sub_sum, q[u], broadcast4(qa + 4 * u));
          isum[c] = _mm512_add_epi32(isum[c], _mm512_mullo_epi32(sub_sum, sc));
        }
      }
    }
    const __m512 dw = scales_fp16(g0, g1);
#pragma GCC unroll 4
    for (int c = 0; c < C; ++c) {
      const uint8_t* ab = a + c * a_stride + a_off;
      float da;
      std::memcpy(&da, ab + offsetof(BlockQ8_K, d), sizeof(da));
      const __m512i total =
          _mm512_sub_epi32(isum[c], _mm512_maskz_slli_epi32(kAll16, q6_k_scaled_sums2(g0, g1, ab), 5));
      acc[c] = _mm512_fmadd_ps(to_float(total), _mm512_mul_ps(dw, _mm512_set1_ps(da)), acc[c]);
    }
  }
#pragma GCC unroll 4
  for (int c = 0; c < C; ++c) _mm512_storeu_ps(y + c * y_stride, acc[c]);
}

}  // namespace

void packed_dot_q4_0_pair(int64_t n, const void* w, const void* a, size_t a_stride, const int32_t* a_sums,
                          int64_t sums_stride, int cols, float* y, int64_t y_stride) {
  const auto* wb = static_cast<const uint8_t*>(w);
  const auto* ab = static_cast<const uint8_t*>(a);
  with_cols(cols, [&]<int C>() { pair_q4_0<C>(n, wb, ab, a_stride, a_sums, sums_stride, y, y_stride); });
}

void packed_dot_q8_0_pair(int64_t n, const void* w, const void* a, size_t a_stride, const int32_t* a_sums,
                          int64_t sums_stride, int cols, float* y, int64_t y_stride) {
  const auto* wb = static_cast<const uint8_t*>(w);
  const auto* ab = static_cast<const uint8_t*>(a);
  with_cols(cols, [&]<int C>() { pair_q8_0<C>(n, wb, ab, a_stride, a_sums, sums_stride, y, y_stride); });
}

void packed_dot_q4_k_pair(int64_t n, const void* w, const void* a, size_t a_stride, const int32_t* /*a_sums*/,
                          int64_t /*sums_stride*/, int cols, float* y, int64_t y_stride) {
  const auto* wb = static_cast<const uint8_t*>(w);
  const auto* ab = static_cast<const uint8_t*>(a);
  with_cols(cols, [&]<int C>() { pair_q4_k<C>(n, wb, ab, a_stride, y, y_stride); });
}

void packed_dot_q6_k_pair(int64_t n, const void* w, const void* a, size_t a_stride, const int32_t* /*a_sums*/,
                          int64_t /*sums_stride*/, int cols, float* y, int64_t y_stride) {
  const auto* wb = static_cast<const uint8_t*>(w);
  const auto* ab = static_cast<const uint8_t*>(a);
  with_cols(cols, [&]<int C>() { pair_q6_k<C>(n, wb, ab, a_stride, y, y_stride); });
}

}  // namespace cellserve::engine::kernels::x86::vnni
