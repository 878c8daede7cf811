// 4x4 tiles of the blocks-of-32 types with SMMLA. Rows (r, r+1) and columns (c, c+1) are
// interleaved in 8-byte chunks, so four SMMLAs give the 2x2 whole-block sums
// {r c, r c+1, r+1 c, r+1 c+1}; each such vector is scaled by the matching d_w * d_a products and
// accumulated with one fused multiply-add per pair lane, exactly as the dotprod vec_dot does per
// pair (dotprod/legacy_vec_dot.cpp).
#include "engine/kernels/arm/dotprod/legacy_block_dot.h"
#include "engine/kernels/arm/i8mm/legacy_kernels.h"

namespace cellserve::engine::kernels::arm {
namespace {

constexpr int kRowPairs = kLegacyI8mmTileRows / 2;
constexpr int kColPairs = kLegacyI8mmTileCols / 2;

// The 32 quants of two rows as SMMLA operands: chunk k holds elements 8k..8k+7 of the first row,
// then of the second.
struct PairChunks {
  int8x16_t k[4];
};

inline __attribute__((always_inline)) PairChunks interleave(int8x16x2_t first, int8x16x2_t second) {
  PairChunks p;
  unroll<0, 2>([&](auto h) {
    const int64x2_t a = vreinterpretq_s64_s8(first.val[h.value]);
    const int64x2_t b = vreinterpretq_s64_s8(second.val[h.value]);
    p.k[2 * h.value] = vreinterpretq_s8_s64(vzip1q_s64(a, b));
    p.k[2 * h.value + 1] = vreinterpretq_s8_s64(vzip2q_s64(a, b));
  });
  return p;
}

inline __attribute__((always_inline)) int32x4_t smmla_block(const PairChunks& w, const PairChunks& a) {
  int32x4_t s = vmmlaq_s32(vdupq_n_s32(0), w.k[0], a.k[0]);
  s = vmmlaq_s32(s, w.k[1], a.k[1]);
  s = vmmlaq_s32(s, w.k[2], a.k[2]);
  return vmmlaq_s32(s, w.k[3], a.k[3]);
}

template <typename Unpack>
void whole_block_tile(int64_t n, const void* w, size_t w_stride, const void* a, size_t a_stride, float* y,
                      int64_t y_stride, Unpack unpack) {
  const auto* x = static_cast<const uint8_t*>(w);
  const auto* act = static_cast<const uint8_t*>(a);
  // [row pair][column pair], lanes {r c, r c+1, r+1 c, r+1 c+1}; constant indices only (unroll<>),
  // so they stay in registers.
  float32x4_t acc[kRowPairs][kColPairs];
  unroll<0, kRowPairs>(
      [&](auto rp) { unroll<0, kColPairs>([&](auto cp) { acc[rp.value][cp.value] = vdupq_n_f32(0.0f); }); });
  for (int64_t i = 0; i < n / 32; ++i) {
    PairChunks wq[kRowPairs];
    float32x4_t dw[kRowPairs];  // {d_r, d_r, d_r+1, d_r+1}
    unroll<0, kRowPairs>([&](auto rp) {
      const uint8_t* b0 = x + (2 * rp.value) * w_stride + i * Unpack::kBlockBytes;
      const uint8_t* b1 = b0 + w_stride;
      wq[rp.value] = interleave(unpack(b0), unpack(b1));
      dw[rp.value] = vcombine_f32(vdup_n_f32(half_to_float(load_u16(b0))), vdup_n_f32(half_to_float(load_u16(b1))));
    });
    unroll<0, kColPairs>([&](auto cp) {
      const uint8_t* b0 = act + (2 * cp.value) * a_stride + i * sizeof(BlockQ8_0);
      const uint8_t* b1 = b0 + a_stride;
      const PairChunks aq = interleave(q8_0_quants(b0), q8_0_quants(b1));
      const float32x2_t da = vset_lane_f32(half_to_float(load_u16(b1)), vdup_n_f32(half_to_float(load_u16(b0))), 1);
      const float32x4_t da4 = vcombine_f32(da, da);  // {d_c, d_c+1, d_c, d_c+1}
      unroll<0, kRowPairs>([&](auto rp) {
        // Lane products d_w * d_a are vec_dot's; the FMLA lanes are its FMADDs.
        float32x4_t& v = acc[rp.value][cp.value];
        v = vfmaq_f32(v, vcvtq_f32_s32(smmla_block(wq[rp.value], aq)), vmulq_f32(dw[rp.value], da4));
      });
    });
  }
  unroll<0, kRowPairs>([&](auto rp) {
    unroll<0, kColPairs>([&](auto cp) {
      const float32x4_t total = acc[rp.value][cp.value];
      const int r = 2 * rp.value, c = 2 * cp.value;
      y[c * y_stride + r] = vgetq_lane_f32(total, 0);
      y[(c + 1) * y_stride + r] = vgetq_lane_f32(total, 1);
      y[c * y_stride + r + 1] = vgetq_lane_f32(total, 2);
      y[(c + 1) * y_stride + r + 1] = vgetq_lane_f32(total, 3);
    });
  });
}

}  // namespace

void tile_dot_q4_0_i8mm(int64_t n, const void* w, size_t w_stride, const void* a, size_t a_stride, float* y,
                        int64_t y_stride) {
  whole_block_tile(n, w, w_stride, a, a_stride, y, y_stride, UnpackQ4_0{});
}

void tile_dot_q5_0_i8mm(int64_t n, const void* w, size_t w_stride, const void* a, size_t a_stride, float* y,
                        int64_t y_stride) {
  whole_block_tile(n, w, w_stride, a, a_stride, y, y_stride, UnpackQ5_0{});
}

void tile_dot_q8_0_i8mm(int64_t n, const void* w, size_t w_stride, const void* a, size_t a_stride, float* y,
                        int64_t y_stride) {
  whole_block_tile(n, w, w_stride, a, a_stride, y, y_stride, UnpackQ8_0{});
}

void tile_dot_iq4_nl_i8mm(int64_t n, const void* w, size_t w_stride, const void* a, size_t a_stride, float* y,
                          int64_t y_stride) {
  whole_block_tile(n, w, w_stride, a, a_stride, y, y_stride, UnpackIq4Nl{});
}

}  // namespace cellserve::engine::kernels::arm
