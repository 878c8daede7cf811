// Helpers shared by the aarch64 legacy-family kernels (neon/, dotprod/, i8mm/): unaligned loads of
// block fields and the unpacking of 4- and 5-bit quants to int8 lanes. Every function is static,
// so each file gets its own copy compiled with that file's flags (nothing leaks across ISAs).
#pragma once

#include <arm_neon.h>

#include <cstdint>
#include <cstring>

#include "engine/quant/block_types.h"

namespace cellserve::engine::kernels::arm {

// Rows are only byte aligned: every scalar field is read with memcpy.
static inline uint16_t load_u16(const void* p) {
  uint16_t v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}

// fp16 -> fp32 with the base-architecture FCVT (exact, like base/half.h).
static inline float half_to_float(uint16_t h) {
  __fp16 f;
  std::memcpy(&f, &h, sizeof(f));
  return static_cast<float>(f);
}

// The 32 quants of a nibble block as two vectors: elements 0..15 (low nibbles) and 16..31.
struct Nibbles {
  uint8x16_t lo;
  uint8x16_t hi;
};

static inline Nibbles split_nibbles(const uint8_t* qs) {
  const uint8x16_t v = vld1q_u8(qs);
  return {vandq_u8(v, vdupq_n_u8(0x0F)), vshrq_n_u8(v, 4)};
}

// Q4_0: q - 8 as int8.
static inline int8x16x2_t unpack_q4_0(const uint8_t* qs) {
  const Nibbles n = split_nibbles(qs);
  const int8x16_t eight = vdupq_n_s8(8);
  return {{vsubq_s8(vreinterpretq_s8_u8(n.lo), eight), vsubq_s8(vreinterpretq_s8_u8(n.hi), eight)}};
}

// Q4_1: q as int8 (the minimum is applied through the activation block sum).
static inline int8x16x2_t unpack_q4_1(const uint8_t* qs) {
  const Nibbles n = split_nibbles(qs);
  return {{vreinterpretq_s8_u8(n.lo), vreinterpretq_s8_u8(n.hi)}};
}

// IQ4_NL: codebook values for each nibble.
static inline int8x16x2_t unpack_iq4_nl(const uint8_t* qs, int8x16_t codebook) {
  const Nibbles n = split_nibbles(qs);
  return {{vqtbl1q_s8(codebook, n.lo), vqtbl1q_s8(codebook, n.hi)}};
}

static inline int8x16_t iq4_nl_codebook() {
  static const int8_t kValues[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};
  return vld1q_s8(kValues);
}

// The fifth bits of a Q5 block as 0x10 per element: bit j of the little-endian u32 qh belongs to
// element j. Each byte lane selects its qh byte with a table lookup and tests its bit.
static inline uint8x16x2_t fifth_bits(const uint8_t* qh_bytes) {
  uint32_t qh;
  std::memcpy(&qh, qh_bytes, sizeof(qh));
  const uint8x16_t bytes = vreinterpretq_u8_u32(vdupq_n_u32(qh));
  static const uint8_t kLoIndex[16] = {0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1};
  static const uint8_t kBit[16] = {1, 2, 4, 8, 16, 32, 64, 128, 1, 2, 4, 8, 16, 32, 64, 128};
  const uint8x16_t lo_index = vld1q_u8(kLoIndex);
  const uint8x16_t bit = vld1q_u8(kBit);
  const uint8x16_t lo_bytes = vqtbl1q_u8(bytes, lo_index);
  const uint8x16_t hi_bytes = vqtbl1q_u8(bytes, vaddq_u8(lo_index, vdupq_n_u8(2)));
  const uint8x16_t sixteen = vdupq_n_u8(0x10);
  return {{vandq_u8(vtstq_u8(lo_bytes, bit), sixteen), vandq_u8(vtstq_u8(hi_bytes, bit), sixteen)}};
}

// Q5_0: (low nibble | fifth bit) - 16 as int8.
static inline int8x16x2_t unpack_q5_0(const uint8_t* qs, const uint8_t* qh) {
  const Nibbles n = split_nibbles(qs);
  const uint8x16x2_t b = fifth_bits(qh);
  const int8x16_t sixteen = vdupq_n_s8(16);
  return {{vsubq_s8(vreinterpretq_s8_u8(vorrq_u8(n.lo, b.val[0])), sixteen),
           vsubq_s8(vreinterpretq_s8_u8(vorrq_u8(n.hi, b.val[1])), sixteen)}};
}

// Q5_1: low nibble | fifth bit as int8.
static inline int8x16x2_t unpack_q5_1(const uint8_t* qs, const uint8_t* qh) {
  const Nibbles n = split_nibbles(qs);
  const uint8x16x2_t b = fifth_bits(qh);
  return {{vreinterpretq_s8_u8(vorrq_u8(n.lo, b.val[0])), vreinterpretq_s8_u8(vorrq_u8(n.hi, b.val[1]))}};
}

// 32 int8 quants in element order.
static inline int8x16x2_t load_q8(const int8_t* qs) { return {{vld1q_s8(qs), vld1q_s8(qs + 16)}}; }

}  // namespace cellserve::engine::kernels::arm
