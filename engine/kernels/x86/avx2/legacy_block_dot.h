// The one loop behind every AVX2 blocks-of-32 dot product: an R x C tile of weight rows times
// activation rows, with vec_dot being the 1 x 1 tile. Sharing the loop is what makes a tile's
// values equal vec_dot's bit for bit: each pair sees the same integer products, the same
// fma(float(lane sums), d_w * d_a, acc) per block and the same final reduction.
//
// Included only by AVX2-compiled files; everything here is static (see common rules: no inline
// function with external linkage may be emitted with AVX2 flags).
#pragma once

#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "engine/kernels/x86/avx2/lanes.h"
#include "engine/quant/block_types.h"

namespace cellserve::engine::kernels::x86 {
namespace {

// Scalar fused multiply-add, explicit so the compiler cannot choose differently per call site.
inline float fused_multiply_add(float a, float b, float c) {
  return _mm_cvtss_f32(_mm_fmadd_ss(_mm_set_ss(a), _mm_set_ss(b), _mm_set_ss(c)));
}

// 32 nibbles of a block: element j (< 16) is the low nibble of qs[j], element j + 16 its high one.
inline __m256i unpack_nibbles(const uint8_t* qs) {
  const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs));
  const __m256i both = _mm256_set_m128i(_mm_srli_epi16(v, 4), v);
  return _mm256_and_si256(both, _mm256_set1_epi8(0x0F));
}

// 0xFF in byte j where bit j of the little-endian u32 at `qh` is set.
inline __m256i expand_bits(const uint8_t* qh) {
  uint32_t bits;
  std::memcpy(&bits, qh, sizeof(bits));
  const __m256i spread = _mm256_shuffle_epi8(
      _mm256_set1_epi32(static_cast<int>(bits)),
      _mm256_set_epi64x(0x0303030303030303, 0x0202020202020202, 0x0101010101010101, 0x0000000000000000));
  const __m256i select = _mm256_set1_epi64x(static_cast<int64_t>(0x8040201008040201ull));
  return _mm256_cmpeq_epi8(_mm256_and_si256(spread, select), select);
}

// Weight formats. quants() gives the 32 quants as int8 (signed formats, to be used with the
// sign trick) or uint8 (formats with a minimum, whose quants are in [0, 31]).
struct Q4_0Weights {
  using Block = BlockQ4_0;
  static constexpr bool kSigned = true;
  static constexpr bool kHasMin = false;
  static __m256i quants(const uint8_t* b) {
    return _mm256_sub_epi8(unpack_nibbles(b + offsetof(Block, qs)), _mm256_set1_epi8(8));
  }
};

struct Q5_0Weights {
  using Block = BlockQ5_0;
  static constexpr bool kSigned = true;
  static constexpr bool kHasMin = false;
  // q - 16 with q = nibble | bit << 4, i.e. the nibble minus 16 where the bit is clear.
  static __m256i quants(const uint8_t* b) {
    const __m256i low = unpack_nibbles(b + offsetof(Block, qs));
    const __m256i clear_bit_offset = _mm256_andnot_si256(expand_bits(b + offsetof(Block, qh)), _mm256_set1_epi8(16));
    return _mm256_sub_epi8(low, clear_bit_offset);
  }
};

struct Q8_0Weights {
  using Block = BlockQ8_0;
  static constexpr bool kSigned = true;
  static constexpr bool kHasMin = false;
  static __m256i quants(const uint8_t* b) {
    return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + offsetof(Block, qs)));
  }
};

struct IQ4_NLWeights {
  using Block = BlockIQ4_NL;
  static constexpr bool kSigned = true;
  static constexpr bool kHasMin = false;
  static __m256i quants(const uint8_t* b) {
    // The codebook (ggml's kvalues_iq4nl), in both 128-bit lanes for the byte shuffle.
    const __m256i codebook = _mm256_setr_epi8(-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113,
                                              -127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113);
    return _mm256_shuffle_epi8(codebook, unpack_nibbles(b + offsetof(Block, qs)));
  }
};

struct Q4_1Weights {
  using Block = BlockQ4_1;
  static constexpr bool kSigned = false;
  static constexpr bool kHasMin = true;
  static __m256i quants(const uint8_t* b) { return unpack_nibbles(b + offsetof(Block, qs)); }
};

