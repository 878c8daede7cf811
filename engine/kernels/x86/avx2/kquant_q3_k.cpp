// Q3_K x Q8_K for AVX2: 16 sub-blocks of 16 with 6-bit signed scales. The quants go to maddubs
// as low | high << 2 (0..7) and the -4 offset is applied through the bsums, as in Q6_K.
#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "engine/kernels/x86/avx2/kquant_kernels.h"
#include "engine/kernels/x86/avx2/kquant_superblock.h"
#include "engine/quant/block_types.h"

namespace cellserve::engine::kernels::x86 {
namespace {

// Bit kBit of every byte of v, moved to bit 2 (shifts of at most 5 within 16-bit lanes cannot
// carry a masked bit across a byte boundary).
template <int kBit>
[[gnu::always_inline]] static inline __m256i bit_to_4(__m256i v) {
  const __m256i isolated = _mm256_and_si256(v, _mm256_set1_epi8(static_cast<char>(1 << kBit)));
  if constexpr (kBit < 2) return _mm256_slli_epi16(isolated, 2 - kBit);
  return _mm256_srli_epi16(isolated, kBit - 2);
}

// The 16 scales (6-bit, stored + 32) as signed bytes. Scale j's low nibble is nibble j / 8 of
// byte j % 8; its high 2 bits are bit pair j / 4 of byte 8 + j % 4.
[[gnu::always_inline]] static inline __m128i unpack_scales_q3_k(const uint8_t* packed) {
  uint32_t w[3];
  std::memcpy(w, packed, sizeof(w));
  const uint32_t nibbles = 0x0f0f0f0f;
  const uint32_t pairs = 0x30303030;
  const uint32_t s0 = (w[0] & nibbles) | ((w[2] << 4) & pairs);         // scales 0..3
  const uint32_t s1 = (w[1] & nibbles) | ((w[2] << 2) & pairs);         // 4..7
  const uint32_t s2 = ((w[0] >> 4) & nibbles) | (w[2] & pairs);         // 8..11
  const uint32_t s3 = ((w[1] >> 4) & nibbles) | ((w[2] >> 2) & pairs);  // 12..15
  const __m128i biased =
      _mm_set_epi32(static_cast<int>(s3), static_cast<int>(s2), static_cast<int>(s1), static_cast<int>(s0));
  return _mm_sub_epi8(biased, _mm_set1_epi8(32));
}

struct Q3K {
  using Block = BlockQ3_K;
  struct Unpacked {
    __m256i q[8];       // elements 32g..32g+31 as low | high << 2, 0..7
    __m256i scales[8];  // group g: scale of sub-block 2g (low 8 lanes), 2g+1 (high 8 lanes)
    __m256i scales16;   // the 16 scales as int16, for the offset term
    float d;
  };

  template <int kGroup>
  [[gnu::always_inline]] static void unpack_group(__m256i low_bits, __m256i high_bits, Unpacked* u) {
    const __m256i low = _mm256_and_si256(_mm256_srli_epi16(low_bits, 2 * (kGroup % 4)), _mm256_set1_epi8(3));
    u->q[kGroup] = _mm256_or_si256(low, bit_to_4<kGroup>(high_bits));
  }

  [[gnu::always_inline]] static void unpack(const uint8_t* block, Unpacked* u) {
    u->d = load_fp16(block + offsetof(BlockQ3_K, d));
    const __m128i scales8 = unpack_scales_q3_k(block + offsetof(BlockQ3_K, scales));
    spread_scales_16(scales8, u->scales);
    u->scales16 = _mm256_cvtepi8_epi16(scales8);
    const __m256i hmask = load_256(block + offsetof(BlockQ3_K, hmask));
    const __m256i qs0 = load_256(block + offsetof(BlockQ3_K, qs));
    const __m256i qs1 = load_256(block + offsetof(BlockQ3_K, qs) + 32);
    unpack_group<0>(qs0, hmask, u);
    unpack_group<1>(qs0, hmask, u);
    unpack_group<2>(qs0, hmask, u);
    unpack_group<3>(qs0, hmask, u);
    unpack_group<4>(qs1, hmask, u);
    unpack_group<5>(qs1, hmask, u);
    unpack_group<6>(qs1, hmask, u);
    unpack_group<7>(qs1, hmask, u);
  }

  [[gnu::always_inline]] static __m256i group_dot(const Unpacked& u, int g, __m256i y) {
    return _mm256_madd_epi16(_mm256_maddubs_epi16(u.q[g], y), u.scales[g]);
  }

  [[gnu::always_inline]] static __m256 finish(__m256 acc, const Unpacked& u, __m256i sums, const uint8_t* act) {
    const float ad = q8k_scale(act);
    const __m256i offsets = _mm256_madd_epi16(q8k_bsums(act), u.scales16);
    const __m256i total = _mm256_sub_epi32(sums, _mm256_slli_epi32(offsets, 2));
    return _mm256_fmadd_ps(_mm256_set1_ps(u.d * ad), _mm256_cvtepi32_ps(total), acc);
  }
};

}  // namespace

float vec_dot_q3_k_avx2(int64_t n, const void* w, const void* a) { return superblock_vec_dot<Q3K>(n, w, a); }

}  // namespace cellserve::engine::kernels::x86
