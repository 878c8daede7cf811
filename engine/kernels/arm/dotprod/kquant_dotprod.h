// K-quant kernels compiled with +dotprod (SDOT): dot products against Q8_K activations, and tiles
// of 2 weight rows x 4 activation rows (each weight super-block is unpacked once for the four)
// that equal the vec_dot of each pair bit for bit.
#pragma once

#include <cstddef>
#include <cstdint>

namespace cellserve::engine::kernels::arm {

inline constexpr int kDotprodKquantTileRows = 2;
inline constexpr int kDotprodKquantTileCols = 4;

float vec_dot_q2_k_dotprod(int64_t n, const void* w, const void* a);
float vec_dot_q3_k_dotprod(int64_t n, const void* w, const void* a);
float vec_dot_q4_k_dotprod(int64_t n, const void* w, const void* a);
float vec_dot_q5_k_dotprod(int64_t n, const void* w, const void* a);
float vec_dot_q6_k_dotprod(int64_t n, const void* w, const void* a);
float vec_dot_iq4_xs_dotprod(int64_t n, const void* w, const void* a);

void tile_dot_q4_k_dotprod(int64_t n, const void* w, size_t w_stride, const void* a, size_t a_stride, float* y,
                           int64_t y_stride);
void tile_dot_q5_k_dotprod(int64_t n, const void* w, size_t w_stride, const void* a, size_t a_stride, float* y,
                           int64_t y_stride);
void tile_dot_q6_k_dotprod(int64_t n, const void* w, size_t w_stride, const void* a, size_t a_stride, float* y,
                           int64_t y_stride);

}  // namespace cellserve::engine::kernels::arm
