// 4x4 tiles of the blocks-of-32 types with SDOT: each weight block is unpacked once for the four
// activation rows and each activation block loaded once for the four weight rows. Per (row,
// column) the float operations are vec_dot's (legacy_vec_dot.cpp): the whole-block integer sum,
// then one fused multiply-add by d_w * d_a per block; the four rows of a column share one F32x4
// accumulator (lane r = row r), so the tile needs only four accumulators.
#include "engine/kernels/arm/dotprod/legacy_block_dot.h"
#include "engine/kernels/arm/dotprod/legacy_kernels.h"

namespace cellserve::engine::kernels::arm {
namespace {

constexpr int kRows = kLegacyDotprodTileRows;
constexpr int kCols = kLegacyDotprodTileCols;

static_assert(kRows == 4, "one F32x4 accumulator per column, lane r = weight row r");

template <typename Unpack>
void scaled_tile(int64_t n, const void* w, size_t w_stride, const void* a, size_t a_stride, float* y, int64_t y_stride,
                 Unpack unpack) {
  const auto* x = static_cast<const uint8_t*>(w);
  const auto* act = static_cast<const uint8_t*>(a);
  // Indexed with compile-time constants only (unroll<>), so the compiler keeps them in registers.
  float32x4_t acc[kCols];
  unroll<0, kCols>([&](auto c) { acc[c.value] = vdupq_n_f32(0.0f); });
  for (int64_t i = 0; i < n / 32; ++i) {
    int8x16x2_t wq[kRows];
    uint16x4_t dw_half = vdup_n_u16(0);
    unroll<0, kRows>([&](auto r) {
      const uint8_t* xb = x + r.value * w_stride + i * Unpack::kBlockBytes;
      wq[r.value] = unpack(xb);
      dw_half = vset_lane_u16(load_u16(xb), dw_half, r.value);
    });
    const float32x4_t dw = vcvt_f32_f16(vreinterpret_f16_u16(dw_half));  // exact, as half_to_float
    unroll<0, kCols>([&](auto c) {
      const uint8_t* yb = act + c.value * a_stride + i * sizeof(BlockQ8_0);
      const int8x16x2_t aq = q8_0_quants(yb);
      // Whole-block sums of the four rows in one vector (exact integer pairwise adds).
      const int32x4_t s01 = vpaddq_s32(sdot_block(wq[0], aq), sdot_block(wq[1], aq));
      const int32x4_t s23 = vpaddq_s32(sdot_block(wq[2], aq), sdot_block(wq[3], aq));
      // Lane r is d_w[r] * d_a: the same product vec_dot forms; the FMLA lane is its FMADD.
      const float32x4_t d = vmulq_n_f32(dw, half_to_float(load_u16(yb)));
      acc[c.value] = vfmaq_f32(acc[c.value], vcvtq_f32_s32(vpaddq_s32(s01, s23)), d);
    });
  }
  unroll<0, kCols>([&](auto c) { vst1q_f32(y + c.value * y_stride, acc[c.value]); });
}

}  // namespace

void tile_dot_q4_0_dotprod(int64_t n, const void* w, size_t w_stride, const void* a, size_t a_stride, float* y,
                           int64_t y_stride) {
  scaled_tile(n, w, w_stride, a, a_stride, y, y_stride, UnpackQ4_0{});
}

void tile_dot_q5_0_dotprod(int64_t n, const void* w, size_t w_stride, const void* a, size_t a_stride, float* y,
                           int64_t y_stride) {
  scaled_tile(n, w, w_stride, a, a_stride, y, y_stride, UnpackQ5_0{});
}

void tile_dot_q8_0_dotprod(int64_t n, const void* w, size_t w_stride, const void* a, size_t a_stride, float* y,
                           int64_t y_stride) {
  scaled_tile(n, w, w_stride, a, a_stride, y, y_stride, UnpackQ8_0{});
}

void tile_dot_iq4_nl_dotprod(int64_t n, const void* w, size_t w_stride, const void* a, size_t a_stride, float* y,
                             int64_t y_stride) {
  scaled_tile(n, w, w_stride, a, a_stride, y, y_stride, UnpackIq4Nl{});
}

}  // namespace cellserve::engine::kernels::arm
