// Q6_K x Q8_K for AVX2: 16 sub-blocks of 16 with signed 8-bit scales. The quants are fed to
// maddubs unbiased (0..63) and the -32 offset is applied once per super-block through the
// activation's bsums: Σ s_j (q - 32) y = Σ s_j q y - 32 Σ s_j bsum_j.
#include <immintrin.h>

#include <cstddef>
#include <cstdint>

#include "engine/kernels/x86/avx2/kquant_kernels.h"
#include "engine/kernels/x86/avx2/kquant_superblock.h"
#include "engine/quant/block_types.h"

namespace cellserve::engine::kernels::x86 {
namespace {

struct Q6K {
  using Block = BlockQ6_K;
  struct Unpacked {
    __m256i q[8];       // elements 32g..32g+31, 0..63
    __m256i scales[8];  // group g: scale of sub-block 2g (low 8 lanes), 2g+1 (high 8 lanes)
    __m256i scales16;   // the 16 scales as int16, for the offset term
    float d;
  };

  [[gnu::always_inline]] static void unpack(const uint8_t* block, Unpacked* u) {
    u->d = load_fp16(block + offsetof(BlockQ6_K, d));
    const __m128i scales8 = load_128(block + offsetof(BlockQ6_K, scales));
    spread_scales_16(scales8, u->scales);
    u->scales16 = _mm256_cvtepi8_epi16(scales8);
    const __m256i low4 = _mm256_set1_epi8(0x0F);
    const __m256i top2 = _mm256_set1_epi8(0x30);
#pragma GCC unroll 2
    for (int h = 0; h < 2; ++h) {
      // Per 128-element half: ql bytes l hold elements l / l+64, bytes 32+l hold l+32 / l+96;
      // qh byte l holds the high bit pairs of l, l+32, l+64, l+96.
      const __m256i ql0 = load_256(block + offsetof(BlockQ6_K, ql) + 64 * h);
      const __m256i ql1 = load_256(block + offsetof(BlockQ6_K, ql) + 64 * h + 32);
      const __m256i qh = load_256(block + offsetof(BlockQ6_K, qh) + 32 * h);
      u->q[4 * h + 0] = _mm256_or_si256(_mm256_and_si256(ql0, low4), _mm256_and_si256(_mm256_slli_epi16(qh, 4), top2));
      u->q[4 * h + 1] = _mm256_or_si256(_mm256_and_si256(ql1, low4), _mm256_and_si256(_mm256_slli_epi16(qh, 2), top2));
      u->q[4 * h + 2] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql0, 4), low4), _mm256_and_si256(qh, top2));
      u->q[4 * h + 3] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql1, 4), low4),
                                        _mm256_and_si256(_mm256_srli_epi16(qh, 2), top2));
    }
  }

  [[gnu::always_inline]] static __m256i group_dot(const Unpacked& u, int g, __m256i y) {
    return _mm256_madd_epi16(_mm256_maddubs_epi16(u.q[g], y), u.scales[g]);
  }

  [[gnu::always_inline]] static __m256 finish(__m256 acc, const Unpacked& u, __m256i sums, const uint8_t* act) {
    const float ad = q8k_scale(act);
    const __m256i offsets = _mm256_madd_epi16(q8k_bsums(act), u.scales16);
    const __m256i total = _mm256_sub_epi32(sums, _mm256_slli_epi32(offsets, 5));
    return _mm256_fmadd_ps(_mm256_set1_ps(u.d * ad), _mm256_cvtepi32_ps(total), acc);
  }
};

}  // namespace

float vec_dot_q6_k_avx2(int64_t n, const void* w, const void* a) { return superblock_vec_dot<Q6K>(n, w, a); }

void tile_dot_q6_k_avx2(int64_t n, const void* w, size_t w_stride, const void* a, size_t a_stride, float* y,
                        int64_t y_stride) {
  superblock_tile_dot<Q6K, kKquantTileRows, kKquantTileCols>(n, w, w_stride, a, a_stride, y, y_stride);
}

}  // namespace cellserve::engine::kernels::x86
