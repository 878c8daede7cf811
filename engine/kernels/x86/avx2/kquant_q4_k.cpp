// Q4_K x Q8_K for AVX2: 8 sub-blocks of 32 with 6-bit scales and mins. The nibbles go straight
// into maddubs (unsigned 0..15 x signed activations), each sub-block's int16 pair sums are scaled
// by madd, and the mins term comes from the activation's bsums instead of the quants.
#include <immintrin.h>

#include <cstddef>
#include <cstdint>

#include "engine/kernels/x86/avx2/kquant_kernels.h"
#include "engine/kernels/x86/avx2/kquant_superblock.h"
#include "engine/quant/block_types.h"

namespace cellserve::engine::kernels::x86 {
namespace {

struct Q4K {
  using Block = BlockQ4_K;
  struct Unpacked {
    __m256i q[8];       // sub-block j's 32 quants, 0..15
    __m256i scales[8];  // sub-block j's scale in all 16 int16 lanes
    __m256i mins_dup;
    float d;
    float dmin;
  };

  [[gnu::always_inline]] static void unpack(const uint8_t* block, Unpacked* u) {
    u->d = load_fp16(block + offsetof(BlockQ4_K, d));
    u->dmin = load_fp16(block + offsetof(BlockQ4_K, dmin));
    __m256i scales;
    unpack_scales_mins_k4(block + offsetof(BlockQ4_K, scales), &scales, &u->mins_dup);
#pragma GCC unroll 8
    for (int j = 0; j < 8; ++j) u->scales[j] = scale_of_group(scales, j);
    const uint8_t* qs = block + offsetof(BlockQ4_K, qs);
    const __m256i low4 = _mm256_set1_epi8(0x0F);
#pragma GCC unroll 4
    for (int c = 0; c < 4; ++c) {
      const __m256i bits = load_256(qs + 32 * c);
      u->q[2 * c] = _mm256_and_si256(bits, low4);
      u->q[2 * c + 1] = _mm256_and_si256(_mm256_srli_epi16(bits, 4), low4);
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

float vec_dot_q4_k_avx2(int64_t n, const void* w, const void* a) { return superblock_vec_dot<Q4K>(n, w, a); }

void tile_dot_q4_k_avx2(int64_t n, const void* w, size_t w_stride, const void* a, size_t a_stride, float* y,
                        int64_t y_stride) {
  superblock_tile_dot<Q4K, kKquantTileRows, kKquantTileCols>(n, w, w_stride, a, a_stride, y, y_stride);
}

}  // namespace cellserve::engine::kernels::x86
