// The scalar reference kernels: the specification every SIMD kernel is tested against.
// Plain loops, never optimised. Rows may have any alignment.
#pragma once

#include <cstddef>
#include <cstdint>

namespace cellserve::engine::kernels::reference {

// Activation converters (see activation_convert.cpp).
void from_float_f32(const float* src, void* dst, int64_t n);
void from_float_f16(const float* src, void* dst, int64_t n);
void round_f16(const float* x, float* y, int64_t n);
void from_float_bf16(const float* src, void* dst, int64_t n);
void from_float_q8_0(const float* src, void* dst, int64_t n);
void from_float_q8_1(const float* src, void* dst, int64_t n);
void from_float_q8_k(const float* src, void* dst, int64_t n);

// Dot products of one weight row with one converted activation row (see vec_dot_*.cpp).
float vec_dot_f32(int64_t n, const void* w, const void* a);
float vec_dot_f16(int64_t n, const void* w, const void* a);
float vec_dot_bf16(int64_t n, const void* w, const void* a);
float vec_dot_q4_0(int64_t n, const void* w, const void* a);
float vec_dot_q4_1(int64_t n, const void* w, const void* a);
float vec_dot_q5_0(int64_t n, const void* w, const void* a);
float vec_dot_q5_1(int64_t n, const void* w, const void* a);
float vec_dot_q8_0(int64_t n, const void* w, const void* a);
float vec_dot_iq4_nl(int64_t n, const void* w, const void* a);
float vec_dot_q2_k(int64_t n, const void* w, const void* a);
float vec_dot_q3_k(int64_t n, const void* w, const void* a);
float vec_dot_q4_k(int64_t n, const void* w, const void* a);
float vec_dot_q5_k(int64_t n, const void* w, const void* a);
float vec_dot_q6_k(int64_t n, const void* w, const void* a);
float vec_dot_iq4_xs(int64_t n, const void* w, const void* a);

// Packed Q4_0 / Q8_0 / Q4_K rows (packed_legacy.cpp, packed_q4_k.cpp; kernel_table.h's PackFn and
// PackedDotFn), and the bytes of one block of a packed group of 8 rows.
inline constexpr int kPackedQ4_0Bytes = 8 * 18;
inline constexpr int kPackedQ8_0Bytes = 8 * 34;
// 8 d, 8 dmin (fp16), 8 x 8 scales, 8 x 8 mins (bytes), 8 x 128 bytes of nibbles.
inline constexpr int kPackedQ4_KBytes = 16 + 16 + 64 + 64 + 8 * 128;
// 8 d (fp16), 8 x 16 scales (int8), 16 sub-blocks x 96 bytes of nibble and 2-bit planes.
inline constexpr int kPackedQ6_KBytes = 16 + 128 + 16 * 96;
void pack_q4_k(int64_t n, const void* rows, size_t row_stride, void* dst);
void pack_q6_k(int64_t n, const void* rows, size_t row_stride, void* dst);
void packed_dot_q6_k(int64_t n, const void* w, const void* a, size_t a_stride, const int32_t* a_sums,
                     int64_t sums_stride, int cols, float* y, int64_t y_stride);
void packed_dot_q4_k(int64_t n, const void* w, const void* a, size_t a_stride, const int32_t* a_sums,
                     int64_t sums_stride, int cols, float* y, int64_t y_stride);
void pack_q4_0(int64_t n, const void* rows, size_t row_stride, void* dst);
void pack_q8_0(int64_t n, const void* rows, size_t row_stride, void* dst);
void packed_dot_q4_0(int64_t n, const void* w, const void* a, size_t a_stride, const int32_t* a_sums,
                     int64_t sums_stride, int cols, float* y, int64_t y_stride);
void packed_dot_q8_0(int64_t n, const void* w, const void* a, size_t a_stride, const int32_t* a_sums,
                     int64_t sums_stride, int cols, float* y, int64_t y_stride);
// Packed BF16 rows (packed_bf16.cpp): n a multiple of 4, 8 rows x 2 bytes per column. The
// reference of the avx512-bf16 table's packed kernels (vdpbf16ps's arithmetic); no table without
// that instruction packs BF16.
inline constexpr int kPackedBf16Bytes = 8 * 2;
inline constexpr int kPackedBf16Multiple = 4;
void pack_bf16(int64_t n, const void* rows, size_t row_stride, void* dst);
void packed_dot_bf16(int64_t n, const void* w, const void* a, size_t a_stride, const int32_t* a_sums,
                     int64_t sums_stride, int cols, float* y, int64_t y_stride);

// Element-wise kernels (see elementwise.cpp).
void axpy_f16(int64_t n, float alpha, const uint16_t* x, float* y);
void swiglu(int64_t n, const float* gate, const float* up, float* h);
void rms_norm(const float* x, const float* w, float* y, int64_t rows, int64_t n, float eps);

// Attention over F16 keys and values (see attention_f16.cpp and kernel_table.h).
void attn_scores_f16(int64_t head_dim, int n_q, const float* q, int64_t q_stride, int64_t n_cells,
                     const uint16_t* const* k_rows, float* scores, int64_t scores_stride);
void attn_softmax_f16(int64_t n, float scale, float* scores, uint16_t* probs);
void attn_values_f16(int64_t head_dim, int n_q, const uint16_t* p, int64_t p_stride, int64_t n_cells,
                     const uint16_t* const* v_rows, float* out, int64_t out_stride);
// exp(x) as attn_softmax_f16 computes it: the operations of the AVX2 tables' exp (lanes.h,
// exp_ps, shared with SwiGLU) in scalar code. 0 below kAttnExpLowest.
inline constexpr float kAttnExpLowest = -86.6f;
float attn_exp(float x);

}  // namespace cellserve::engine::kernels::reference
