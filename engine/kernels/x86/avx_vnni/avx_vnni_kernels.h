// Kernels compiled for AVX-VNNI (with AVX2), used by the avx-vnni table (x86_tables.cpp). Call
// only on hosts whose cpu_features() report avx_vnni.
#pragma once

#include <cstddef>
#include <cstdint>

namespace cellserve::engine::kernels::x86::avx_vnni {

// Packed-group dot products (packed_avx_vnni.cpp), same contract as PackedDotFn (kernel_table.h)
// and the same results as the reference's, bit for bit.
void packed_dot_q4_0(int64_t n, const void* w, const void* a, size_t a_stride, const int32_t* a_sums,
                     int64_t sums_stride, int cols, float* y, int64_t y_stride);
void packed_dot_q8_0(int64_t n, const void* w, const void* a, size_t a_stride, const int32_t* a_sums,
                     int64_t sums_stride, int cols, float* y, int64_t y_stride);
void packed_dot_q4_k(int64_t n, const void* w, const void* a, size_t a_stride, const int32_t* a_sums,
                     int64_t sums_stride, int cols, float* y, int64_t y_stride);
void packed_dot_q6_k(int64_t n, const void* w, const void* a, size_t a_stride, const int32_t* a_sums,
                     int64_t sums_stride, int cols, float* y, int64_t y_stride);

}  // namespace cellserve::engine::kernels::x86::avx_vnni
