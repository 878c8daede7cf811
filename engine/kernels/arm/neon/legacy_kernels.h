// The NEON (ARMv8 baseline) kernels of the legacy family: activation converters, float and
// blocks-of-32 dot products, and the element-wise kernels. Compiled without extra flags.
#pragma once

#include <cstdint>

namespace cellserve::engine::kernels::arm {

// Activation converters, bit-identical to reference/activation_convert.cpp.
void from_float_f16_neon(const float* src, void* dst, int64_t n);
void from_float_bf16_neon(const float* src, void* dst, int64_t n);
void from_float_q8_0_neon(const float* src, void* dst, int64_t n);
void from_float_q8_1_neon(const float* src, void* dst, int64_t n);
void from_float_q8_k_neon(const float* src, void* dst, int64_t n);

// Float dot products, accumulated in F32 lanes.
float vec_dot_f32_neon(int64_t n, const void* w, const void* a);
float vec_dot_f16_neon(int64_t n, const void* w, const void* a);
float vec_dot_bf16_neon(int64_t n, const void* w, const void* a);

// Blocks-of-32 dot products with widening int8 multiplies (vmull_s8 / vpadalq_s16).
float vec_dot_q4_0_neon(int64_t n, const void* w, const void* a);
float vec_dot_q4_1_neon(int64_t n, const void* w, const void* a);
float vec_dot_q5_0_neon(int64_t n, const void* w, const void* a);
float vec_dot_q5_1_neon(int64_t n, const void* w, const void* a);
float vec_dot_q8_0_neon(int64_t n, const void* w, const void* a);
float vec_dot_iq4_nl_neon(int64_t n, const void* w, const void* a);

// Element-wise kernels.
void axpy_f16_neon(int64_t n, float alpha, const uint16_t* x, float* y);
void swiglu_neon(int64_t n, const float* gate, const float* up, float* h);

}  // namespace cellserve::engine::kernels::arm
