// K-quant kernels for baseline ARMv8 NEON (no SDOT): dot products against Q8_K activations, and
// tiles of 1 weight row x 4 activation rows (each weight super-block is unpacked once for the
// four) that equal the vec_dot of each pair bit for bit.
#pragma once

#include <cstddef>
#include <cstdint>

namespace cellserve::engine::kernels::arm {

inline constexpr int kNeonKquantTileRows = 1;
inline constexpr int kNeonKquantTileCols = 4;

float vec_dot_q2_k_neon(int64_t n, const void* w, const void* a);
float vec_dot_q3_k_neon(int64_t n, const void* w, const void* a);
float vec_dot_q4_k_neon(int64_t n, const void* w, const void* a);
float vec_dot_q5_k_neon(int64_t n, const void* w, const void* a);
float vec_dot_q6_k_neon(int64_t n, const void* w, const void* a);
float vec_dot_iq4_xs_neon(int64_t n, const void* w, const void* a);

void tile_dot_q4_k_neon(int64_t n, const void* w, size_t w_stride, const void* a, size_t a_stride, float* y,
                        int64_t y_stride);
void tile_dot_q5_k_neon(int64_t n, const void* w, size_t w_stride, const void* a, size_t a_stride, float* y,
                        int64_t y_stride);
void tile_dot_q6_k_neon(int64_t n, const void* w, size_t w_stride, const void* a, size_t a_stride, float* y,
                        int64_t y_stride);

}  // namespace cellserve::engine::kernels::arm
