// The NEON + dot-product (SDOT) kernels of the legacy family, compiled with
// -march=armv8.2-a+dotprod. For the types that take Q8_0 activations, vec_dot reduces each
// block's SDOT lanes to its whole integer sum and accumulates acc = fma(float(sum), d_w * d_a, acc)
// in one float, block by block, as ggml's scalar kernels do; the tiles (SDOT here, SMMLA in the
// i8mm table, which shares these vec_dots) reproduce that order bit for bit. Q4_1 / Q5_1 scale
// the SDOT lanes in F32 lanes instead (no tiles).
#pragma once

#include <cstddef>
#include <cstdint>

namespace cellserve::engine::kernels::arm {

float vec_dot_q4_0_dotprod(int64_t n, const void* w, const void* a);
float vec_dot_q4_1_dotprod(int64_t n, const void* w, const void* a);
float vec_dot_q5_0_dotprod(int64_t n, const void* w, const void* a);
float vec_dot_q5_1_dotprod(int64_t n, const void* w, const void* a);
float vec_dot_q8_0_dotprod(int64_t n, const void* w, const void* a);
float vec_dot_iq4_nl_dotprod(int64_t n, const void* w, const void* a);

// Tiles of kLegacyDotprodTileRows weight rows x kLegacyDotprodTileCols activation rows.
inline constexpr int kLegacyDotprodTileRows = 4;
inline constexpr int kLegacyDotprodTileCols = 4;
void tile_dot_q4_0_dotprod(int64_t n, const void* w, size_t w_stride, const void* a, size_t a_stride, float* y,
                           int64_t y_stride);
void tile_dot_q5_0_dotprod(int64_t n, const void* w, size_t w_stride, const void* a, size_t a_stride, float* y,
                           int64_t y_stride);
void tile_dot_q8_0_dotprod(int64_t n, const void* w, size_t w_stride, const void* a, size_t a_stride, float* y,
                           int64_t y_stride);
void tile_dot_iq4_nl_dotprod(int64_t n, const void* w, size_t w_stride, const void* a, size_t a_stride, float* y,
                             int64_t y_stride);

// Packed Q4_0 / Q8_0 groups (kernel_table.h's layout, reference::pack_q4_0 / pack_q8_0), PackedDotFn.
void packed_dot_q4_0_dotprod(int64_t n, const void* w, const void* a, size_t a_stride, const int32_t* a_sums,
                             int64_t sums_stride, int cols, float* y, int64_t y_stride);
void packed_dot_q8_0_dotprod(int64_t n, const void* w, const void* a, size_t a_stride, const int32_t* a_sums,
                             int64_t sums_stride, int cols, float* y, int64_t y_stride);

}  // namespace cellserve::engine::kernels::arm
