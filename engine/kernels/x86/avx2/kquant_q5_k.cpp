// Q5_K x Q8_K for AVX2: Q4_K's structure (see kquant_q4_k.cpp) with a fifth bit per quant from
// qh, so the quants are 0..31 (still well inside maddubs' int16 range).
#include <immintrin.h>

#include <cstddef>
#include <cstdint>

#include "engine/kernels/x86/avx2/kquant_kernels.h"
#include "engine/kernels/x86/avx2/kquant_superblock.h"
#include "engine/quant/block_types.h"

namespace cellserve::engine::kernels::x86 {
namespace {

struct Q5K {
  using Block = BlockQ5_K;
  struct Unpacked {
    __m256i q[8];       // sub-block j's 32 quants, 0..31
    __m256i scales[8];  // sub-block j's scale in all 16 int16 lanes
    __m256i mins_dup;
    float d;
    float dmin;
  };

  [[gnu::always_inline]] static void unpack(const uint8_t* block, Unpacked* u) {
    u->d = load_fp16(block + offsetof(BlockQ5_K, d));
    u->dmin = load_fp16(block + offsetof(BlockQ5_K, dmin));
    __m256i scales;
    unpack_scales_mins_k4(block + offsetof(BlockQ5_K, scales), &scales, &u->mins_dup);
#pragma GCC unroll 8
    for (int j = 0; j < 8; ++j) u->scales[j] = scale_of_group(scales, j);
    const uint8_t* qs = block + offsetof(BlockQ5_K, qs);
    const __m256i qh = load_256(block + offsetof(BlockQ5_K, qh));
    const __m256i low4 = _mm256_set1_epi8(0x0F);
    const __m256i bit4 = _mm256_set1_epi8(0x10);
#pragma GCC unroll 4
    for (int c = 0; c < 4; ++c) {
      // Chunk c's fifth bits are bits 2c (first 32) and 2c+1 (next 32) of qh; shifted to bit 4 of
      // their own byte (16-bit shifts, masked, so no bit crosses into the neighbouring byte).
      const __m256i high = _mm256_srli_epi16(qh, 2 * c);
      const __m256i bits = load_256(qs + 32 * c);
      u->q[2 * c] = _mm256_or_si256(_mm256_and_si256(bits, low4), _mm256_and_si256(_mm256_slli_epi16(high, 4), bit4));
      u->q[2 * c + 1] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(bits, 4), low4),
                                        _mm256_and_si256(_mm256_slli_epi16(high, 3), bit4));
    }
  }

  [[gnu::always_inline]] static __m256i group_dot(const Unpacked& u, int g, __m256i y) {
    return _mm256_madd_epi16(_mm256_maddubs_epi16(u.q[g], y), u.scales[g]);
  }

  [[gnu::always_inline]] static __m256 finish(__m256 acc, const Unpacked& u, __m256i sums, const uint8_t* act) {
    const float ad = q8k_scale(act);
    const __m256i min_sums = _mm256_madd_epi16(q8k_bsums(act), u.mins_dup);
    acc = _mm256_fmadd_ps(_mm256_set1_ps(u.d * ad), _mm256_cvtepi32_ps(sums), acc);
    return _mm256_fnmadd_ps(_mm256_set1_ps(u.dmin * ad), _mm256_cvtepi32_ps(min_sums), acc);
  }
};

}  // namespace

float vec_dot_q5_k_avx2(int64_t n, const void* w, const void* a) { return superblock_vec_dot<Q5K>(n, w, a); }

void tile_dot_q5_k_avx2(int64_t n, const void* w, size_t w_stride, const void* a, size_t a_stride, float* y,
                        int64_t y_stride) {
  superblock_tile_dot<Q5K, kKquantTileRows, kKquantTileCols>(n, w, w_stride, a, a_stride, y, y_stride);
}

}  // namespace cellserve::engine::kernels::x86
