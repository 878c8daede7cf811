// The K-quant super-block routines shared by the baseline NEON and the SDOT kernels: Kinds (one
// per weight format), the per-chunk sums and dot_tile<Kind, R, C>, which serves both vec_dot
// (1 x 1) and the tiles. The two instruction sets differ only in how 16 int8 products are summed
// into four int32 lanes, so the including file defines that first, in this anonymous namespace:
//   int32x4_t dot16(int32x4_t acc, int8x16_t w, int8x16_t y);
// and includes this header once. Everything here has internal linkage (compiled once per
// instruction set, see docs/kernels.md on compile-flag hygiene).
//
// A Kind describes one weight format: load() reads a super-block's header (scales, d, dmin),
// unpack<G>() yields chunk G (elements 64G..64G+63) as four int8x16 vectors matching the four
// activation vectors, scales<G>() the chunk's sub-block scales as int32 lanes (see sum_chunk).
#pragma once

#include <arm_neon.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "engine/quant/block_types.h"

namespace cellserve::engine::kernels::arm {
namespace {

// The per-chunk helpers must inline into dot_tile so the tile keeps its sums in registers.
#define CS_KQ_INLINE [[gnu::always_inline]] inline

constexpr size_t kActQs = offsetof(BlockQ8_K, qs);
constexpr size_t kActBsums = offsetof(BlockQ8_K, bsums);

float load_f16(const uint8_t* p) {
  __fp16 h;
  memcpy(&h, p, sizeof(h));
  return static_cast<float>(h);
}

float load_f32(const uint8_t* p) {
  float f;
  memcpy(&f, p, sizeof(f));
  return f;
}

uint32_t load_u32(const uint8_t* p) {
  uint32_t v;
  memcpy(&v, p, sizeof(v));
  return v;
}

CS_KQ_INLINE int16x8_t load_s16x8(const uint8_t* p) { return vreinterpretq_s16_u8(vld1q_u8(p)); }
CS_KQ_INLINE int8x16_t as_s8(uint8x16_t v) { return vreinterpretq_s8_u8(v); }

// Σ mins[j] * (bsums[2j] + bsums[2j+1]) for the 8 sub-blocks of 32 of Q4_K / Q5_K.
CS_KQ_INLINE int32_t min_dot_32(int16x8_t mins, const uint8_t* act) {
  const int16x8_t pairs = vpaddq_s16(load_s16x8(act + kActBsums), load_s16x8(act + kActBsums + 16));
  return vaddvq_s32(vmlal_high_s16(vmull_s16(vget_low_s16(mins), vget_low_s16(pairs)), mins, pairs));
}

// Decodes the 12-byte 6-bit scales/mins of Q4_K / Q5_K into 8 scales and 8 mins.
CS_KQ_INLINE void decode_scale_min_k4(const uint8_t* s, int16x8_t* scales, int16x8_t* mins) {
  constexpr uint32_t kLow6 = 0x3f3f3f3f, kLow4 = 0x0f0f0f0f, kLow2 = 0x03030303;
  const uint32_t a = load_u32(s), b = load_u32(s + 4), c = load_u32(s + 8);
  uint32_t out[4];
  out[0] = a & kLow6;                                       // scales 0..3
  out[1] = (c & kLow4) | (((a >> 6) & kLow2) << 4);         // scales 4..7
  out[2] = b & kLow6;                                       // mins 0..3
  out[3] = ((c >> 4) & kLow4) | (((b >> 6) & kLow2) << 4);  // mins 4..7
  const uint8x16_t bytes =
      vreinterpretq_u8_u64(vcombine_u64(vcreate_u64(out[0] | static_cast<uint64_t>(out[1]) << 32),
                                        vcreate_u64(out[2] | static_cast<uint64_t>(out[3]) << 32)));
  *scales = vreinterpretq_s16_u16(vmovl_u8(vget_low_u8(bytes)));
  *mins = vreinterpretq_s16_u16(vmovl_high_u8(bytes));
}

// For kinds with sub-blocks of 32: chunk G holds sub-blocks 2G, 2G+1; lanes [s2G, s2G, s2G+1, s2G+1].
template <int G>
CS_KQ_INLINE int32x4_t pair_scales(int16x8_t scales) {
  const int16x8_t twice = G < 2 ? vzip1q_s16(scales, scales) : vzip2q_s16(scales, scales);
  return G % 2 == 0 ? vmovl_s16(vget_low_s16(twice)) : vmovl_high_s16(twice);
}

// For kinds with sub-blocks of 16: chunk G holds sub-blocks 4G..4G+3 (lo = 0..7, hi = 8..15).
template <int G>
CS_KQ_INLINE int32x4_t quad_scales(int16x8_t lo, int16x8_t hi) {
  const int16x8_t half = G < 2 ? lo : hi;
  return G % 2 == 0 ? vmovl_s16(vget_low_s16(half)) : vmovl_high_s16(half);
}

struct Q4K {
  static constexpr size_t kBytes = sizeof(BlockQ4_K);
  static constexpr bool kSub16 = false;
  static constexpr bool kMins = true;
  struct Row {
    const uint8_t* qs;
    int16x8_t scales, mins;
    float d, dmin;
  };
  CS_KQ_INLINE static Row load(const uint8_t* b) {
    Row r;
    r.qs = b + offsetof(BlockQ4_K, qs);
    decode_scale_min_k4(b + offsetof(BlockQ4_K, scales), &r.scales, &r.mins);
    r.d = load_f16(b + offsetof(BlockQ4_K, d));
    r.dmin = load_f16(b + offsetof(BlockQ4_K, dmin));
    return r;
  }
  template <int G>
  CS_KQ_INLINE static void unpack(const Row& r, int8x16_t w[4]) {
    const uint8x16_t q0 = vld1q_u8(r.qs + 32 * G), q1 = vld1q_u8(r.qs + 32 * G + 16);
    const uint8x16_t low4 = vdupq_n_u8(0xF);
    w[0] = as_s8(vandq_u8(q0, low4));
    w[1] = as_s8(vandq_u8(q1, low4));
    w[2] = as_s8(vshrq_n_u8(q0, 4));
    w[3] = as_s8(vshrq_n_u8(q1, 4));
  }
  template <int G>
  CS_KQ_INLINE static int32x4_t scales(const Row& r) {
    return pair_scales<G>(r.scales);
  }
  CS_KQ_INLINE static int32_t min_dot(const Row& r, const uint8_t* act) { return min_dot_32(r.mins, act); }
};

struct Q5K {
  static constexpr size_t kBytes = sizeof(BlockQ5_K);
  static constexpr bool kSub16 = false;
  static constexpr bool kMins = true;
  struct Row {
    const uint8_t* qs;
    uint8x16_t qh0, qh1;
    int16x8_t scales, mins;
    float d, dmin;
  };
  CS_KQ_INLINE static Row load(const uint8_t* b) {
    Row r;
    r.qs = b + offsetof(BlockQ5_K, qs);
    r.qh0 = vld1q_u8(b + offsetof(BlockQ5_K, qh));
    r.qh1 = vld1q_u8(b + offsetof(BlockQ5_K, qh) + 16);
    decode_scale_min_k4(b + offsetof(BlockQ5_K, scales), &r.scales, &r.mins);
    r.d = load_f16(b + offsetof(BlockQ5_K, d));
    r.dmin = load_f16(b + offsetof(BlockQ5_K, dmin));
    return r;
  }
  // 16 where bit `bit` of qh is set, else 0.
  CS_KQ_INLINE static uint8x16_t fifth_bit(uint8x16_t qh, int bit) {
    return vandq_u8(vtstq_u8(qh, vdupq_n_u8(static_cast<uint8_t>(1u << bit))), vdupq_n_u8(16));
  }
  template <int G>
  CS_KQ_INLINE static void unpack(const Row& r, int8x16_t w[4]) {
    const uint8x16_t q0 = vld1q_u8(r.qs + 32 * G), q1 = vld1q_u8(r.qs + 32 * G + 16);
    const uint8x16_t low4 = vdupq_n_u8(0xF);
    w[0] = as_s8(vorrq_u8(vandq_u8(q0, low4), fifth_bit(r.qh0, 2 * G)));
    w[1] = as_s8(vorrq_u8(vandq_u8(q1, low4), fifth_bit(r.qh1, 2 * G)));
    w[2] = as_s8(vorrq_u8(vshrq_n_u8(q0, 4), fifth_bit(r.qh0, 2 * G + 1)));
    w[3] = as_s8(vorrq_u8(vshrq_n_u8(q1, 4), fifth_bit(r.qh1, 2 * G + 1)));
  }
  template <int G>
  CS_KQ_INLINE static int32x4_t scales(const Row& r) {
    return pair_scales<G>(r.scales);
  }
  CS_KQ_INLINE static int32_t min_dot(const Row& r, const uint8_t* act) { return min_dot_32(r.mins, act); }
};

struct Q6K {
  static constexpr size_t kBytes = sizeof(BlockQ6_K);
  static constexpr bool kSub16 = true;
  static constexpr bool kMins = false;
  struct Row {
    const uint8_t* ql;
    const uint8_t* qh;
    int16x8_t scales_lo, scales_hi;
    float d, dmin;
  };
  CS_KQ_INLINE static Row load(const uint8_t* b) {
    Row r;
    r.ql = b + offsetof(BlockQ6_K, ql);
    r.qh = b + offsetof(BlockQ6_K, qh);
    const int8x16_t sc = vreinterpretq_s8_u8(vld1q_u8(b + offsetof(BlockQ6_K, scales)));
    r.scales_lo = vmovl_s8(vget_low_s8(sc));
    r.scales_hi = vmovl_high_s8(sc);
    r.d = load_f16(b + offsetof(BlockQ6_K, d));
    r.dmin = 0.0f;
    return r;
  }
  // Chunk G is quarters 2(G%2) and 2(G%2)+1 of half G/2: even G takes the low nibbles of ql with
  // qh bit pairs 0-1 / 2-3, odd G the high nibbles with bit pairs 4-5 / 6-7.
  template <int G>
  CS_KQ_INLINE static void unpack(const Row& r, int8x16_t w[4]) {
    const uint8_t* ql = r.ql + 64 * (G / 2);
    const uint8_t* qhp = r.qh + 32 * (G / 2);
    const uint8x16_t a0 = vld1q_u8(ql), a1 = vld1q_u8(ql + 16), b0 = vld1q_u8(ql + 32), b1 = vld1q_u8(ql + 48);
    const uint8x16_t h0 = vld1q_u8(qhp), h1 = vld1q_u8(qhp + 16);
    const uint8x16_t low4 = vdupq_n_u8(0xF), bits45 = vdupq_n_u8(0x30);
    uint8x16_t u[4];
    if constexpr (G % 2 == 0) {
      u[0] = vorrq_u8(vandq_u8(a0, low4), vandq_u8(vshlq_n_u8(h0, 4), bits45));
      u[1] = vorrq_u8(vandq_u8(a1, low4), vandq_u8(vshlq_n_u8(h1, 4), bits45));
      u[2] = vorrq_u8(vandq_u8(b0, low4), vandq_u8(vshlq_n_u8(h0, 2), bits45));
      u[3] = vorrq_u8(vandq_u8(b1, low4), vandq_u8(vshlq_n_u8(h1, 2), bits45));
    } else {
      u[0] = vorrq_u8(vshrq_n_u8(a0, 4), vandq_u8(h0, bits45));
      u[1] = vorrq_u8(vshrq_n_u8(a1, 4), vandq_u8(h1, bits45));
      u[2] = vorrq_u8(vshrq_n_u8(b0, 4), vandq_u8(vshrq_n_u8(h0, 2), bits45));
      u[3] = vorrq_u8(vshrq_n_u8(b1, 4), vandq_u8(vshrq_n_u8(h1, 2), bits45));
    }
    const int8x16_t offset = vdupq_n_s8(32);
#pragma GCC unroll 8
    for (int k = 0; k < 4; ++k) w[k] = vsubq_s8(as_s8(u[k]), offset);
  }
  template <int G>
  CS_KQ_INLINE static int32x4_t scales(const Row& r) {
    return quad_scales<G>(r.scales_lo, r.scales_hi);
  }
  CS_KQ_INLINE static int32_t min_dot(const Row&, const uint8_t*) { return 0; }
};

// Q2_K and Q3_K share the 2-bit layout: chunk G is bit pairs 2(G%2) and 2(G%2)+1 of qs half G/2.
template <int G>
CS_KQ_INLINE void unpack_2bit(const uint8_t* qs, uint8x16_t u[4]) {
  const uint8x16_t q0 = vld1q_u8(qs + 32 * (G / 2)), q1 = vld1q_u8(qs + 32 * (G / 2) + 16);
  const uint8x16_t three = vdupq_n_u8(3);
  constexpr int kShift = 4 * (G % 2);
  if constexpr (kShift == 0) {
    u[0] = vandq_u8(q0, three);
    u[1] = vandq_u8(q1, three);
  } else {
    u[0] = vandq_u8(vshrq_n_u8(q0, kShift), three);
    u[1] = vandq_u8(vshrq_n_u8(q1, kShift), three);
  }
  u[2] = vandq_u8(vshrq_n_u8(q0, kShift + 2), three);
  u[3] = vandq_u8(vshrq_n_u8(q1, kShift + 2), three);
}

struct Q2K {
  static constexpr size_t kBytes = sizeof(BlockQ2_K);
  static constexpr bool kSub16 = true;
  static constexpr bool kMins = true;
  struct Row {
    const uint8_t* qs;
    int16x8_t scales_lo, scales_hi, mins_lo, mins_hi;
    float d, dmin;
  };
  CS_KQ_INLINE static Row load(const uint8_t* b) {
    Row r;
    r.qs = b + offsetof(BlockQ2_K, qs);
    const uint8x16_t sc = vld1q_u8(b + offsetof(BlockQ2_K, scales));
    const uint8x16_t scales = vandq_u8(sc, vdupq_n_u8(0xF)), mins = vshrq_n_u8(sc, 4);
    r.scales_lo = vreinterpretq_s16_u16(vmovl_u8(vget_low_u8(scales)));
    r.scales_hi = vreinterpretq_s16_u16(vmovl_high_u8(scales));
    r.mins_lo = vreinterpretq_s16_u16(vmovl_u8(vget_low_u8(mins)));
    r.mins_hi = vreinterpretq_s16_u16(vmovl_high_u8(mins));
    r.d = load_f16(b + offsetof(BlockQ2_K, d));
    r.dmin = load_f16(b + offsetof(BlockQ2_K, dmin));
    return r;
  }
  template <int G>
  CS_KQ_INLINE static void unpack(const Row& r, int8x16_t w[4]) {
    uint8x16_t u[4];
    unpack_2bit<G>(r.qs, u);
#pragma GCC unroll 8
    for (int k = 0; k < 4; ++k) w[k] = as_s8(u[k]);
  }
  template <int G>
  CS_KQ_INLINE static int32x4_t scales(const Row& r) {
    return quad_scales<G>(r.scales_lo, r.scales_hi);
  }
  CS_KQ_INLINE static int32_t min_dot(const Row& r, const uint8_t* act) {
    const int16x8_t b0 = load_s16x8(act + kActBsums), b1 = load_s16x8(act + kActBsums + 16);
    int32x4_t s = vmull_s16(vget_low_s16(r.mins_lo), vget_low_s16(b0));
    s = vmlal_high_s16(s, r.mins_lo, b0);
    s = vmlal_s16(s, vget_low_s16(r.mins_hi), vget_low_s16(b1));
    s = vmlal_high_s16(s, r.mins_hi, b1);
    return vaddvq_s32(s);
  }
};

struct Q3K {
  static constexpr size_t kBytes = sizeof(BlockQ3_K);
  static constexpr bool kSub16 = true;
  static constexpr bool kMins = false;
  struct Row {
    const uint8_t* qs;
    uint8x16_t hmask0, hmask1;
    int16x8_t scales_lo, scales_hi;
    float d, dmin;
  };
  // Scale j = (low nibble | 2 high bits << 4) - 32; see BlockQ3_K. Group g holds scales 4g..4g+3.
  CS_KQ_INLINE static Row load(const uint8_t* b) {
    Row r;
    r.qs = b + offsetof(BlockQ3_K, qs);
    r.hmask0 = vld1q_u8(b + offsetof(BlockQ3_K, hmask));
    r.hmask1 = vld1q_u8(b + offsetof(BlockQ3_K, hmask) + 16);
    const uint8_t* s = b + offsetof(BlockQ3_K, scales);
    constexpr uint32_t kLow4 = 0x0f0f0f0f, kLow2 = 0x03030303;
    const uint32_t a = load_u32(s), c = load_u32(s + 4), h = load_u32(s + 8);
    uint32_t out[4];
    out[0] = (a & kLow4) | ((h & kLow2) << 4);
    out[1] = (c & kLow4) | (((h >> 2) & kLow2) << 4);
    out[2] = ((a >> 4) & kLow4) | (((h >> 4) & kLow2) << 4);
    out[3] = ((c >> 4) & kLow4) | (((h >> 6) & kLow2) << 4);
    int8x16_t sc;
    memcpy(&sc, out, sizeof(sc));
    sc = vsubq_s8(sc, vdupq_n_s8(32));
    r.scales_lo = vmovl_s8(vget_low_s8(sc));
    r.scales_hi = vmovl_high_s8(sc);
    r.d = load_f16(b + offsetof(BlockQ3_K, d));
    r.dmin = 0.0f;
    return r;
  }
  // Element e's high bit is bit e/32 of hmask[e % 32]; when it is clear the quant is low - 4.
  template <int G>
  CS_KQ_INLINE static void unpack(const Row& r, int8x16_t w[4]) {
    uint8x16_t u[4];
    unpack_2bit<G>(r.qs, u);
    const uint8x16_t four = vdupq_n_u8(4);
    const uint8x16_t bit_a = vdupq_n_u8(static_cast<uint8_t>(1u << (2 * G)));
    const uint8x16_t bit_b = vdupq_n_u8(static_cast<uint8_t>(1u << (2 * G + 1)));
    w[0] = as_s8(vsubq_u8(u[0], vbicq_u8(four, vtstq_u8(r.hmask0, bit_a))));
    w[1] = as_s8(vsubq_u8(u[1], vbicq_u8(four, vtstq_u8(r.hmask1, bit_a))));
    w[2] = as_s8(vsubq_u8(u[2], vbicq_u8(four, vtstq_u8(r.hmask0, bit_b))));
    w[3] = as_s8(vsubq_u8(u[3], vbicq_u8(four, vtstq_u8(r.hmask1, bit_b))));
  }
  template <int G>
  CS_KQ_INLINE static int32x4_t scales(const Row& r) {
    return quad_scales<G>(r.scales_lo, r.scales_hi);
  }
  CS_KQ_INLINE static int32_t min_dot(const Row&, const uint8_t*) { return 0; }
};

struct IQ4XS {
  static constexpr size_t kBytes = sizeof(BlockIQ4_XS);
  static constexpr bool kSub16 = false;
  static constexpr bool kMins = false;
  struct Row {
    const uint8_t* qs;
    int16x8_t scales;
    float d, dmin;
  };
  CS_KQ_INLINE static Row load(const uint8_t* b) {
    Row r;
    r.qs = b + offsetof(BlockIQ4_XS, qs);
    uint16_t high;
    memcpy(&high, b + offsetof(BlockIQ4_XS, scales_h), sizeof(high));
    const uint8_t* low = b + offsetof(BlockIQ4_XS, scales_l);
    int16_t sc[8];
    for (int s = 0; s < 8; ++s)
      sc[s] = static_cast<int16_t>((((low[s / 2] >> (4 * (s % 2))) & 0xF) | ((high >> (2 * s)) & 3) << 4) - 32);
    r.scales = vld1q_s16(sc);
    r.d = load_f16(b + offsetof(BlockIQ4_XS, d));
    r.dmin = 0.0f;
    return r;
  }
  // Sub-block s's 16 bytes hold elements 32s..32s+15 in low nibbles and 32s+16.. in high nibbles.
  template <int G>
  CS_KQ_INLINE static void unpack(const Row& r, int8x16_t w[4]) {
    static const int8_t kValues[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};
    const int8x16_t values = vld1q_s8(kValues);
    const uint8x16_t q0 = vld1q_u8(r.qs + 32 * G), q1 = vld1q_u8(r.qs + 32 * G + 16);
    const uint8x16_t low4 = vdupq_n_u8(0xF);
    w[0] = vqtbl1q_s8(values, vandq_u8(q0, low4));
    w[1] = vqtbl1q_s8(values, vshrq_n_u8(q0, 4));
    w[2] = vqtbl1q_s8(values, vandq_u8(q1, low4));
    w[3] = vqtbl1q_s8(values, vshrq_n_u8(q1, 4));
  }
  template <int G>
  CS_KQ_INLINE static int32x4_t scales(const Row& r) {
    return pair_scales<G>(r.scales);
  }
  CS_KQ_INLINE static int32_t min_dot(const Row&, const uint8_t*) { return 0; }
};

// Keeps the compiler from hoisting the next chunk's loads above this one's arithmetic: in a tile
// of several rows that raises register pressure until the accumulators spill.
CS_KQ_INLINE void chunk_barrier() { __asm__ __volatile__("" ::: "memory"); }

// The chunk's products, reduced to lanes that line up with Kind::scales<G>().
template <class Kind>
CS_KQ_INLINE int32x4_t sum_chunk(const int8x16_t w[4], const int8x16_t y[4]) {
  const int32x4_t zero = vdupq_n_s32(0);
  if constexpr (Kind::kSub16) {
    const int32x4_t p01 = vpaddq_s32(dot16(zero, w[0], y[0]), dot16(zero, w[1], y[1]));
    const int32x4_t p23 = vpaddq_s32(dot16(zero, w[2], y[2]), dot16(zero, w[3], y[3]));
    return vpaddq_s32(p01, p23);
  } else {
    return vpaddq_s32(dot16(dot16(zero, w[0], y[0]), w[1], y[1]), dot16(dot16(zero, w[2], y[2]), w[3], y[3]));
  }
}

template <class Kind, int R, int C, int G>
CS_KQ_INLINE void accumulate_chunk(const typename Kind::Row (&rows)[R], const uint8_t* const (&act)[C],
                                   int32x4_t (&isum)[R][C]) {
  int8x16_t w[R][4];
  int32x4_t scales[R];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
    Kind::template unpack<G>(rows[r], w[r]);
    scales[r] = Kind::template scales<G>(rows[r]);
  }
#pragma GCC unroll 8
  for (int c = 0; c < C; ++c) {
    const uint8_t* q = act[c] + kActQs + 64 * G;
    const int8x16_t y[4] = {
        vld1q_s8(reinterpret_cast<const int8_t*>(q)), vld1q_s8(reinterpret_cast<const int8_t*>(q + 16)),
        vld1q_s8(reinterpret_cast<const int8_t*>(q + 32)), vld1q_s8(reinterpret_cast<const int8_t*>(q + 48))};
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) isum[r][c] = vmlaq_s32(isum[r][c], sum_chunk<Kind>(w[r], y), scales[r]);
  }
}

