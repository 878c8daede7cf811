// Shared scaffolding of the AVX2 K-quant kernels: every kernel is written as one per-super-block
// pair of routines, and vec_dot and tile_dot are both built from them here, so a tile value and
// the vec_dot of the same pair run the same float operations in the same order (bit-identical by
// construction; the integer part is exact, so only its lane assignment has to agree, and it does).
//
// A kernel type K provides, for its weight block type K::Block:
//   struct K::Unpacked    the super-block decoded once: 8 groups of 32 int8 quants, scales, d/dmin;
//   static void K::unpack(const uint8_t* block, K::Unpacked* u);
//   static __m256i K::group_dot(const K::Unpacked& u, int g, __m256i y);
//       the scaled integer products of group g with the activation quants y, as 8 int32 lanes;
//   static __m256 K::finish(__m256 acc, const K::Unpacked& u, __m256i sums, const uint8_t* q8k_block);
//       adds the super-block (integer sums over the groups, plus mins/offset terms) to `acc`.
//
// Only for files compiled with AVX2 flags; everything here has internal linkage.
#pragma once

#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "engine/quant/block_types.h"

namespace cellserve::engine::kernels::x86 {

// An fp16 field of a block at any alignment, as float (F16C).
[[gnu::always_inline]] static inline float load_fp16(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, sizeof(h));
  return _cvtsh_ss(h);
}

// The fp32 scale of a Q8_K block at any alignment.
[[gnu::always_inline]] static inline float q8k_scale(const uint8_t* block) {
  float d;
  std::memcpy(&d, block + offsetof(BlockQ8_K, d), sizeof(d));
  return d;
}
[[gnu::always_inline]] static inline const uint8_t* q8k_quants(const uint8_t* block) {
  return block + offsetof(BlockQ8_K, qs);
}
[[gnu::always_inline]] static inline __m256i q8k_bsums(const uint8_t* block) {
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(block + offsetof(BlockQ8_K, bsums)));
}

[[gnu::always_inline]] static inline __m256i load_256(const uint8_t* p) {
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
}
[[gnu::always_inline]] static inline __m128i load_128(const uint8_t* p) {
  return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
}

// The sum of the 8 lanes, in a fixed order.
[[gnu::always_inline]] static inline float horizontal_sum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

// 16 signed bytes (the scales of sub-blocks 0..15) to 8 int16 vectors, vector g holding the scale
// of sub-block 2g in its low 8 lanes and of sub-block 2g+1 in its high 8 lanes.
[[gnu::always_inline]] static inline void spread_scales_16(__m128i scales8, __m256i* out) {
#pragma GCC unroll 8
  for (int g = 0; g < 8; ++g) {
    const __m128i pick = _mm_set_epi64x(0x0101010101010101LL * (2 * g + 1), 0x0101010101010101LL * (2 * g));
    out[g] = _mm256_cvtepi8_epi16(_mm_shuffle_epi8(scales8, pick));
  }
}

// The 12 bytes of 6-bit scales and mins of Q4_K / Q5_K (layout in block_types.h): the 8 scales
// as int16 in both 128-bit lanes (for scale_of_group) and the mins as 16 int16 holding min j in
// lanes 2j and 2j+1 (madd against the 16 bsums gives min_j * Σ y_j).
// Reads 16 bytes: in both block types the quants follow the scales.
[[gnu::always_inline]] static inline void unpack_scales_mins_k4(const uint8_t* packed, __m256i* scales,
                                                                __m256i* mins_dup) {
  // As 32-bit words w0 w1 w2: scales 0..3 and mins 0..3 are the low 6 bits of w0 and w1; scales
  // 4..7 are w2's low nibbles plus w0's top bit pairs, mins 4..7 w2's high nibbles plus w1's.
  const __m128i w = load_128(packed);
  const __m128i low = _mm_and_si128(w, _mm_set1_epi8(0x3f));                                       // [s0-3, m0-3, ., .]
  const __m128i nibbles = _mm_srlv_epi32(_mm_shuffle_epi32(w, 0xAA), _mm_setr_epi32(0, 4, 0, 4));  // w2, w2 >> 4
  const __m128i high = _mm_or_si128(_mm_and_si128(nibbles, _mm_set1_epi8(0x0f)),
                                    _mm_and_si128(_mm_srli_epi32(w, 2), _mm_set1_epi8(0x30)));  // [s4-7, m4-7, ., .]
  const __m128i ordered = _mm_unpacklo_epi32(low, high);  // [s0..s7, m0..m7] as bytes
  *scales = _mm256_broadcastsi128_si256(_mm_cvtepu8_epi16(ordered));
  const __m128i mins = _mm_cvtepu8_epi16(_mm_unpackhi_epi64(ordered, ordered));
  *mins_dup = _mm256_set_m128i(_mm_unpackhi_epi16(mins, mins), _mm_unpacklo_epi16(mins, mins));
}

