// Kernels compiled for AVX512-BF16 (with AVX512-F/BW/VL/DQ), used by the avx512-bf16 table
// (x86_tables.cpp). Call only on hosts whose cpu_features() report avx512 and avx512_bf16.
#pragma once

#include <cstddef>
#include <cstdint>

namespace cellserve::engine::kernels::x86::bf16 {

// The tile of tile_dot_bf16: weight rows x tokens (24 accumulators, 4 activation and 1 weight
// register of the 32). On Zen 5, 6 x 4 beat 4 x 4 by 15-25 % on the prefill shapes of
// qwen3-0.6b: 10 loads per 24 vdpbf16ps instead of 8 per 16.
inline constexpr int kTileBf16Rows = 6;
inline constexpr int kTileBf16Cols = 4;

// BF16 weights x BF16 activations (bf16_dot.cpp); the contracts of VecDotFn / TileDotFn /
// TileDotRowsFn.
float vec_dot_bf16(int64_t n, const void* w, const void* a);
void tile_dot_bf16(int64_t n, const void* w, size_t w_stride, const void* a, size_t a_stride, float* y,
                   int64_t y_stride);
void tile_dot_bf16_rows(int rows, int64_t n, const void* w, size_t w_stride, const void* a, size_t a_stride, float* y,
                        int64_t y_stride);

// Packed BF16 groups (bf16_packed.cpp; layout and arithmetic: reference/packed_bf16.cpp): the
// contracts of PackedDotFn and of WeightKernels::packed_dot_pair.
void packed_dot_bf16(int64_t n, const void* w, const void* a, size_t a_stride, const int32_t* a_sums,
                     int64_t sums_stride, int cols, float* y, int64_t y_stride);
void packed_dot_bf16_pair(int64_t n, const void* w, const void* a, size_t a_stride, const int32_t* a_sums,
                          int64_t sums_stride, int cols, float* y, int64_t y_stride);

}  // namespace cellserve::engine::kernels::x86::bf16