struct Q5_1Weights {
  using Block = BlockQ5_1;
  static constexpr bool kSigned = false;
  static constexpr bool kHasMin = true;
  static __m256i quants(const uint8_t* b) {
    const __m256i high = _mm256_and_si256(expand_bits(b + offsetof(Block, qh)), _mm256_set1_epi8(16));
    return _mm256_or_si256(unpack_nibbles(b + offsetof(Block, qs)), high);
  }
};

// Activation formats: Q8_0 for signed weights, Q8_1 (which carries s = d * sum(q)) with minima.
template <bool kHasMin>
struct ActivationOf {
  using Block = BlockQ8_0;
};
template <>
struct ActivationOf<true> {
  using Block = BlockQ8_1;
};

// The R x C tile. y[c * y_stride + r] = w_r . a_c; with R = C = 1 it is vec_dot.
template <typename W, int R, int C>
inline void block_dot_tile(int64_t n, const uint8_t* w, size_t w_stride, const uint8_t* a, size_t a_stride, float* y,
                           int64_t y_stride) {
  using WBlock = typename W::Block;
  using ABlock = typename ActivationOf<W::kHasMin>::Block;
  const __m256i ones = _mm256_set1_epi16(1);
  __m256 acc[R][C];
  float mins[R][C];
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 16
    for (int c = 0; c < C; ++c) {
      acc[r][c] = _mm256_setzero_ps();
      mins[r][c] = 0.0f;
    }
  }
  const int64_t blocks = n / 32;
  for (int64_t i = 0; i < blocks; ++i) {
    const uint8_t* ab[C];
    float da[C];
    __m256 da8[C];  // da broadcast once per block, so each pair's scale is one multiply
    float sa[C];
#pragma GCC unroll 16
    for (int c = 0; c < C; ++c) {
      ab[c] = a + c * a_stride + i * static_cast<int64_t>(sizeof(ABlock));
      da[c] = load_fp16(ab[c] + offsetof(ABlock, d));
      da8[c] = _mm256_set1_ps(da[c]);
      if constexpr (W::kHasMin) sa[c] = load_fp16(ab[c] + offsetof(ABlock, s));
    }
    // Rows outer, so only one row's unpacked quants are live at a time (the accumulators need
    // most of the 16 registers; the activation blocks are 32-byte loads from L1).
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) {
      const uint8_t* wb = w + r * w_stride + i * static_cast<int64_t>(sizeof(WBlock));
      const __m256i x = W::quants(wb);
      const float dw = load_fp16(wb + offsetof(WBlock, d));
      const __m256 dw8 = _mm256_set1_ps(dw);
#pragma GCC unroll 16
      for (int c = 0; c < C; ++c) {
        const __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(ab[c] + offsetof(ABlock, qs)));
        __m256i pairs;  // 16 int16 sums of two products (no saturation: |x| <= 128, |q| <= 127)
        if constexpr (W::kSigned) {
          pairs = _mm256_maddubs_epi16(_mm256_sign_epi8(x, x), _mm256_sign_epi8(q, x));
        } else {
          pairs = _mm256_maddubs_epi16(x, q);
        }
        const __m256 sums = _mm256_cvtepi32_ps(_mm256_madd_epi16(pairs, ones));
        // d_w * d_a rounds the same whether done in a scalar or in (broadcast) lanes.
        const __m256 d = R * C == 1 ? _mm256_set1_ps(dw * da[c]) : _mm256_mul_ps(dw8, da8[c]);
        acc[r][c] = _mm256_fmadd_ps(sums, d, acc[r][c]);
        if constexpr (W::kHasMin) {
          mins[r][c] = fused_multiply_add(load_fp16(wb + offsetof(WBlock, m)), sa[c], mins[r][c]);
        }
      }
    }
  }
#pragma GCC unroll 16
  for (int c = 0; c < C; ++c) {
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) {
      float v = horizontal_sum(acc[r][c]);
      if constexpr (W::kHasMin) v += mins[r][c];
      y[c * y_stride + r] = v;
    }
  }
}

}  // namespace
}  // namespace cellserve::engine::kernels::x86
