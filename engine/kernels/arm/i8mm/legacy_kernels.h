// The SMMLA tiles of the legacy family, compiled with -march=armv8.2-a+dotprod+i8mm. SMMLA gives
// whole-block integer sums for 2x2 (row, column) pairs, which are then scaled exactly as the
// dotprod table's vec_dot does per pair (acc = fma(float(sum), d_w * d_a, acc) block by block), so
// the i8mm table pairs these tiles with those vec_dots (every i8mm CPU has SDOT).
#pragma once

#include <cstddef>
#include <cstdint>

namespace cellserve::engine::kernels::arm {

// Tiles of kLegacyI8mmTileRows weight rows x kLegacyI8mmTileCols activation rows, built from
// 2x2 SMMLA blocks.
inline constexpr int kLegacyI8mmTileRows = 4;
inline constexpr int kLegacyI8mmTileCols = 4;
void tile_dot_q4_0_i8mm(int64_t n, const void* w, size_t w_stride, const void* a, size_t a_stride, float* y,
                        int64_t y_stride);
void tile_dot_q5_0_i8mm(int64_t n, const void* w, size_t w_stride, const void* a, size_t a_stride, float* y,
                        int64_t y_stride);
void tile_dot_q8_0_i8mm(int64_t n, const void* w, size_t w_stride, const void* a, size_t a_stride, float* y,
                        int64_t y_stride);
void tile_dot_iq4_nl_i8mm(int64_t n, const void* w, size_t w_stride, const void* a, size_t a_stride, float* y,
                          int64_t y_stride);

}  // namespace cellserve::engine::kernels::arm