// y[c * y_stride + r] = w_r · a_c for R weight rows and C activation rows. Per super-block and
// pair: acc = fma(d_w * d_a, isum, acc), then (with mins) acc = fma(-(dmin_w * d_a), msum, acc).
template <class Kind, int R, int C>
void dot_tile(int64_t n, const uint8_t* w, size_t w_stride, const uint8_t* a, size_t a_stride, float* y,
              int64_t y_stride) {
  float acc[R][C] = {};
  const int64_t blocks = n / kQK_K;
  for (int64_t i = 0; i < blocks; ++i) {
    typename Kind::Row rows[R];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) rows[r] = Kind::load(w + r * w_stride + i * Kind::kBytes);
    const uint8_t* act[C];
#pragma GCC unroll 8
    for (int c = 0; c < C; ++c) act[c] = a + c * a_stride + i * sizeof(BlockQ8_K);
    // The mins' sums first, so that the mins need no registers during the chunks.
    int32_t msum[R][C];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 8
      for (int c = 0; c < C; ++c) msum[r][c] = Kind::kMins ? Kind::min_dot(rows[r], act[c]) : 0;
    int32x4_t isum[R][C];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 8
      for (int c = 0; c < C; ++c) isum[r][c] = vdupq_n_s32(0);
    accumulate_chunk<Kind, R, C, 0>(rows, act, isum);
    chunk_barrier();
    accumulate_chunk<Kind, R, C, 1>(rows, act, isum);
    chunk_barrier();
    accumulate_chunk<Kind, R, C, 2>(rows, act, isum);
    chunk_barrier();
    accumulate_chunk<Kind, R, C, 3>(rows, act, isum);
#pragma GCC unroll 8
    for (int c = 0; c < C; ++c) {
      const float da = load_f32(act[c]);
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r) {
        float s = __builtin_fmaf(rows[r].d * da, static_cast<float>(vaddvq_s32(isum[r][c])), acc[r][c]);
        if constexpr (Kind::kMins) s = __builtin_fmaf(-(rows[r].dmin * da), static_cast<float>(msum[r][c]), s);
        acc[r][c] = s;
      }
    }
  }
#pragma GCC unroll 8
  for (int c = 0; c < C; ++c)
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) y[c * y_stride + r] = acc[r][c];
}

template <class Kind>
float vec_dot(int64_t n, const void* w, const void* a) {
  float y;
  dot_tile<Kind, 1, 1>(n, static_cast<const uint8_t*>(w), 0, static_cast<const uint8_t*>(a), 0, &y, 1);
  return y;
}

#undef CS_KQ_INLINE

}  // namespace
}  // namespace cellserve::engine::kernels::arm
