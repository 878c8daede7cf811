// Q2_K x Q8_K for AVX2: 16 sub-blocks of 16, 4-bit scales and mins. The 2-bit quants go to
// maddubs directly; the mins term comes from the activation's bsums.
#include <immintrin.h>

#include <cstddef>
#include <cstdint>

#include "engine/kernels/x86/avx2/kquant_kernels.h"
#include "engine/kernels/x86/avx2/kquant_superblock.h"
#include "engine/quant/block_types.h"

namespace cellserve::engine::kernels::x86 {
namespace {

struct Q2K {
  using Block = BlockQ2_K;
  struct Unpacked {
    __m256i q[8];       // elements 32g..32g+31, 0..3
    __m256i scales[8];  // group g: scale of sub-block 2g (low 8 lanes), 2g+1 (high 8 lanes)
    __m256i mins16;     // the 16 mins as int16
    float d;
    float dmin;
  };

  [[gnu::always_inline]] static void unpack(const uint8_t* block, Unpacked* u) {
    u->d = load_fp16(block + offsetof(BlockQ2_K, d));
    u->dmin = load_fp16(block + offsetof(BlockQ2_K, dmin));
    const __m128i packed = load_128(block + offsetof(BlockQ2_K, scales));
    const __m128i low4 = _mm_set1_epi8(0x0F);
    spread_scales_16(_mm_and_si128(packed, low4), u->scales);
    u->mins16 = _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(packed, 4), low4));
    const __m256i low2 = _mm256_set1_epi8(3);
#pragma GCC unroll 2
    for (int h = 0; h < 2; ++h) {
      const __m256i bits = load_256(block + offsetof(BlockQ2_K, qs) + 32 * h);
      u->q[4 * h + 0] = _mm256_and_si256(bits, low2);
      u->q[4 * h + 1] = _mm256_and_si256(_mm256_srli_epi16(bits, 2), low2);
      u->q[4 * h + 2] = _mm256_and_si256(_mm256_srli_epi16(bits, 4), low2);
      u->q[4 * h + 3] = _mm256_and_si256(_mm256_srli_epi16(bits, 6), low2);
    }
  }

  [[gnu::always_inline]] static __m256i group_dot(const Unpacked& u, int g, __m256i y) {
    return _mm256_madd_epi16(_mm256_maddubs_epi16(u.q[g], y), u.scales[g]);
  }

  [[gnu::always_inline]] static __m256 finish(__m256 acc, const Unpacked& u, __m256i sums, const uint8_t* act) {
    const float ad = q8k_scale(act);
    const __m256i min_sums = _mm256_madd_epi16(q8k_bsums(act), u.mins16);
    acc = _mm256_fmadd_ps(_mm256_set1_ps(u.d * ad), _mm256_cvtepi32_ps(sums), acc);
    return _mm256_fnmadd_ps(_mm256_set1_ps(u.dmin * ad), _mm256_cvtepi32_ps(min_sums), acc);
  }
};

}  // namespace

float vec_dot_q2_k_avx2(int64_t n, const void* w, const void* a) { return superblock_vec_dot<Q2K>(n, w, a); }

}  // namespace cellserve::engine::kernels::x86
