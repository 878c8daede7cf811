// Packed-group dot products (Q4_0, Q8_0, Q4_K, Q6_K; layouts in reference/packed_*.cpp) for CPUs
// with VNNI, written once for two tables: avx512-vnni (EVEX vpdpbusd, avx512_vnni/) and avx-vnni
// (VEX vpdpbusd, avx_vnni/). The includer includes <immintrin.h>, <cstring>, lanes.h,
// packed_common.h, reference_kernels.h and block_types.h, opens its namespace, defines
// dpbusd(acc, u8, s8), then includes this file.
//
// They are the AVX2 kernels' loops (avx2/packed_*.cpp) on 256-bit registers, with the int8 dot
// products done by vpdpbusd: one instruction multiplies 4 unsigned weight quants by 4 signed
// activation quants and adds them into each int32 lane, where AVX2 needs maddubs, an int16 add
// and madd. The int32 sums are exact either way, and the float arithmetic per lane is the
// reference's, so results equal the reference bit for bit.
//
// Signed Q8_0 weights are made unsigned by flipping their sign bit (w + 128), and 128 * sum(a)
// is subtracted per block, as Q4_0's 8 * sum(a). K-quant sub-block scales multiply the int32 sums
// (vpmulld) instead of entering through madd.
#pragma once

namespace {

constexpr int kRows = 8;
constexpr size_t kScaleBytes = kRows * sizeof(uint16_t);

inline __m256i dot_u8s8(__m256i acc, __m256i u8, const int8_t* four_s8) {
  return dpbusd(acc, u8, broadcast_u32(four_s8));
}

template <int C>
void packed_q4_0(int64_t n, const uint8_t* w, const uint8_t* a, size_t a_stride, const int32_t* sums,
                 int64_t sums_stride, float* y, int64_t y_stride) {
  const __m256i low_mask = _mm256_set1_epi8(0x0F);
  __m256 acc[C];
#pragma GCC unroll 4
  for (int c = 0; c < C; ++c) acc[c] = _mm256_setzero_ps();
  for (int64_t b = 0; b < n / 32; ++b) {
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
      __m256i isum = _mm256_set1_epi32(-8 * sums[c * sums_stride + b]);
#pragma GCC unroll 4
      for (int u = 0; u < 4; ++u) isum = dot_u8s8(isum, lo[u], q + 4 * u);
#pragma GCC unroll 4
      for (int u = 0; u < 4; ++u) isum = dot_u8s8(isum, hi[u], q + 16 + 4 * u);
      const __m256 d = _mm256_mul_ps(dw, _mm256_set1_ps(load_fp16(ab)));
      acc[c] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum), d, acc[c]);
    }
  }
#pragma GCC unroll 4
  for (int c = 0; c < C; ++c) _mm256_storeu_ps(y + c * y_stride, acc[c]);
}

template <int C>
void packed_q8_0(int64_t n, const uint8_t* w, const uint8_t* a, size_t a_stride, const int32_t* sums,
                 int64_t sums_stride, float* y, int64_t y_stride) {
  const __m256i sign_bit = _mm256_set1_epi8(static_cast<char>(0x80));
  __m256 acc[C];
#pragma GCC unroll 4
  for (int c = 0; c < C; ++c) acc[c] = _mm256_setzero_ps();
  for (int64_t b = 0; b < n / 32; ++b) {
    const uint8_t* g = w + b * kRows * static_cast<int64_t>(sizeof(BlockQ8_0));
    const __m256 dw = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(g)));
    __m256i units[8];
#pragma GCC unroll 8
    for (int u = 0; u < 8; ++u) {
      units[u] = _mm256_xor_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(g + kScaleBytes + 32 * u)),
                                  sign_bit);  // w + 128
    }
#pragma GCC unroll 4
    for (int c = 0; c < C; ++c) {
      const uint8_t* ab = a + c * a_stride + b * static_cast<int64_t>(sizeof(BlockQ8_0));
      const auto* q = reinterpret_cast<const int8_t*>(ab + offsetof(BlockQ8_0, qs));
      __m256i isum = _mm256_set1_epi32(-128 * sums[c * sums_stride + b]);
#pragma GCC unroll 8
      for (int u = 0; u < 8; ++u) isum = dot_u8s8(isum, units[u], q + 4 * u);
      const __m256 d = _mm256_mul_ps(dw, _mm256_set1_ps(load_fp16(ab)));
      acc[c] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum), d, acc[c]);
    }
  }
#pragma GCC unroll 4
  for (int c = 0; c < C; ++c) _mm256_storeu_ps(y + c * y_stride, acc[c]);
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
      __m256i slo[C];
      __m256i shi[C];
#pragma GCC unroll 4
      for (int c = 0; c < C; ++c) slo[c] = shi[c] = _mm256_setzero_si256();
