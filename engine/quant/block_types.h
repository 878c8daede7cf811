// The on-disk block of every quantized GGUF type we read, byte-exact with llama.cpp's
// ggml/src/ggml-common.h (same field order, same sizes, no padding).
//
// A quantized row of n values is n / kBlockSize consecutive blocks. Half-precision fields are
// IEEE fp16 bit patterns (ggml_half) stored little-endian; convert with base/half.h.
//
// Alignment: a block's natural alignment is 2 (4 for BlockQ8_K), but rows inside a tensor are
// only guaranteed to start at multiples of the block size in bytes. The reference
// (de)quantizers never dereference a block in place: they memcpy each block into a local
// object, so callers may pass buffers of any alignment.
//
// Each struct's size is static_asserted against the ggml formula below, and checked against
// ggml_type_size() in tests/engine/quant/block_layout_test.cpp (ggml_type_size is a runtime
// table, so the compiler cannot compare the two).
#pragma once

#include <cstddef>
#include <cstdint>

#include "engine/quant/ggml_type.h"

namespace cellserve::engine {

inline constexpr int kQK4_0 = 32;
inline constexpr int kQK4_1 = 32;
inline constexpr int kQK5_0 = 32;
inline constexpr int kQK5_1 = 32;
inline constexpr int kQK8_0 = 32;
inline constexpr int kQK8_1 = 32;
inline constexpr int kQK4_NL = 32;
inline constexpr int kQK_K = 256;       // super-block size of the k-quants and IQ4_XS
inline constexpr int kKScaleSize = 12;  // bytes of packed 6-bit scales/mins in Q4_K / Q5_K

// ---- Legacy quants: one fp16 scale per block of 32 -------------------------------------

// Q4_0: x = d * (q - 8), q in [0, 15]. qs[j] holds element j in its low nibble and element
// j + 16 in its high nibble.
struct BlockQ4_0 {
  uint16_t d;              // scale, fp16
  uint8_t qs[kQK4_0 / 2];  // nibbles
};
static_assert(sizeof(BlockQ4_0) == 2 + kQK4_0 / 2);

// Q4_1: x = d * q + m, q in [0, 15]; nibble order as Q4_0.
struct BlockQ4_1 {
  uint16_t d;              // scale, fp16
  uint16_t m;              // minimum (offset), fp16
  uint8_t qs[kQK4_1 / 2];  // nibbles
};
static_assert(sizeof(BlockQ4_1) == 2 * 2 + kQK4_1 / 2);

// Q5_0: x = d * (q - 16), q in [0, 31]. Low 4 bits in qs (as Q4_0); bit 4 of element j is
// bit j of the little-endian u32 qh.
struct BlockQ5_0 {
  uint16_t d;              // scale, fp16
  uint8_t qh[4];           // 5th bits, u32 little-endian
  uint8_t qs[kQK5_0 / 2];  // low nibbles
};
static_assert(sizeof(BlockQ5_0) == 2 + 4 + kQK5_0 / 2);

// Q5_1: x = d * q + m, q in [0, 31]; bits as Q5_0.
struct BlockQ5_1 {
  uint16_t d;              // scale, fp16
  uint16_t m;              // minimum, fp16
  uint8_t qh[4];           // 5th bits, u32 little-endian
  uint8_t qs[kQK5_1 / 2];  // low nibbles
};
static_assert(sizeof(BlockQ5_1) == 2 * 2 + 4 + kQK5_1 / 2);

// Q8_0: x = d * q, q in [-127, 127] (the quantizer never emits -128).
struct BlockQ8_0 {
  uint16_t d;         // scale, fp16
  int8_t qs[kQK8_0];  // quants, element order
};
static_assert(sizeof(BlockQ8_0) == 2 + kQK8_0);

// Q8_1: as Q8_0 plus s = d * sum(qs), used for activations in dot products with Q4_1/Q5_1.
struct BlockQ8_1 {
  uint16_t d;         // scale, fp16
  uint16_t s;         // d * sum(qs), fp16
  int8_t qs[kQK8_1];  // quants
};
static_assert(sizeof(BlockQ8_1) == 2 * 2 + kQK8_1);

// ---- K-quants: super-blocks of 256 with quantized per-sub-block scales ------------------

// Q2_K: 16 sub-blocks of 16; x = d * (scales[j] & 0xF) * q - dmin * (scales[j] >> 4),
// q in [0, 3]. In each 128-element half, qs byte l (0..31) holds elements l, l+32, l+64,
// l+96 in bit pairs 0-1, 2-3, 4-5, 6-7.
struct BlockQ2_K {
  uint8_t scales[kQK_K / 16];  // low nibble: scale, high nibble: min (4 bits each)
  uint8_t qs[kQK_K / 4];       // 2-bit quants
  uint16_t d;                  // super-block scale for the scales, fp16
  uint16_t dmin;               // super-block scale for the mins, fp16
};
static_assert(sizeof(BlockQ2_K) == 2 * 2 + kQK_K / 16 + kQK_K / 4);

// Q3_K: 16 sub-blocks of 16; x = d * (scale_j - 32) * (q - 4), q in [0, 7]. The low 2 bits of
// q are packed as in Q2_K; the high bit of element e is bit (e / 32) of hmask[e % 32].
// The 16 6-bit scales are packed into 12 bytes: scale j's low nibble is in scales[j % 8]
// (low nibble for j < 8, high nibble for j >= 8); its 2 high bits are bits 2*(j/4)..+1 of
// scales[8 + j % 4].
struct BlockQ3_K {
  uint8_t hmask[kQK_K / 8];  // high bits of the quants
  uint8_t qs[kQK_K / 4];     // low 2 bits of the quants
  uint8_t scales[12];        // 6-bit scales, packed as above
  uint16_t d;                // super-block scale, fp16
};
static_assert(sizeof(BlockQ3_K) == 2 + kQK_K / 4 + kQK_K / 8 + 12);

// Q4_K: 8 sub-blocks of 32; x = d * sc_j * q - dmin * m_j, q in [0, 15]. Six-bit sc/m packed
// in 12 bytes (get_scale_min_k4): for j < 4, sc = scales[j] & 63, m = scales[j+4] & 63; for
// j >= 4, sc = (scales[j+4] & 0xF) | (scales[j-4] >> 6) << 4, m = (scales[j+4] >> 4) |
// (scales[j] >> 6) << 4. Each 64-element chunk uses 32 bytes of qs: low nibbles are its first
// 32 elements, high nibbles the next 32.
struct BlockQ4_K {
  uint16_t d;                   // super-block scale for the scales, fp16
  uint16_t dmin;                // super-block scale for the mins, fp16
  uint8_t scales[kKScaleSize];  // 6-bit scales and mins
  uint8_t qs[kQK_K / 2];        // low 4 bits
};
static_assert(sizeof(BlockQ4_K) == 2 * 2 + kKScaleSize + kQK_K / 2);

// Q5_K: as Q4_K with q in [0, 31]; bit 4 of element 64*c + l (l < 32) is bit 2c of qh[l],
// of element 64*c + 32 + l it is bit 2c+1 of qh[l].
struct BlockQ5_K {
  uint16_t d;                   // super-block scale for the scales, fp16
  uint16_t dmin;                // super-block scale for the mins, fp16
  uint8_t scales[kKScaleSize];  // 6-bit scales and mins (as Q4_K)
  uint8_t qh[kQK_K / 8];        // high bits
  uint8_t qs[kQK_K / 2];        // low 4 bits
};
static_assert(sizeof(BlockQ5_K) == 2 * 2 + kKScaleSize + kQK_K / 2 + kQK_K / 8);

// Q6_K: 16 sub-blocks of 16; x = d * scales[j] * (q - 32), q in [0, 63]. In each 128-element
// half h, for l < 32: ql[64h + l] holds the low nibbles of elements l (low) and l+64 (high),
// ql[64h + 32 + l] of l+32 and l+96; qh[32h + l] holds the 2 high bits of l, l+32, l+64, l+96
// in bit pairs 0-1, 2-3, 4-5, 6-7.
struct BlockQ6_K {
  uint8_t ql[kQK_K / 2];      // low 4 bits
  uint8_t qh[kQK_K / 4];      // high 2 bits
  int8_t scales[kQK_K / 16];  // 8-bit signed sub-block scales
  uint16_t d;                 // super-block scale, fp16
};
static_assert(sizeof(BlockQ6_K) == 2 + kQK_K / 16 + 3 * kQK_K / 4);

// Q8_K: x = d * q with an fp32 scale; only used for activations in k-quant dot products.
struct BlockQ8_K {
  float d;                    // scale, fp32
  int8_t qs[kQK_K];           // quants
  int16_t bsums[kQK_K / 16];  // sum of each group of 16 quants
};
static_assert(sizeof(BlockQ8_K) == 4 + kQK_K + kQK_K / 16 * 2);

// ---- Non-linear 4-bit quants: a 16-entry codebook (kIq4nlValues in quant_internal.h) ----

// IQ4_NL: x = d * kvalues_iq4nl[q]; nibble order as Q4_0.
struct BlockIQ4_NL {
  uint16_t d;               // scale, fp16
  uint8_t qs[kQK4_NL / 2];  // codebook indices
};
static_assert(sizeof(BlockIQ4_NL) == 2 + kQK4_NL / 2);

// IQ4_XS: 8 sub-blocks of 32; x = d * (ls_j - 32) * kvalues_iq4nl[q]. The 6-bit ls_j is
// (scales_l[j/2] >> 4*(j%2)) & 0xF | ((scales_h >> 2j) & 3) << 4. Each sub-block's 16 bytes
// of qs are nibble-ordered as Q4_0.
struct BlockIQ4_XS {
  uint16_t d;                    // super-block scale, fp16
  uint16_t scales_h;             // high 2 bits of the 8 sub-block scales
  uint8_t scales_l[kQK_K / 64];  // low 4 bits of the 8 sub-block scales
  uint8_t qs[kQK_K / 2];         // codebook indices
};
static_assert(sizeof(BlockIQ4_XS) == 2 + 2 + kQK_K / 64 + kQK_K / 2);

// The block struct of each type, for generic code and tests: BlockOf<GgmlType::Q4_K>::type.
template <GgmlType T>
struct BlockOf;
template <>
struct BlockOf<GgmlType::Q4_0> {
  using type = BlockQ4_0;
};
template <>
struct BlockOf<GgmlType::Q4_1> {
  using type = BlockQ4_1;
};
template <>
struct BlockOf<GgmlType::Q5_0> {
  using type = BlockQ5_0;
};
template <>
struct BlockOf<GgmlType::Q5_1> {
  using type = BlockQ5_1;
};
template <>
struct BlockOf<GgmlType::Q8_0> {
  using type = BlockQ8_0;
};
template <>
struct BlockOf<GgmlType::Q8_1> {
  using type = BlockQ8_1;
};
template <>
struct BlockOf<GgmlType::Q2_K> {
  using type = BlockQ2_K;
};
template <>
struct BlockOf<GgmlType::Q3_K> {
  using type = BlockQ3_K;
};
template <>
struct BlockOf<GgmlType::Q4_K> {
  using type = BlockQ4_K;
};
template <>
struct BlockOf<GgmlType::Q5_K> {
  using type = BlockQ5_K;
};
template <>
struct BlockOf<GgmlType::Q6_K> {
  using type = BlockQ6_K;
};
template <>
struct BlockOf<GgmlType::Q8_K> {
  using type = BlockQ8_K;
};
template <>
struct BlockOf<GgmlType::IQ4_NL> {
  using type = BlockIQ4_NL;
};
template <>
struct BlockOf<GgmlType::IQ4_XS> {
  using type = BlockIQ4_XS;
};

}  // namespace cellserve::engine
