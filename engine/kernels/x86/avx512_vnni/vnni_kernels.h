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

// Attention over an F16 KV cache in 512-bit registers (attention_avx512.cpp); the contracts of
// KernelTable::attn_scores_f16 / attn_values_f16 (kernel_table.h), bit for bit the reference's.
void attn_scores_f16(int64_t head_dim, int n_q, const float* q, int64_t q_stride, int64_t n_cells,
                     const uint16_t* const* k_rows, float* scores, int64_t scores_stride);
void attn_values_f16(int64_t head_dim, int n_q, const uint16_t* p, int64_t p_stride, int64_t n_cells,
                     const uint16_t* const* v_rows, float* out, int64_t out_stride);

}  // namespace cellserve::engine::kernels::x86::vnni