#pragma GCC unroll 8
      for (int u = 0; u < 8; ++u) {
        const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(g + 160 + 256 * k + 32 * u));
        const __m256i lo = _mm256_and_si256(v, mask);
        const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), mask);
#pragma GCC unroll 4
        for (int c = 0; c < C; ++c) {
          const auto* q = reinterpret_cast<const int8_t*>(a + c * a_stride + a_off + offsetof(BlockQ8_K, qs));
          slo[c] = dot_u8s8(slo[c], lo, q + 64 * k + 4 * u);
          shi[c] = dot_u8s8(shi[c], hi, q + 64 * k + 32 + 4 * u);
        }
      }
      // The 8 rows' 6-bit scales of sub-blocks 2k and 2k + 1.
      const __m256i sc_lo = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(g + 32 + 16 * k)));
      const __m256i sc_hi =
          _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(g + 32 + 16 * k + 8)));
#pragma GCC unroll 4
      for (int c = 0; c < C; ++c) {
        isum[c] = _mm256_add_epi32(
            isum[c], _mm256_add_epi32(_mm256_mullo_epi32(slo[c], sc_lo), _mm256_mullo_epi32(shi[c], sc_hi)));
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

template <int C>
void packed_q6_k(int64_t n, const uint8_t* w, const uint8_t* a, size_t a_stride, float* y, int64_t y_stride) {
  constexpr int64_t kGroupBytes = reference::kPackedQ6_KBytes;
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
      // Each lane: row r's signed scales of sub-blocks 2p (low int16) and 2p + 1 (high int16).
      const __m256i scales = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(g + 16 + 16 * p)));
#pragma GCC unroll 2
      for (int half = 0; half < 2; ++half) {
        const int s = 2 * p + half;
        __m256i q0, q1, q2, q3;
        q6_k_unit_quants(g + 144 + 96 * s, q0, q1, q2, q3);
        const __m256i sc =
            half == 0 ? _mm256_srai_epi32(_mm256_slli_epi32(scales, 16), 16) : _mm256_srai_epi32(scales, 16);
#pragma GCC unroll 4
        for (int c = 0; c < C; ++c) {
          const auto* q = reinterpret_cast<const int8_t*>(a + c * a_stride + a_off + offsetof(BlockQ8_K, qs)) + 16 * s;
          __m256i sub_sum = dot_u8s8(_mm256_setzero_si256(), q0, q);
          sub_sum = dot_u8s8(sub_sum, q1, q + 4);
          sub_sum = dot_u8s8(sub_sum, q2, q + 8);
          sub_sum = dot_u8s8(sub_sum, q3, q + 12);
          isum[c] = _mm256_add_epi32(isum[c], _mm256_mullo_epi32(sub_sum, sc));
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

void packed_dot_q4_0(int64_t n, const void* w, const void* a, size_t a_stride, const int32_t* a_sums,
                     int64_t sums_stride, int cols, float* y, int64_t y_stride) {
  const auto* wb = static_cast<const uint8_t*>(w);
  const auto* ab = static_cast<const uint8_t*>(a);
  with_cols(cols, [&]<int C>() { packed_q4_0<C>(n, wb, ab, a_stride, a_sums, sums_stride, y, y_stride); });
}

void packed_dot_q8_0(int64_t n, const void* w, const void* a, size_t a_stride, const int32_t* a_sums,
                     int64_t sums_stride, int cols, float* y, int64_t y_stride) {
  const auto* wb = static_cast<const uint8_t*>(w);
  const auto* ab = static_cast<const uint8_t*>(a);
  with_cols(cols, [&]<int C>() { packed_q8_0<C>(n, wb, ab, a_stride, a_sums, sums_stride, y, y_stride); });
}

void packed_dot_q4_k(int64_t n, const void* w, const void* a, size_t a_stride, const int32_t* /*a_sums*/,
                     int64_t /*sums_stride*/, int cols, float* y, int64_t y_stride) {
  const auto* wb = static_cast<const uint8_t*>(w);
  const auto* ab = static_cast<const uint8_t*>(a);
  with_cols(cols, [&]<int C>() { packed_q4_k<C>(n, wb, ab, a_stride, y, y_stride); });
}

void packed_dot_q6_k(int64_t n, const void* w, const void* a, size_t a_stride, const int32_t* /*a_sums*/,
                     int64_t /*sums_stride*/, int cols, float* y, int64_t y_stride) {
  const auto* wb = static_cast<const uint8_t*>(w);
  const auto* ab = static_cast<const uint8_t*>(a);
  with_cols(cols, [&]<int C>() { packed_q6_k<C>(n, wb, ab, a_stride, y, y_stride); });
}
