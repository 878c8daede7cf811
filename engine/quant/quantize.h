// Scalar reference conversions between F32 and every stored tensor type.
//
// These are the specification the SIMD kernels are tested against: plain loops, never
// optimised. Block layouts are in block_types.h.
//
// Supported: dequantize F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q2_K, Q3_K, Q4_K, Q5_K,
// Q6_K, Q8_K, IQ4_NL, IQ4_XS (bit-exact with llama.cpp's dequantize_row_*); quantize the same
// types plus Q8_1. All functions are pure and thread-safe; src and dst may have any alignment
// and must not overlap.
#pragma once

#include <cstdint>

#include "engine/quant/ggml_type.h"

namespace cellserve::engine {

// True when dequantize_row supports `type`.
bool can_dequantize(GgmlType type);

// Writes the `n` values of one row stored as `type` at `src` to `dst` as F32.
// REQUIRES: can_dequantize(type), n % ggml_block_size(type) == 0.
void dequantize_row(GgmlType type, const void* src, float* dst, int64_t n);

// True when quantize_row supports `type`.
bool can_quantize(GgmlType type);

// Encodes `n` F32 values from `src` as `type` into `dst` (ggml_row_size(type, n) bytes), with
// the same algorithm as llama.cpp's reference quantizer for that type (quantize_row_*_ref),
// which is what llama-quantize runs without an importance matrix: the bytes are identical
// (verified on the shared/testdata models). One exception: IQ4_NL follows quantize_iq4_nl
// (scale search, what llama-quantize writes), not quantize_row_iq4_nl_ref (no search).
// REQUIRES: can_quantize(type), n % ggml_block_size(type) == 0, every value finite.
void quantize_row(GgmlType type, const float* src, void* dst, int64_t n);

}  // namespace cellserve::engine
