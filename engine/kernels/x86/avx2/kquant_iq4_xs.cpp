// IQ4_XS x Q8_K for AVX2: 8 sub-blocks of 32, 4-bit codebook indices looked up with pshufb into
// signed int8 values. maddubs wants an unsigned operand, so each product is formed as
// |w| * (y with w's sign), which keeps every int16 pair sum below 2 * 127 * 128.
#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "engine/kernels/x86/avx2/kquant_kernels.h"
#include "engine/kernels/x86/avx2/kquant_superblock.h"
#include "engine/quant/block_types.h"

namespace cellserve::engine::kernels::x86 {
namespace {

struct IQ4XS {
  using Block = BlockIQ4_XS;
  struct Unpacked {
    __m256i q[8];  // sub-block s's 32 codebook values, signed
    alignas(32) int32_t scale_pairs[8];
    float d;
  };

  [[gnu::always_inline]] static void unpack(const uint8_t* block, Unpacked* u) {
    u->d = load_fp16(block + offsetof(BlockIQ4_XS, d));
    uint16_t scales_h;
    std::memcpy(&scales_h, block + offsetof(BlockIQ4_XS, scales_h), sizeof(scales_h));
    const uint8_t* scales_l = block + offsetof(BlockIQ4_XS, scales_l);
    for (int s = 0; s < 8; ++s) {
      const int low = (scales_l[s / 2] >> (4 * (s % 2))) & 0xF;
      const int high = (scales_h >> (2 * s)) & 3;
      const auto scale = static_cast<uint16_t>((low | high << 4) - 32);
      u->scale_pairs[s] = static_cast<int32_t>(scale * 0x10001u);
    }
    // The codebook (ggml's kvalues_iq4nl), in both 128-bit lanes for pshufb.
    const __m256i codebook = _mm256_broadcastsi128_si256(
        _mm_setr_epi8(-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113));
    // A sub-block's 16 bytes hold elements 0..15 in their low nibbles and 16..31 in their high
    // ones: duplicate them to both lanes and shift the upper lane's copy by 4.
    const __m256i lane_shift = _mm256_set_epi64x(4, 4, 0, 0);
    const __m256i low4 = _mm256_set1_epi8(0x0F);
    const uint8_t* qs = block + offsetof(BlockIQ4_XS, qs);
#pragma GCC unroll 8
    for (int s = 0; s < 8; ++s) {
      const __m256i both = _mm256_broadcastsi128_si256(load_128(qs + 16 * s));
      const __m256i index = _mm256_and_si256(_mm256_srlv_epi64(both, lane_shift), low4);
      u->q[s] = _mm256_shuffle_epi8(codebook, index);
    }
  }

  [[gnu::always_inline]] static __m256i group_dot(const Unpacked& u, int g, __m256i y) {
    const __m256i products = _mm256_maddubs_epi16(_mm256_sign_epi8(u.q[g], u.q[g]), _mm256_sign_epi8(y, u.q[g]));
    return _mm256_madd_epi16(products, _mm256_set1_epi32(u.scale_pairs[g]));
  }

  [[gnu::always_inline]] static __m256 finish(__m256 acc, const Unpacked& u, __m256i sums, const uint8_t* act) {
    return _mm256_fmadd_ps(_mm256_set1_ps(u.d * q8k_scale(act)), _mm256_cvtepi32_ps(sums), acc);
  }
};

}  // namespace

float vec_dot_iq4_xs_avx2(int64_t n, const void* w, const void* a) { return superblock_vec_dot<IQ4XS>(n, w, a); }

}  // namespace cellserve::engine::kernels::x86
