// AVX2 activation converters, bit-identical to engine/kernels/reference/activation_convert.cpp:
// the same single multiply per element before rounding half to even, the same scalar scale math.
#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "engine/kernels/x86/avx2/legacy_kernels.h"
#include "engine/quant/block_types.h"

namespace cellserve::engine::kernels::x86 {
namespace {

inline uint16_t to_fp16(float f) { return _cvtss_sh(f, _MM_FROUND_TO_NEAREST_INT); }

inline __m256 abs_ps(__m256 v) { return _mm256_and_ps(v, _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff))); }

inline float horizontal_max(__m256 v) {
  __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  m = _mm_max_ps(m, _mm_movehl_ps(m, m));
  m = _mm_max_ss(m, _mm_movehdup_ps(m));
  return _mm_cvtss_f32(m);
}

inline int horizontal_sum_epi32(__m256i v) {
  __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(1, 0, 3, 2)));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(2, 3, 0, 1)));
  return _mm_cvtsi128_si32(s);
}

// round-half-even(x * scale) as int32 lanes.
inline __m256i round_scaled(__m256 x, __m256 scale) {
  return _mm256_cvtps_epi32(_mm256_round_ps(_mm256_mul_ps(x, scale), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
}

// Packs 32 int32 (four vectors of 8, in element order) to 32 int8 with signed saturation.
inline __m256i pack_to_int8(__m256i i0, __m256i i1, __m256i i2, __m256i i3) {
  // The packs work per 128-bit lane, leaving groups of 4 in the order 0 2 4 6 1 3 5 7.
  const __m256i packed = _mm256_packs_epi16(_mm256_packs_epi32(i0, i1), _mm256_packs_epi32(i2, i3));
  return _mm256_permutevar8x32_epi32(packed, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}

// One block of 32 as Q8_0/Q8_1 do: d = amax / 127, q = round(x * 127 / amax). Returns sum(q).
int quantize_block_32(const float* x, float* d, int8_t* q) {
  const __m256 v0 = _mm256_loadu_ps(x);
  const __m256 v1 = _mm256_loadu_ps(x + 8);
  const __m256 v2 = _mm256_loadu_ps(x + 16);
  const __m256 v3 = _mm256_loadu_ps(x + 24);
  const __m256 m = _mm256_max_ps(_mm256_max_ps(abs_ps(v0), abs_ps(v1)), _mm256_max_ps(abs_ps(v2), abs_ps(v3)));
  const float amax = horizontal_max(m);
  *d = amax / 127.0f;
  const __m256 id = _mm256_set1_ps(amax != 0.0f ? 127.0f / amax : 0.0f);
  const __m256i i0 = round_scaled(v0, id);
  const __m256i i1 = round_scaled(v1, id);
  const __m256i i2 = round_scaled(v2, id);
  const __m256i i3 = round_scaled(v3, id);
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(q), pack_to_int8(i0, i1, i2, i3));
  return horizontal_sum_epi32(_mm256_add_epi32(_mm256_add_epi32(i0, i1), _mm256_add_epi32(i2, i3)));
}

}  // namespace

// vcvtps2ph rounds to nearest even and handles subnormals, infinities and NaN as fp32_to_fp16.
void round_f16(const float* x, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT);
    _mm256_storeu_ps(y + i, _mm256_cvtph_ps(h));
  }
  for (; i < n; ++i) y[i] = _cvtsh_ss(to_fp16(x[i]));
}

void from_float_f16(const float* src, void* dst, int64_t n) {
  auto* y = static_cast<uint8_t*>(dst);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(y + 2 * i), h);
  }
  for (; i < n; ++i) {
    const uint16_t h = to_fp16(src[i]);
    std::memcpy(y + 2 * i, &h, 2);
  }
}

void from_float_bf16(const float* src, void* dst, int64_t n) {
  auto* y = static_cast<uint8_t*>(dst);
  int64_t i = 0;
  // Round to nearest even by adding 0x7fff + lsb; NaNs are kept quiet by setting bit 6 instead.
  auto convert8 = [](const float* p) {
    const __m256i x = _mm256_castps_si256(_mm256_loadu_ps(p));
    const __m256i high = _mm256_srli_epi32(x, 16);
    const __m256i bias = _mm256_add_epi32(_mm256_set1_epi32(0x7fff), _mm256_and_si256(high, _mm256_set1_epi32(1)));
    const __m256i rounded = _mm256_srli_epi32(_mm256_add_epi32(x, bias), 16);
    const __m256i is_nan =
        _mm256_cmpgt_epi32(_mm256_and_si256(x, _mm256_set1_epi32(0x7fffffff)), _mm256_set1_epi32(0x7f800000));
    const __m256i quiet_nan = _mm256_or_si256(high, _mm256_set1_epi32(64));
    const __m256i r = _mm256_blendv_epi8(rounded, quiet_nan, is_nan);
    // Every lane is in [0, 0xffff], so the unsigned-saturating pack is exact.
    const __m256i packed = _mm256_packus_epi32(r, r);
    return _mm256_castsi256_si128(_mm256_permute4x64_epi64(packed, _MM_SHUFFLE(3, 1, 2, 0)));
  };
  for (; i + 8 <= n; i += 8) _mm_storeu_si128(reinterpret_cast<__m128i*>(y + 2 * i), convert8(src + i));
  if (i < n) {
    float tail[8] = {};
    std::memcpy(tail, src + i, static_cast<size_t>(n - i) * sizeof(float));
    uint16_t out[8];
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out), convert8(tail));
    std::memcpy(y + 2 * i, out, static_cast<size_t>(n - i) * 2);
  }
}