// Scale g of 8 int16 scales held in both 128-bit lanes, broadcast to all 16 lanes (for madd).
[[gnu::always_inline]] static inline __m256i scale_of_group(__m256i scales, int g) {
  return _mm256_shuffle_epi8(scales, _mm256_set1_epi16(static_cast<int16_t>(0x0100 + 0x0202 * g)));
}

// One weight super-block (unpacked) against one activation block, added to `acc`. vec_dot and
// tile_dot both call exactly this per pair, so their results agree bit for bit.
template <typename K>
[[gnu::always_inline]] static inline __m256 accumulate(__m256 acc, const typename K::Unpacked& u, const uint8_t* act) {
  const uint8_t* y = q8k_quants(act);
  __m256i sums = _mm256_setzero_si256();
#pragma GCC unroll 8
  for (int g = 0; g < 8; ++g) sums = _mm256_add_epi32(sums, K::group_dot(u, g, load_256(y + 32 * g)));
  return K::finish(acc, u, sums, act);
}

// vec_dot from a kernel's per-super-block routines: one streaming pass over the weight row.
template <typename K>
static float superblock_vec_dot(int64_t n, const void* w, const void* a) {
  const auto* wb = static_cast<const uint8_t*>(w);
  const auto* ab = static_cast<const uint8_t*>(a);
  __m256 acc = _mm256_setzero_ps();
  for (int64_t i = 0; i < n / kQK_K; ++i) {
    typename K::Unpacked u;
    K::unpack(wb + i * sizeof(typename K::Block), &u);
    acc = accumulate<K>(acc, u, ab + i * sizeof(BlockQ8_K));
  }
  return horizontal_sum(acc);
}

// tile_dot from the same routines: the kRows weight super-blocks are unpacked once (to the stack,
// where they stay in L1) and used for all kCols activation rows. Each pair keeps its own
// accumulator, updated exactly as in superblock_vec_dot. (Interleaving the rows to share each
// activation load measured no faster on Zen 3, and needs more live registers.)
template <typename K, int kRows, int kCols>
static void superblock_tile_dot(int64_t n, const void* w, size_t w_stride, const void* a, size_t a_stride, float* y,
                                int64_t y_stride) {
  const auto* wb = static_cast<const uint8_t*>(w);
  const auto* ab = static_cast<const uint8_t*>(a);
  __m256 acc[kCols][kRows];
  for (int c = 0; c < kCols; ++c)
    for (int r = 0; r < kRows; ++r) acc[c][r] = _mm256_setzero_ps();
  for (int64_t i = 0; i < n / kQK_K; ++i) {
    typename K::Unpacked u[kRows];
#pragma GCC unroll 16
    for (int r = 0; r < kRows; ++r) K::unpack(wb + r * w_stride + i * sizeof(typename K::Block), &u[r]);
#pragma GCC unroll 1  // compact code; the per-pair work below is fully unrolled
    for (int c = 0; c < kCols; ++c) {
      const uint8_t* act = ab + c * a_stride + i * sizeof(BlockQ8_K);
#pragma GCC unroll 16
      for (int r = 0; r < kRows; ++r) acc[c][r] = accumulate<K>(acc[c][r], u[r], act);
    }
  }
  for (int c = 0; c < kCols; ++c)
    for (int r = 0; r < kRows; ++r) y[c * y_stride + r] = horizontal_sum(acc[c][r]);
}

}  // namespace cellserve::engine::kernels::x86
