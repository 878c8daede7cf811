// Kernels compiled for AVX-512 (F + BW + VL + DQ), used by the avx512 and avx512-vnni tables
// (x86_tables.cpp). Call only on hosts whose cpu_features() report avx512.
#pragma once

#include <cstddef>
#include <cstdint>

#include "engine/kernels/reference/delta_net.h"

namespace cellserve::engine::kernels::x86::avx512 {

// Attention over an F16 KV cache in 512-bit registers (attention_avx512.cpp); the contracts of
// KernelTable::attn_scores_f16 / attn_values_f16 (kernel_table.h), bit for bit the reference's.
void attn_scores_f16(int64_t head_dim, int n_q, const float* q, int64_t q_stride, int64_t n_cells,
                     const uint16_t* const* k_rows, float* scores, int64_t scores_stride);
void attn_values_f16(int64_t head_dim, int n_q, const uint16_t* p, int64_t p_stride, int64_t n_cells,
                     const uint16_t* const* v_rows, float* out, int64_t out_stride);

// The chunked Gated DeltaNet with 512-bit matrix products (delta_net_avx512.cpp): the AVX2
// kernel's results, bit for bit.
void delta_net_chunked(const reference::DeltaNetHeadArgs& a, float* state, int64_t chunk_size);

}  // namespace cellserve::engine::kernels::x86::avx512
