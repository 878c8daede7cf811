// SDOT dot products of packed Q4_0 / Q8_0 weight groups (8 interleaved rows, the layout of
// kernel_table.h, packed by the reference's pack functions) with up to 4 Q8_0 activation rows.
// A unit of the group is 16 bytes for rows 0-3 and 16 for rows 4-7, 4 consecutive quants of each
// row per 32-bit lane, which is exactly SDOT-by-element's operand: one SDOT multiplies the four
// rows' 4 quants with the same 4 activation quants, taken as a lane of the activation register, so
// every lane is one row's block sum and no horizontal sum is needed.
//
// Per lane the float arithmetic is the reference's (reference/packed_legacy.cpp): acc =
// fma(float(isum), d_w * d_a, acc), block by block, so results match it bit for bit whatever `cols`
// is.
#include <arm_neon.h>

#include <cstddef>
#include <cstdint>

#include "engine/kernels/arm/dotprod/legacy_block_dot.h"
#include "engine/kernels/arm/dotprod/legacy_kernels.h"
#include "engine/kernels/packed_cols.h"

namespace cellserve::engine::kernels::arm {
namespace {

constexpr int kRows = 8;
constexpr size_t kScaleBytes = kRows * sizeof(uint16_t);

// The 8 rows' scales of a group's block, as floats: rows 0-3 and 4-7.
inline __attribute__((always_inline)) float32x4x2_t row_scales(const uint8_t* g) {
  const float16x8_t h = vreinterpretq_f16_u8(vld1q_u8(g));
  return {{vcvt_f32_f16(vget_low_f16(h)), vcvt_high_f32_f16(h)}};
}

// acc += float(isum) * (d_w * d_a), lane by lane, fused, for both row halves of one column.
inline __attribute__((always_inline)) void scale_accumulate(float32x4_t (&acc)[2], const int32x4_t (&isum)[2],
                                                            float32x4x2_t dw, float da) {
  unroll<0, 2>([&](auto h) {
    acc[h.value] = vfmaq_f32(acc[h.value], vcvtq_f32_s32(isum[h.value]), vmulq_n_f32(dw.val[h.value], da));
  });
}

template <int C>
inline __attribute__((always_inline)) void store(const float32x4_t (&acc)[C][2], float* y, int64_t y_stride) {
  unroll<0, C>([&](auto c) {
    vst1q_f32(y + c.value * y_stride, acc[c.value][0]);
    vst1q_f32(y + c.value * y_stride + 4, acc[c.value][1]);
  });
}

// Q8_0: 8 units of 4 quants per row and block; unit u's activation quants are lane u % 4 of the
// activation's register u / 4. The block's 16 weight registers stay loaded while each column in
// turn is dotted with them and scaled, so a column's integer sums live only briefly (with 4
// columns, all sums at once would not fit in the 32 registers beside the weights).
template <int C>
void packed_q8_0(int64_t n, const uint8_t* w, const uint8_t* a, size_t a_stride, float* y, int64_t y_stride) {
  float32x4_t acc[C][2];
  unroll<0, C>([&](auto c) { acc[c.value][0] = acc[c.value][1] = vdupq_n_f32(0.0f); });
  for (int64_t b = 0; b < n / 32; ++b) {
    const uint8_t* g = w + b * kRows * static_cast<int64_t>(sizeof(BlockQ8_0));
    int8x16_t units[8][2];  // [unit][rows 0-3, rows 4-7]
    unroll<0, 8>([&](auto u) {
      unroll<0, 2>([&](auto h) {
        units[u.value][h.value] =
            vld1q_s8(reinterpret_cast<const int8_t*>(g + kScaleBytes + 32 * u.value + 16 * h.value));
      });
    });
    const float32x4x2_t dw = row_scales(g);
    unroll<0, C>([&](auto c) {
      const uint8_t* ab = a + c.value * a_stride + b * static_cast<int64_t>(sizeof(BlockQ8_0));
      const int8x16x2_t q = q8_0_quants(ab);
      int32x4_t isum[2] = {vdupq_n_s32(0), vdupq_n_s32(0)};
      unroll<0, 8>([&](auto u) {
        unroll<0, 2>([&](auto h) {
          isum[h.value] = vdotq_laneq_s32(isum[h.value], units[u.value][h.value], q.val[u.value / 4], u.value % 4);
        });
      });
      scale_accumulate(acc[c.value], isum, dw, half_to_float(load_u16(ab)));
    });
  }
  store<C>(acc, y, y_stride);
}

// Q4_0: 4 units of 4 quant bytes per row and block; a byte's low nibble is element j, its high
// nibble element j + 16. The nibbles are used unsigned (0..15, valid int8) and 8 * sum(a) is
// subtracted afterwards: sum((q - 8) * a) = sum(q * a) - 8 * sum(a), exactly, in int32. As for
// Q8_0, the block's 16 unpacked weight registers serve each column in turn.
template <int C>
void packed_q4_0(int64_t n, const uint8_t* w, const uint8_t* a, size_t a_stride, const int32_t* sums,
                 int64_t sums_stride, float* y, int64_t y_stride) {
  const uint8x16_t low_mask = vdupq_n_u8(0x0F);
  float32x4_t acc[C][2];
  unroll<0, C>([&](auto c) { acc[c.value][0] = acc[c.value][1] = vdupq_n_f32(0.0f); });
  for (int64_t b = 0; b < n / 32; ++b) {
    const uint8_t* g = w + b * kRows * static_cast<int64_t>(sizeof(BlockQ4_0));
    int8x16_t lo[4][2];  // [unit][rows 0-3, rows 4-7]: elements 4u..4u+3
    int8x16_t hi[4][2];  // elements 16 + 4u..16 + 4u + 3
    unroll<0, 4>([&](auto u) {
      unroll<0, 2>([&](auto h) {
        const uint8x16_t v = vld1q_u8(g + kScaleBytes + 32 * u.value + 16 * h.value);
        lo[u.value][h.value] = vreinterpretq_s8_u8(vandq_u8(v, low_mask));
        hi[u.value][h.value] = vreinterpretq_s8_u8(vshrq_n_u8(v, 4));
      });
    });
    const float32x4x2_t dw = row_scales(g);
    unroll<0, C>([&](auto c) {
      const uint8_t* ab = a + c.value * a_stride + b * static_cast<int64_t>(sizeof(BlockQ8_0));
      const int8x16x2_t q = q8_0_quants(ab);
      const int32x4_t offset = vdupq_n_s32(-8 * sums[c.value * sums_stride + b]);
      int32x4_t isum[2] = {offset, offset};
      unroll<0, 4>([&](auto u) {
        unroll<0, 2>([&](auto h) {
          isum[h.value] = vdotq_laneq_s32(isum[h.value], lo[u.value][h.value], q.val[0], u.value);
          isum[h.value] = vdotq_laneq_s32(isum[h.value], hi[u.value][h.value], q.val[1], u.value);
        });
      });
      scale_accumulate(acc[c.value], isum, dw, half_to_float(load_u16(ab)));
    });
  }
  store<C>(acc, y, y_stride);
}

}  // namespace

void packed_dot_q4_0_dotprod(int64_t n, const void* w, const void* a, size_t a_stride, const int32_t* a_sums,
                             int64_t sums_stride, int cols, float* y, int64_t y_stride) {
  const auto* wb = static_cast<const uint8_t*>(w);
  const auto* ab = static_cast<const uint8_t*>(a);
  with_cols(cols, [&]<int C>() { packed_q4_0<C>(n, wb, ab, a_stride, a_sums, sums_stride, y, y_stride); });
}

void packed_dot_q8_0_dotprod(int64_t n, const void* w, const void* a, size_t a_stride, const int32_t* /*a_sums*/,
                             int64_t /*sums_stride*/, int cols, float* y, int64_t y_stride) {
  const auto* wb = static_cast<const uint8_t*>(w);
  const auto* ab = static_cast<const uint8_t*>(a);
  with_cols(cols, [&]<int C>() { packed_q8_0<C>(n, wb, ab, a_stride, y, y_stride); });
}

}  // namespace cellserve::engine::kernels::arm
