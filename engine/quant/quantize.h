// Scalar reference conversions between F32 and every stored tensor type.
//
// These are the specification the SIMD kernels are tested against: plain loops, never
// optimised. Block layouts are in block_types.h.
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
// the same algorithm as llama.cpp's reference quantizer for that type (quantize_row_*_ref).
// REQUIRES: can_quantize(type), n % ggml_block_size(type) == 0.
void quantize_row(GgmlType type, const float* src, void* dst, int64_t n);

}  // namespace cellserve::engine
