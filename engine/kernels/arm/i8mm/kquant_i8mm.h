// K-quant tiles compiled with +i8mm (SMMLA), 4 weight rows x 4 activation rows built from 2 x 2
// blocks of int8 matrix products. Each value equals the neon-dotprod vec_dot of its pair bit for bit.
#pragma once

#include <cstddef>
#include <cstdint>

namespace cellserve::engine::kernels::arm {

inline constexpr int kI8mmKquantTileRows = 4;
inline constexpr int kI8mmKquantTileCols = 4;

void tile_dot_q4_k_i8mm(int64_t n, const void* w, size_t w_stride, const void* a, size_t a_stride, float* y,
                        int64_t y_stride);
void tile_dot_q6_k_i8mm(int64_t n, const void* w, size_t w_stride, const void* a, size_t a_stride, float* y,
                        int64_t y_stride);

}  // namespace cellserve::engine::kernels::arm
