// Internals shared by the reference (de)quantizers: per-type row functions, block I/O that
// is independent of alignment, and the small numeric helpers of ggml-quants.c.
//
// Not part of the public API (use quantize.h); included only by engine/quant/*.cpp and tests.
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>

#include "base/half.h"
#include "engine/quant/block_types.h"

namespace cellserve::engine::quant {

// The IQ4_NL / IQ4_XS codebook (ggml-common.h kvalues_iq4nl), sorted ascending.
extern const int8_t kIq4nlValues[16];

// Loads block `i` of a row that starts at `row` (any alignment).
template <typename Block>
inline Block load_block(const void* row, int64_t i) {
  Block b;
  std::memcpy(&b, static_cast<const unsigned char*>(row) + i * static_cast<int64_t>(sizeof(Block)), sizeof(Block));
  return b;
}

// Stores `b` as block `i` of the row at `row` (any alignment).
template <typename Block>
inline void store_block(void* row, int64_t i, const Block& b) {
  std::memcpy(static_cast<unsigned char*>(row) + i * static_cast<int64_t>(sizeof(Block)), &b, sizeof(Block));
}

// ggml's nearest_int: round to nearest, ties to even, via the 1.5 * 2^23 trick. Exact for
// |x| <= 4194303; beyond that it returns garbage (as ggml does), never UB.
inline int nearest_int(float x) {
  const float biased = x + 12582912.f;
  const int32_t bits = std::bit_cast<int32_t>(biased);
  return (bits & 0x007fffff) - 0x00400000;
}

// Unpacks the 6-bit scale and min of sub-block j (0..7) of a Q4_K / Q5_K block
// (ggml's get_scale_min_k4).
inline void get_scale_min_k4(int j, const uint8_t* q, uint8_t* sc, uint8_t* m) {
  if (j < 4) {
    *sc = q[j] & 63;
    *m = q[j + 4] & 63;
  } else {
    *sc = static_cast<uint8_t>((q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4));
    *m = static_cast<uint8_t>((q[j + 4] >> 4) | ((q[j - 0] >> 6) << 4));
  }
}

// ---- Per-type rows. REQUIRES: n is a multiple of the type's block size; src/dst hold the
// ---- row (ggml_row_size bytes on the quantized side). Any alignment.

void dequantize_row_q4_0(const void* src, float* dst, int64_t n);
void dequantize_row_q4_1(const void* src, float* dst, int64_t n);
void dequantize_row_q5_0(const void* src, float* dst, int64_t n);
void dequantize_row_q5_1(const void* src, float* dst, int64_t n);
void dequantize_row_q8_0(const void* src, float* dst, int64_t n);
void dequantize_row_q2_k(const void* src, float* dst, int64_t n);
void dequantize_row_q3_k(const void* src, float* dst, int64_t n);
void dequantize_row_q4_k(const void* src, float* dst, int64_t n);
void dequantize_row_q5_k(const void* src, float* dst, int64_t n);
void dequantize_row_q6_k(const void* src, float* dst, int64_t n);
void dequantize_row_q8_k(const void* src, float* dst, int64_t n);
void dequantize_row_iq4_nl(const void* src, float* dst, int64_t n);
void dequantize_row_iq4_xs(const void* src, float* dst, int64_t n);

void quantize_row_q4_0(const float* src, void* dst, int64_t n);
void quantize_row_q4_1(const float* src, void* dst, int64_t n);
void quantize_row_q5_0(const float* src, void* dst, int64_t n);
void quantize_row_q5_1(const float* src, void* dst, int64_t n);
void quantize_row_q8_0(const float* src, void* dst, int64_t n);
void quantize_row_q8_1(const float* src, void* dst, int64_t n);
void quantize_row_q2_k(const float* src, void* dst, int64_t n);
void quantize_row_q3_k(const float* src, void* dst, int64_t n);
void quantize_row_q4_k(const float* src, void* dst, int64_t n);
void quantize_row_q5_k(const float* src, void* dst, int64_t n);
void quantize_row_q6_k(const float* src, void* dst, int64_t n);
void quantize_row_q8_k(const float* src, void* dst, int64_t n);
void quantize_row_iq4_nl(const float* src, void* dst, int64_t n);
void quantize_row_iq4_xs(const float* src, void* dst, int64_t n);

}  // namespace cellserve::engine::quant
