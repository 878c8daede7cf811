// Kernels compiled for AVX-512 VNNI (with AVX512-F/BW/VL/DQ), used by the avx512-vnni table
// (x86_tables.cpp). Call only on hosts whose cpu_features() report avx512 and avx512_vnni.
#pragma once

#include <cstddef>
#include <cstdint>

namespace cellserve::engine::kernels::x86::vnni {

// Packed-group dot products (packed_vnni.cpp), same contract as PackedDotFn (kernel_table.h)
// and the same results as the reference's, bit for bit.
void packed_dot_q4_0(int64_t n, const void* w, const void* a, size_t a_stride, const int32_t* a_sums,
                     int64_t sums_stride, int cols, float* y, int64_t y_stride);
void packed_dot_q8_0(int64_t n, const void* w, const void* a, size_t a_stride, const int32_t* a_sums,
                     int64_t sums_stride, int cols, float* y, int64_t y_stride);
void packed_dot_q4_k(int64_t n, const void* w, const void* a, size_t a_stride, const int32_t* a_sums,
                     int64_t sums_stride, int cols, float* y, int64_t y_stride);
void packed_dot_q6_k(int64_t n, const void* w, const void* a, size_t a_stride, const int32_t* a_sums,
                     int64_t sums_stride, int cols, float* y, int64_t y_stride);
// The same over two adjacent groups (WeightKernels::packed_dot_pair), in 512-bit registers
// (packed_pair512.cpp).
void packed_dot_q4_0_pair(int64_t n, const void* w, const void* a, size_t a_stride, const int32_t* a_sums,
                          int64_t sums_stride, int cols, float* y, int64_t y_stride);
void packed_dot_q8_0_pair(int64_t n, const void* w, const void* a, size_t a_stride, const int32_t* a_sums,
                          int64_t sums_stride, int cols, float* y, int64_t y_stride);
void packed_dot_q4_k_pair(int64_t n, const void* w, const void* a, size_t a_stride, const int32_t* a_sums,
                          int64_t sums_stride, int cols, float* y, int64_t y_stride);
void packed_dot_q6_k_pair(int64_t n, const void* w, const void* a, size_t a_stride, const int32_t* a_sums,
                          int64_t sums_stride, int cols, float* y, int64_t y_stride);

}  // namespace cellserve::engine::kernels::x86::vnni
