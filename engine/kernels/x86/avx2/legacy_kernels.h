// The AVX2 kernels of the legacy family (blocks of 32, float types, activation converters,
// element-wise kernels). Defined in AVX2-compiled files; only call them after the CPU check.
#pragma once

#include <cstddef>
#include <cstdint>

#include "engine/kernels/reference/delta_net.h"

namespace cellserve::engine::kernels::x86 {

// Activation converters (convert_activations.cpp), bit-identical to the reference.
void from_float_f16(const float* src, void* dst, int64_t n);
void round_f16(const float* x, float* y, int64_t n);
void from_float_bf16(const float* src, void* dst, int64_t n);
void from_float_q8_0(const float* src, void* dst, int64_t n);
void from_float_q8_1(const float* src, void* dst, int64_t n);
void from_float_q8_k(const float* src, void* dst, int64_t n);

// Float dot products (float_dot.cpp).
float vec_dot_f32(int64_t n, const void* w, const void* a);
float vec_dot_f16(int64_t n, const void* w, const void* a);
float vec_dot_bf16(int64_t n, const void* w, const void* a);
void tile_dot_f16(int64_t n, const void* w, size_t w_stride, const void* a, size_t a_stride, float* y,
                  int64_t y_stride);
// BF16 uses the F16 tile's shape.
void tile_dot_bf16(int64_t n, const void* w, size_t w_stride, const void* a, size_t a_stride, float* y,
                   int64_t y_stride);
inline constexpr int kTileF16Rows = 2;
inline constexpr int kTileF16Cols = 3;

// Blocks-of-32 dot products and their tiles (legacy_dot.cpp). Each tile value equals the
// vec_dot of its pair bit for bit.
float vec_dot_q4_0(int64_t n, const void* w, const void* a);
float vec_dot_q4_1(int64_t n, const void* w, const void* a);
float vec_dot_q5_0(int64_t n, const void* w, const void* a);
float vec_dot_q5_1(int64_t n, const void* w, const void* a);
float vec_dot_q8_0(int64_t n, const void* w, const void* a);
float vec_dot_iq4_nl(int64_t n, const void* w, const void* a);
void tile_dot_q4_0(int64_t n, const void* w, size_t w_stride, const void* a, size_t a_stride, float* y,
                   int64_t y_stride);
void tile_dot_q4_1(int64_t n, const void* w, size_t w_stride, const void* a, size_t a_stride, float* y,
                   int64_t y_stride);
void tile_dot_q5_0(int64_t n, const void* w, size_t w_stride, const void* a, size_t a_stride, float* y,
                   int64_t y_stride);
void tile_dot_q5_1(int64_t n, const void* w, size_t w_stride, const void* a, size_t a_stride, float* y,
                   int64_t y_stride);
void tile_dot_q8_0(int64_t n, const void* w, size_t w_stride, const void* a, size_t a_stride, float* y,
                   int64_t y_stride);
void tile_dot_iq4_nl(int64_t n, const void* w, size_t w_stride, const void* a, size_t a_stride, float* y,
                     int64_t y_stride);
// Tile shapes (weight rows x activation columns) of the quantized tiles.
inline constexpr int kTileQ4Rows = 4;
inline constexpr int kTileQ4Cols = 3;
inline constexpr int kTileQ8Rows = 4;
inline constexpr int kTileQ8Cols = 3;

// Packed-group dot products (packed_legacy.cpp); packing itself is the reference's.
void packed_dot_q4_0(int64_t n, const void* w, const void* a, size_t a_stride, const int32_t* a_sums,
                     int64_t sums_stride, int cols, float* y, int64_t y_stride);
void packed_dot_q8_0(int64_t n, const void* w, const void* a, size_t a_stride, const int32_t* a_sums,
                     int64_t sums_stride, int cols, float* y, int64_t y_stride);
// (packed_q4_k.cpp, packed_q6_k.cpp)
void packed_dot_q4_k(int64_t n, const void* w, const void* a, size_t a_stride, const int32_t* a_sums,
                     int64_t sums_stride, int cols, float* y, int64_t y_stride);
void packed_dot_q6_k(int64_t n, const void* w, const void* a, size_t a_stride, const int32_t* a_sums,
                     int64_t sums_stride, int cols, float* y, int64_t y_stride);

// Element-wise kernels (elementwise_avx2.cpp).
void axpy_f16(int64_t n, float alpha, const uint16_t* x, float* y);
void swiglu(int64_t n, const float* gate, const float* up, float* h);
void rms_norm(const float* x, const float* w, float* y, int64_t rows, int64_t n, float eps);

// The Gated DeltaNet in float (delta_net_avx2.cpp).
void delta_net_recurrent(const reference::DeltaNetHeadArgs& a, float* state);
void delta_net_chunked(const reference::DeltaNetHeadArgs& a, float* state, int64_t chunk_size);
// The causal conv1d + SiLU of a channel range (conv_avx2.cpp).
void causal_conv1d_silu_channels(const float* x, int64_t x_stride, int64_t n_tokens, int64_t n_channels, int64_t c0,
                                 int64_t c1, const float* taps, int64_t kernel, const float* window, float* y);

// Attention over an F16 KV cache (attention_f16.cpp).
void attn_scores_f16(int64_t head_dim, int n_q, const float* q, int64_t q_stride, int64_t n_cells,
                     const uint16_t* const* k_rows, float* scores, int64_t scores_stride);
void attn_softmax_f16(int64_t n, float scale, float* scores, uint16_t* probs);
void attn_values_f16(int64_t head_dim, int n_q, const uint16_t* p, int64_t p_stride, int64_t n_cells,
                     const uint16_t* const* v_rows, float* out, int64_t out_stride);

}  // namespace cellserve::engine::kernels::x86
