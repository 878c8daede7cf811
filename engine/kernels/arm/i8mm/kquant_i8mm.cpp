// Q4_K and Q6_K tiles with SMMLA. SMMLA multiplies a 2x8 int8 matrix by the transpose of
// another, so two weight rows and two activation rows, interleaved 8 bytes at a time, give the
// four sums of a 2 x 2 block at once. Per sub-block (32 elements in Q4_K, 16 in Q6_K) the block's
// sums are scaled by the two rows' sub-block scales; the integer totals per pair are therefore
// exactly those of the neon-dotprod vec_dot, and the float epilogue below repeats its operations
// (fused multiply-adds per super-block), so every value is bit-identical to that vec_dot.
#include <arm_neon.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "engine/kernels/arm/i8mm/kquant_i8mm.h"
#include "engine/quant/block_types.h"

namespace cellserve::engine::kernels::arm {
namespace {

// The per-sub-block helpers must inline so the 2 x 2 blocks' sums stay in registers.
#define CS_INLINE [[gnu::always_inline]] inline

constexpr size_t kActQs = offsetof(BlockQ8_K, qs);
constexpr size_t kActBsums = offsetof(BlockQ8_K, bsums);
constexpr int kRows = kI8mmKquantTileRows;
constexpr int kCols = kI8mmKquantTileCols;

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

int16x8_t load_s16x8(const uint8_t* p) { return vreinterpretq_s16_u8(vld1q_u8(p)); }
int8x16_t load_s8x16(const uint8_t* p) { return vreinterpretq_s8_u8(vld1q_u8(p)); }

// [a0..a7, b0..b7] and [a8..a15, b8..b15]: the layout SMMLA reads as two matrix rows.
CS_INLINE int8x16_t rows_low(int8x16_t a, int8x16_t b) {
  return vreinterpretq_s8_s64(vzip1q_s64(vreinterpretq_s64_s8(a), vreinterpretq_s64_s8(b)));
}
CS_INLINE int8x16_t rows_high(int8x16_t a, int8x16_t b) {
  return vreinterpretq_s8_s64(vzip2q_s64(vreinterpretq_s64_s8(a), vreinterpretq_s64_s8(b)));
}

// Σ mins[j] * (bsums[2j] + bsums[2j+1]) over the 8 sub-blocks of 32.
CS_INLINE int32_t min_dot_32(int16x8_t mins, const uint8_t* act) {
  const int16x8_t pairs = vpaddq_s16(load_s16x8(act + kActBsums), load_s16x8(act + kActBsums + 16));
  return vaddvq_s32(vmlal_high_s16(vmull_s16(vget_low_s16(mins), vget_low_s16(pairs)), mins, pairs));
}

struct Q4KRow {
  const uint8_t* qs;
  int16x8_t mins;
  int32_t scales[8];
  float d, dmin;
};

CS_INLINE Q4KRow load_q4k(const uint8_t* b) {
  constexpr uint32_t kLow6 = 0x3f3f3f3f, kLow4 = 0x0f0f0f0f, kLow2 = 0x03030303;
  const uint8_t* s = b + offsetof(BlockQ4_K, scales);
  const uint32_t x = load_u32(s), y = load_u32(s + 4), z = load_u32(s + 8);
  uint32_t out[4];
  out[0] = x & kLow6;                                       // scales 0..3
  out[1] = (z & kLow4) | (((x >> 6) & kLow2) << 4);         // scales 4..7
  out[2] = y & kLow6;                                       // mins 0..3
  out[3] = ((z >> 4) & kLow4) | (((y >> 6) & kLow2) << 4);  // mins 4..7
  const uint8x16_t bytes =
      vreinterpretq_u8_u64(vcombine_u64(vcreate_u64(out[0] | static_cast<uint64_t>(out[1]) << 32),
                                        vcreate_u64(out[2] | static_cast<uint64_t>(out[3]) << 32)));
  const int16x8_t scales = vreinterpretq_s16_u16(vmovl_u8(vget_low_u8(bytes)));
  Q4KRow r;
  r.qs = b + offsetof(BlockQ4_K, qs);
  r.mins = vreinterpretq_s16_u16(vmovl_high_u8(bytes));
  vst1q_s32(r.scales, vmovl_s16(vget_low_s16(scales)));
  vst1q_s32(r.scales + 4, vmovl_high_s16(scales));
  r.d = load_f16(b + offsetof(BlockQ4_K, d));
  r.dmin = load_f16(b + offsetof(BlockQ4_K, dmin));
  return r;
}

// Chunk `ch` (sub-blocks 2ch and 2ch+1) of two rows as SMMLA operands: w[0..3] cover sub-block
// 2ch (low nibbles), w[4..7] sub-block 2ch+1 (high nibbles). The packed bytes are interleaved
// before the nibbles are split, so both sub-blocks share one interleave.
CS_INLINE void interleave_chunk(const Q4KRow& top, const Q4KRow& bottom, int ch, int8x16_t w[8]) {
  const uint8_t* t = top.qs + 32 * ch;
  const uint8_t* b = bottom.qs + 32 * ch;
  const int8x16_t t0 = load_s8x16(t), t1 = load_s8x16(t + 16), b0 = load_s8x16(b), b1 = load_s8x16(b + 16);
  const int8x16_t packed[4] = {rows_low(t0, b0), rows_high(t0, b0), rows_low(t1, b1), rows_high(t1, b1)};
#pragma GCC unroll 8
  for (int k = 0; k < 4; ++k) {
    const uint8x16_t u = vreinterpretq_u8_s8(packed[k]);
    w[k] = vreinterpretq_s8_u8(vandq_u8(u, vdupq_n_u8(0xF)));
    w[4 + k] = vreinterpretq_s8_u8(vshrq_n_u8(u, 4));
  }
}

// [s_top[j], s_top[j], s_bottom[j], s_bottom[j]]: the scales of a 2 x 2 block's lanes.
CS_INLINE int32x4_t block_scales(const Q4KRow& top, const Q4KRow& bottom, int j) {
  return vcombine_s32(vld1_dup_s32(&top.scales[j]), vld1_dup_s32(&bottom.scales[j]));
}

// isum[p][q] lanes: (2p, 2q), (2p, 2q+1), (2p+1, 2q), (2p+1, 2q+1) as (weight row, activation row).
CS_INLINE void accumulate_chunk(const Q4KRow (&rows)[kRows], const uint8_t* const (&act)[kCols], int ch,
                                int32x4_t (&isum)[kRows / 2][kCols / 2]) {
  int8x16_t wm[kRows / 2][8];
  int32x4_t scale[kRows / 2][2];
#pragma GCC unroll 8
  for (int p = 0; p < kRows / 2; ++p) {
    interleave_chunk(rows[2 * p], rows[2 * p + 1], ch, wm[p]);
    scale[p][0] = block_scales(rows[2 * p], rows[2 * p + 1], 2 * ch);
    scale[p][1] = block_scales(rows[2 * p], rows[2 * p + 1], 2 * ch + 1);
  }
#pragma GCC unroll 8
  for (int q = 0; q < kCols / 2; ++q) {
    const uint8_t* left = act[2 * q] + kActQs + 64 * ch;
    const uint8_t* right = act[2 * q + 1] + kActQs + 64 * ch;
    int8x16_t am[8];
#pragma GCC unroll 8
    for (int k = 0; k < 4; ++k) {
      const int8x16_t l = load_s8x16(left + 16 * k), r = load_s8x16(right + 16 * k);
      am[2 * k] = rows_low(l, r);
      am[2 * k + 1] = rows_high(l, r);
    }
#pragma GCC unroll 8
    for (int p = 0; p < kRows / 2; ++p) {
#pragma GCC unroll 8
      for (int h = 0; h < 2; ++h) {
        int32x4_t block = vmmlaq_s32(vdupq_n_s32(0), wm[p][4 * h], am[4 * h]);
#pragma GCC unroll 8
        for (int k = 1; k < 4; ++k) block = vmmlaq_s32(block, wm[p][4 * h + k], am[4 * h + k]);
        isum[p][q] = vmlaq_s32(isum[p][q], block, scale[p][h]);
      }
    }
  }
}

// Q6_K: 16 sub-blocks of 16, so each sub-block is two SMMLA steps with its own scale.
struct Q6KRow {
  const uint8_t* ql;
  const uint8_t* qh;
  int32_t scales[16];
  float d;
};

CS_INLINE Q6KRow load_q6k(const uint8_t* b) {
  Q6KRow r;
  r.ql = b + offsetof(BlockQ6_K, ql);
  r.qh = b + offsetof(BlockQ6_K, qh);
  const int8x16_t sc = load_s8x16(b + offsetof(BlockQ6_K, scales));
  const int16x8_t lo = vmovl_s8(vget_low_s8(sc)), hi = vmovl_high_s8(sc);
  vst1q_s32(r.scales, vmovl_s16(vget_low_s16(lo)));
  vst1q_s32(r.scales + 4, vmovl_high_s16(lo));
  vst1q_s32(r.scales + 8, vmovl_s16(vget_low_s16(hi)));
  vst1q_s32(r.scales + 12, vmovl_high_s16(hi));
  r.d = load_f16(b + offsetof(BlockQ6_K, d));
  return r;
}

// Quarter Q of chunk 2h + Odd (32 elements: sub-blocks 4(2h+Odd)+2Q and +1) as two vectors of
// q - 32: even chunks take ql's low nibbles with qh bit pairs 0-1 (Q = 0) / 2-3 (Q = 1), odd
// chunks the high nibbles with bit pairs 4-5 / 6-7.
template <int Odd, int Q>
CS_INLINE void unpack_q6k(const Q6KRow& r, int h, int8x16_t w[2]) {
  const uint8_t* ql = r.ql + 64 * h + 32 * Q;
  const uint8_t* qhp = r.qh + 32 * h;
  const uint8x16_t low4 = vdupq_n_u8(0xF), bits45 = vdupq_n_u8(0x30);
#pragma GCC unroll 8
  for (int k = 0; k < 2; ++k) {
    const uint8x16_t l = vld1q_u8(ql + 16 * k), hb = vld1q_u8(qhp + 16 * k);
    uint8x16_t high;
    if constexpr (Odd == 0 && Q == 0) high = vshlq_n_u8(hb, 4);
    if constexpr (Odd == 0 && Q == 1) high = vshlq_n_u8(hb, 2);
    if constexpr (Odd == 1 && Q == 0) high = hb;
    if constexpr (Odd == 1 && Q == 1) high = vshrq_n_u8(hb, 2);
    const uint8x16_t low = Odd == 0 ? vandq_u8(l, low4) : vshrq_n_u8(l, 4);
    w[k] = vsubq_s8(vreinterpretq_s8_u8(vorrq_u8(low, vandq_u8(high, bits45))), vdupq_n_s8(32));
  }
}

template <int Odd, int Q>
CS_INLINE void accumulate_q6k_quarter(const Q6KRow (&rows)[kRows], const uint8_t* const (&act)[kCols], int h,
                                      int32x4_t (&isum)[kRows / 2][kCols / 2]) {
  const int offset = 64 * (2 * h + Odd) + 32 * Q;  // first element
  int8x16_t wm[kRows / 2][4];
#pragma GCC unroll 8
  for (int p = 0; p < kRows / 2; ++p) {
    int8x16_t top[2], bottom[2];
    unpack_q6k<Odd, Q>(rows[2 * p], h, top);
    unpack_q6k<Odd, Q>(rows[2 * p + 1], h, bottom);
#pragma GCC unroll 8
    for (int k = 0; k < 2; ++k) {
      wm[p][2 * k] = rows_low(top[k], bottom[k]);
      wm[p][2 * k + 1] = rows_high(top[k], bottom[k]);
    }
  }
#pragma GCC unroll 8
  for (int q = 0; q < kCols / 2; ++q) {
    const uint8_t* left = act[2 * q] + kActQs + offset;
    const uint8_t* right = act[2 * q + 1] + kActQs + offset;
    int8x16_t am[4];
#pragma GCC unroll 8
    for (int k = 0; k < 2; ++k) {
      const int8x16_t l = load_s8x16(left + 16 * k), r = load_s8x16(right + 16 * k);
      am[2 * k] = rows_low(l, r);
      am[2 * k + 1] = rows_high(l, r);
    }
#pragma GCC unroll 8
    for (int p = 0; p < kRows / 2; ++p) {
#pragma GCC unroll 8
      for (int k = 0; k < 2; ++k) {
        const int32x4_t block =
            vmmlaq_s32(vmmlaq_s32(vdupq_n_s32(0), wm[p][2 * k], am[2 * k]), wm[p][2 * k + 1], am[2 * k + 1]);
        const int j = offset / 16 + k;
        const int32x4_t scale =
            vcombine_s32(vld1_dup_s32(&rows[2 * p].scales[j]), vld1_dup_s32(&rows[2 * p + 1].scales[j]));
        isum[p][q] = vmlaq_s32(isum[p][q], block, scale);
      }
    }
  }
}

// Keeps the compiler from hoisting the next quarter's loads above this one's arithmetic, which
// raises register pressure until the accumulators spill.
CS_INLINE void step_barrier() { __asm__ __volatile__("" ::: "memory"); }

struct Q4K {
  using Row = Q4KRow;
  static constexpr size_t kBytes = sizeof(BlockQ4_K);
  static constexpr bool kMins = true;
  CS_INLINE static Row load(const uint8_t* b) { return load_q4k(b); }
  CS_INLINE static void accumulate(const Row (&rows)[kRows], const uint8_t* const (&act)[kCols],
                                   int32x4_t (&isum)[kRows / 2][kCols / 2]) {
#pragma GCC unroll 1
    for (int ch = 0; ch < 4; ++ch) accumulate_chunk(rows, act, ch, isum);
  }
  CS_INLINE static float dmin(const Row& r) { return r.dmin; }
  CS_INLINE static int32_t min_dot(const Row& r, const uint8_t* act) { return min_dot_32(r.mins, act); }
};

struct Q6K {
  using Row = Q6KRow;
  static constexpr size_t kBytes = sizeof(BlockQ6_K);
  static constexpr bool kMins = false;
  CS_INLINE static Row load(const uint8_t* b) { return load_q6k(b); }
  CS_INLINE static void accumulate(const Row (&rows)[kRows], const uint8_t* const (&act)[kCols],
                                   int32x4_t (&isum)[kRows / 2][kCols / 2]) {
#pragma GCC unroll 1
    for (int h = 0; h < 2; ++h) {
      accumulate_q6k_quarter<0, 0>(rows, act, h, isum);
      step_barrier();
      accumulate_q6k_quarter<0, 1>(rows, act, h, isum);
      step_barrier();
      accumulate_q6k_quarter<1, 0>(rows, act, h, isum);
      step_barrier();
      accumulate_q6k_quarter<1, 1>(rows, act, h, isum);
    }
  }
  CS_INLINE static float dmin(const Row&) { return 0.0f; }
  CS_INLINE static int32_t min_dot(const Row&, const uint8_t*) { return 0; }
};

int32_t lane_of(int32x4_t v, int lane) {
  int32_t lanes[4];
  vst1q_s32(lanes, v);
  return lanes[lane];
}

template <class Kind>
void dot_tile(int64_t n, const uint8_t* w, size_t w_stride, const uint8_t* a, size_t a_stride, float* y,
              int64_t y_stride) {
  float acc[kRows][kCols] = {};
  const int64_t blocks = n / kQK_K;
  for (int64_t i = 0; i < blocks; ++i) {
    typename Kind::Row rows[kRows];
#pragma GCC unroll 8
    for (int r = 0; r < kRows; ++r) rows[r] = Kind::load(w + r * w_stride + i * Kind::kBytes);
    const uint8_t* act[kCols];
#pragma GCC unroll 8
    for (int c = 0; c < kCols; ++c) act[c] = a + c * a_stride + i * sizeof(BlockQ8_K);
    int32x4_t isum[kRows / 2][kCols / 2];
#pragma GCC unroll 8
    for (int p = 0; p < kRows / 2; ++p)
#pragma GCC unroll 8
      for (int q = 0; q < kCols / 2; ++q) isum[p][q] = vdupq_n_s32(0);
    Kind::accumulate(rows, act, isum);
    // The same operations, in the same order, as the neon-dotprod vec_dot's per-super-block step.
#pragma GCC unroll 8
    for (int c = 0; c < kCols; ++c) {
      const float da = load_f32(act[c]);
#pragma GCC unroll 8
      for (int r = 0; r < kRows; ++r) {
        const int32_t total = lane_of(isum[r / 2][c / 2], 2 * (r % 2) + c % 2);
        float s = __builtin_fmaf(rows[r].d * da, static_cast<float>(total), acc[r][c]);
        if constexpr (Kind::kMins)
          s = __builtin_fmaf(-(Kind::dmin(rows[r]) * da), static_cast<float>(Kind::min_dot(rows[r], act[c])), s);
        acc[r][c] = s;
      }
    }
  }
#pragma GCC unroll 8
  for (int c = 0; c < kCols; ++c)
#pragma GCC unroll 8
    for (int r = 0; r < kRows; ++r) y[c * y_stride + r] = acc[r][c];
}

#undef CS_INLINE

}  // namespace

void tile_dot_q4_k_i8mm(int64_t n, const void* w, size_t w_stride, const void* a, size_t a_stride, float* y,
                        int64_t y_stride) {
  dot_tile<Q4K>(n, static_cast<const uint8_t*>(w), w_stride, static_cast<const uint8_t*>(a), a_stride, y, y_stride);
}

void tile_dot_q6_k_i8mm(int64_t n, const void* w, size_t w_stride, const void* a, size_t a_stride, float* y,
                        int64_t y_stride) {
  dot_tile<Q6K>(n, static_cast<const uint8_t*>(w), w_stride, static_cast<const uint8_t*>(a), a_stride, y, y_stride);
}

}  // namespace cellserve::engine::kernels::arm
