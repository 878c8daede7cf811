// The AVX2 kernels of the K-quant family (Q2_K..Q6_K, IQ4_XS against Q8_K activations).
// Declarations only: the table file that takes their addresses is compiled for the baseline.
#pragma once

#include <cstddef>
#include <cstdint>

namespace cellserve::engine::kernels::x86 {

float vec_dot_q2_k_avx2(int64_t n, const void* w, const void* a);
float vec_dot_q3_k_avx2(int64_t n, const void* w, const void* a);
float vec_dot_q4_k_avx2(int64_t n, const void* w, const void* a);
float vec_dot_q5_k_avx2(int64_t n, const void* w, const void* a);
float vec_dot_q6_k_avx2(int64_t n, const void* w, const void* a);
float vec_dot_iq4_xs_avx2(int64_t n, const void* w, const void* a);

// Tiles of kKquantTileRows weight rows x kKquantTileCols activation rows. The gain comes from
// unpacking each weight super-block once per tile_cols activation rows.
inline constexpr int kKquantTileRows = 4;
inline constexpr int kKquantTileCols = 4;
void tile_dot_q4_k_avx2(int64_t n, const void* w, size_t w_stride, const void* a, size_t a_stride, float* y,
                        int64_t y_stride);
void tile_dot_q5_k_avx2(int64_t n, const void* w, size_t w_stride, const void* a, size_t a_stride, float* y,
                        int64_t y_stride);
void tile_dot_q6_k_avx2(int64_t n, const void* w, size_t w_stride, const void* a, size_t a_stride, float* y,
                        int64_t y_stride);

}  // namespace cellserve::engine::kernels::x86
