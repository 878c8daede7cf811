// Helpers shared by the AVX2 packed-group kernels (packed_legacy.cpp, packed_q4_k.cpp,
// packed_q6_k.cpp) and the VNNI ones (../packed_vnni_body.h), beside the lane helpers of lanes.h. AVX2-compiled files
// only; everything has internal linkage.
#pragma once

#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "engine/kernels/packed_cols.h"
#include "engine/kernels/x86/avx2/lanes.h"
#include "engine/quant/block_types.h"

namespace cellserve::engine::kernels::x86 {
namespace {

// Decode reads every weight once, from DRAM. Between a kernel's loads come many instructions of
// arithmetic, so the out-of-order window holds too few loads to cover DRAM's latency, and the
// hardware prefetchers alone did not keep up. So each kernel asks for the bytes kPrefetchAhead
// beyond those it is reading, one prefetch per cache line. Alternating runs on Zen 5 (2 threads,
// tg128), share of the weights' read rate without / with: qwen3-0.6b Q4_0 71.6 / 86.9 %, Q4_K_M
// 82.7 / 85.3 %, qwen35-0.8b Q4_0 71.9 / 78.5 %; with the AVX2 table, qwen3-0.6b Q4_0 72.7 / 88.2 %.
// 4 and 16 KiB ahead did less than 8. A plain read loop is not faster with prefetches, and
// neither is the Q8_0 kernel, whose arithmetic is light; it has none. x86 prefetches never fault,
// so the last ones may point past the weights (the address is formed as an integer).
constexpr uintptr_t kPrefetchAhead = 8192;
template <size_t Bytes>
inline void prefetch_ahead(const uint8_t* p) {
  const uintptr_t ahead = reinterpret_cast<uintptr_t>(p) + kPrefetchAhead;
#pragma GCC unroll 8
  for (size_t offset = 0; offset < Bytes; offset += 64) {
    _mm_prefetch(reinterpret_cast<const char*>(ahead + offset), _MM_HINT_T0);
  }
}

// Packed Q4_K group g (layout: reference/packed_q4_k.cpp) against one Q8_K activation block ab:
// each row's sum over its 8 sub-blocks of min * (the sub-block's sum of activation quants), the
// term that the mins take off. Pairs of 16-quant bsums make each 32-quant sub-block's sum.
inline __m256i q4_k_min_sums(const uint8_t* g, const uint8_t* ab) {
  int16_t bsums[16];
  std::memcpy(bsums, ab + offsetof(BlockQ8_K, bsums), sizeof(bsums));
  __m256i msum = _mm256_setzero_si256();
#pragma GCC unroll 4
  for (int p = 0; p < 4; ++p) {
    const __m256i mins = _mm256_cvtepu8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(g + 96 + 16 * p)));
    const int32_t s0 = bsums[4 * p] + bsums[4 * p + 1];
    const int32_t s1 = bsums[4 * p + 2] + bsums[4 * p + 3];
    const __m256i pair = _mm256_set1_epi32(
        static_cast<int32_t>((static_cast<uint32_t>(s0) & 0xFFFFu) | (static_cast<uint32_t>(s1) << 16)));
    msum = _mm256_add_epi32(msum, _mm256_madd_epi16(mins, pair));
  }
  return msum;
}

// One sub-block of 16 of a packed Q6_K group (two nibble vectors, one 2-bit vector at sub) as the
// four unit vectors of unsigned 6-bit quants (0..63), 4 of each row's quants per lane in each.
inline void q6_k_unit_quants(const uint8_t* sub, __m256i& q0, __m256i& q1, __m256i& q2, __m256i& q3) {
  const __m256i low4 = _mm256_set1_epi8(0x0F);
  const __m256i top2 = _mm256_set1_epi8(0x30);
  const __m256i n0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(sub));
  const __m256i n1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(sub + 32));
  const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(sub + 64));
  q0 = _mm256_or_si256(_mm256_and_si256(n0, low4), _mm256_and_si256(_mm256_slli_epi16(h, 4), top2));
  q1 = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(n0, 4), low4),
                       _mm256_and_si256(_mm256_slli_epi16(h, 2), top2));
  q2 = _mm256_or_si256(_mm256_and_si256(n1, low4), _mm256_and_si256(h, top2));
  q3 = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(n1, 4), low4),
                       _mm256_and_si256(_mm256_srli_epi16(h, 2), top2));
}

// Packed Q6_K group g (layout: reference/packed_q6_k.cpp) against one Q8_K activation block ab:
// each row's sum over its 16 sub-blocks of scale * (the sub-block's sum of activation quants);
// 32 times it is what the quants' -32 offset takes off.
inline __m256i q6_k_scaled_sums(const uint8_t* g, const uint8_t* ab) {
  __m256i sums = _mm256_setzero_si256();
#pragma GCC unroll 8
  for (int p = 0; p < 8; ++p) {
    const __m256i scales = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(g + 16 + 16 * p)));
    int32_t pair;  // bsums[2p], bsums[2p + 1] as two int16
    std::memcpy(&pair, ab + offsetof(BlockQ8_K, bsums) + 4 * p, sizeof(pair));
    sums = _mm256_add_epi32(sums, _mm256_madd_epi16(scales, _mm256_set1_epi32(pair)));
  }
  return sums;
}

}  // namespace
}  // namespace cellserve::engine::kernels::x86
