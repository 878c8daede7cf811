// K-quant dot products with SDOT. One routine, dot_tile<Kind, R, C>, serves both vec_dot (1 x 1)
// and the tiles (2 weight rows x 4 activation rows): per super-block it unpacks each weight
// row's 64-element chunks once, sums the products exactly in int32 per pair, and then applies
// the same float operations to each pair (two fused multiply-adds), so a pair's result never
// depends on the tile around it.
// The routine itself is in ../kquant_superblock.h; this file supplies dot16.
#include <arm_neon.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "engine/kernels/arm/dotprod/kquant_dotprod.h"

namespace cellserve::engine::kernels::arm {
namespace {

// 16 int8 products summed into the 4 lanes of acc (kquant_superblock.h builds on it).
[[gnu::always_inline]] inline int32x4_t dot16(int32x4_t acc, int8x16_t w, int8x16_t y) { return vdotq_s32(acc, w, y); }

}  // namespace
}  // namespace cellserve::engine::kernels::arm

#include "engine/kernels/arm/kquant_superblock.h"

namespace cellserve::engine::kernels::arm {
namespace {

template <class Kind>
void tile_dot(int64_t n, const void* w, size_t w_stride, const void* a, size_t a_stride, float* y, int64_t y_stride) {
  dot_tile<Kind, kDotprodKquantTileRows, kDotprodKquantTileCols>(n, static_cast<const uint8_t*>(w), w_stride,
                                                                 static_cast<const uint8_t*>(a), a_stride, y, y_stride);
}

}  // namespace

float vec_dot_q2_k_dotprod(int64_t n, const void* w, const void* a) { return vec_dot<Q2K>(n, w, a); }
float vec_dot_q3_k_dotprod(int64_t n, const void* w, const void* a) { return vec_dot<Q3K>(n, w, a); }
float vec_dot_q4_k_dotprod(int64_t n, const void* w, const void* a) { return vec_dot<Q4K>(n, w, a); }
float vec_dot_q5_k_dotprod(int64_t n, const void* w, const void* a) { return vec_dot<Q5K>(n, w, a); }
float vec_dot_q6_k_dotprod(int64_t n, const void* w, const void* a) { return vec_dot<Q6K>(n, w, a); }
float vec_dot_iq4_xs_dotprod(int64_t n, const void* w, const void* a) { return vec_dot<IQ4XS>(n, w, a); }

void tile_dot_q4_k_dotprod(int64_t n, const void* w, size_t w_stride, const void* a, size_t a_stride, float* y,
                           int64_t y_stride) {
  tile_dot<Q4K>(n, w, w_stride, a, a_stride, y, y_stride);
}
void tile_dot_q5_k_dotprod(int64_t n, const void* w, size_t w_stride, const void* a, size_t a_stride, float* y,
                           int64_t y_stride) {
  tile_dot<Q5K>(n, w, w_stride, a, a_stride, y, y_stride);
}
void tile_dot_q6_k_dotprod(int64_t n, const void* w, size_t w_stride, const void* a, size_t a_stride, float* y,
                           int64_t y_stride) {
  tile_dot<Q6K>(n, w, w_stride, a, a_stride, y, y_stride);
}

}  // namespace cellserve::engine::kernels::arm