void from_float_q8_0(const float* src, void* dst, int64_t n) {
  auto* y = static_cast<uint8_t*>(dst);
  for (int64_t i = 0; i < n / 32; ++i) {
    uint8_t* b = y + i * static_cast<int64_t>(sizeof(BlockQ8_0));
    float d;
    int8_t q[32];
    quantize_block_32(src + i * 32, &d, q);
    const uint16_t dh = to_fp16(d);
    std::memcpy(b + offsetof(BlockQ8_0, d), &dh, 2);
    std::memcpy(b + offsetof(BlockQ8_0, qs), q, 32);
  }
}

void from_float_q8_1(const float* src, void* dst, int64_t n) {
  auto* y = static_cast<uint8_t*>(dst);
  for (int64_t i = 0; i < n / 32; ++i) {
    uint8_t* b = y + i * static_cast<int64_t>(sizeof(BlockQ8_1));
    float d;
    int8_t q[32];
    const int sum = quantize_block_32(src + i * 32, &d, q);
    const uint16_t dh = to_fp16(d);
    const uint16_t sh = to_fp16(d * static_cast<float>(sum));
    std::memcpy(b + offsetof(BlockQ8_1, d), &dh, 2);
    std::memcpy(b + offsetof(BlockQ8_1, s), &sh, 2);
    std::memcpy(b + offsetof(BlockQ8_1, qs), q, 32);
  }
}

void from_float_q8_k(const float* src, void* dst, int64_t n) {
  auto* y = static_cast<uint8_t*>(dst);
  for (int64_t i = 0; i < n / 256; ++i) {
    const float* x = src + i * 256;
    uint8_t* b = y + i * static_cast<int64_t>(sizeof(BlockQ8_K));
    __m256 m = _mm256_setzero_ps();
    for (int j = 0; j < 256; j += 8) m = _mm256_max_ps(m, abs_ps(_mm256_loadu_ps(x + j)));
    const float amax = horizontal_max(m);
    if (amax == 0.0f) {
      std::memset(b, 0, sizeof(BlockQ8_K));
      continue;
    }
    // The reference keeps the first element of largest magnitude; its sign decides the scale's.
    float max = 0.0f;
    const __m256 amax8 = _mm256_set1_ps(amax);
    for (int j = 0; j < 256; j += 8) {
      const int hits = _mm256_movemask_ps(_mm256_cmp_ps(abs_ps(_mm256_loadu_ps(x + j)), amax8, _CMP_EQ_OQ));
      if (hits != 0) {
        max = x[j + __builtin_ctz(static_cast<unsigned>(hits))];
        break;
      }
    }
    const float iscale = -127.0f / max;
    const __m256 scale = _mm256_set1_ps(iscale);
    int8_t q[256];
    int16_t bsums[16];
    for (int j = 0; j < 256; j += 32) {
      const __m256i i0 = round_scaled(_mm256_loadu_ps(x + j), scale);
      const __m256i i1 = round_scaled(_mm256_loadu_ps(x + j + 8), scale);
      const __m256i i2 = round_scaled(_mm256_loadu_ps(x + j + 16), scale);
      const __m256i i3 = round_scaled(_mm256_loadu_ps(x + j + 24), scale);
      // Values never go below -127; the pack's saturation is the reference's clamp at +127.
      const __m256i packed = pack_to_int8(i0, i1, i2, i3);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(q + j), packed);
      // Group sums from the stored int8 (after the clamp), 16 elements per group.
      const __m256i pair_sums = _mm256_maddubs_epi16(_mm256_set1_epi8(1), packed);
      const __m256i quad_sums = _mm256_madd_epi16(pair_sums, _mm256_set1_epi16(1));
      bsums[j / 16] = static_cast<int16_t>(horizontal_sum_epi32(
          _mm256_permute2x128_si256(quad_sums, _mm256_setzero_si256(), 0x20)));  // low 128 bits: group 0
      bsums[j / 16 + 1] = static_cast<int16_t>(horizontal_sum_epi32(
          _mm256_permute2x128_si256(quad_sums, _mm256_setzero_si256(), 0x31)));  // high 128 bits: group 1
    }
    const float d = 1.0f / iscale;
    std::memcpy(b + offsetof(BlockQ8_K, d), &d, 4);
    std::memcpy(b + offsetof(BlockQ8_K, qs), q, 256);
    std::memcpy(b + offsetof(BlockQ8_K, bsums), bsums, 32);
  }
}

}  // namespace cellserve::engine::kernels::x86
