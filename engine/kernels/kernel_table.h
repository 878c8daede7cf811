// The kernel table: for every weight type, how activations are converted and how one weight row
// is dotted with one converted activation row. The engine calls kernels only through this table,
// so SIMD implementations (one folder per ISA) plug in by filling a table at start-up.
//
// The design follows ggml-cpu's type traits: each weight type names the format its activations
// take (`activation_type`: F32, F16, BF16, Q8_0, Q8_1 or Q8_K), which is also what makes our
// results agree with llama.cpp's CPU backend to rounding.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "engine/kernels/dot_peak.h"
#include "engine/kernels/reference/delta_net.h"
#include "engine/quant/ggml_type.h"

namespace cellserve::engine::kernels {

// Converts `n` floats to `activation_type` blocks at `dst` (ggml_row_size bytes).
using FromFloatFn = void (*)(const float* src, void* dst, int64_t n);
// y[i] = x[i] rounded to F16 (nearest even, as fp32_to_fp16) and back to float; x and y may alias.
using RoundF16Fn = void (*)(const float* x, float* y, int64_t n);
// Returns the dot product of one weight row `w` and one converted activation row `a`, n elements.
using VecDotFn = float (*)(int64_t n, const void* w, const void* a);
// A register-blocked tile of dot products: `tile_rows` weight rows starting at `w` (each
// `w_stride` bytes apart) with `tile_cols` activation rows starting at `a` (each `a_stride` bytes
// apart), y[c * y_stride + r] = w_r · a_c. Prefill uses it to unpack each weight block once for
// several tokens. Every value must equal the same table's vec_dot for that pair bit for bit, so a
// token's result never depends on which other tokens share its batch.
using TileDotFn = void (*)(int64_t n, const void* w, size_t w_stride, const void* a, size_t a_stride, float* y,
                           int64_t y_stride);
// TileDotFn for `rows` weight rows, 1 <= rows < tile_rows: the rows a matrix leaves past its last
// whole tile, which vec_dot would otherwise take one (row, token) pair at a time.
using TileDotRowsFn = void (*)(int rows, int64_t n, const void* w, size_t w_stride, const void* a, size_t a_stride,
                               float* y, int64_t y_stride);
// y[i] += alpha * x[i] for n F16 values x (attention's weighted sum over the F16 V cache).
using AxpyF16Fn = void (*)(int64_t n, float alpha, const uint16_t* x, float* y);
// h[i] = silu(gate[i]) * up[i] = gate[i] / (1 + exp(-gate[i])) * up[i]; h may alias gate.
using SwigluFn = void (*)(int64_t n, const float* gate, const float* up, float* h);
// For `rows` rows of n floats: y[r] = x[r] * (1 / sqrt(mean + eps)) * w (no w when null), where
// mean is the row's sum of float squares added in double in index order, over n (ggml's
// rms_norm, bit for bit). y is x or does not overlap it.
using RmsNormFn = void (*)(const float* x, const float* w, float* y, int64_t rows, int64_t n, float eps);

// Packed weights (optional, per type): at load time the rows of a matrix are re-laid out in
// groups of kPackedRows, so one kernel call dots 8 rows with up to kPackedMaxCols activation rows
// and keeps one float lane per row (no horizontal sums). The layout is the same for every table
// (see reference/packed_legacy.cpp, packed_q4_k.cpp): for each block b of the group, the 8 rows'
// scales, then the rows' quant bytes interleaved in 4-byte units (unit u: row r's bytes 4u..4u+3
// at 32u + 4r). A group's block takes packed_block_bytes (8 x the block size for Q4_0 / Q8_0).
inline constexpr int kPackedRows = 8;
inline constexpr int kPackedMaxCols = 4;
// Packs kPackedRows rows of n elements (`row_stride` bytes apart) into `dst`.
using PackFn = void (*)(int64_t n, const void* rows, size_t row_stride, void* dst);
// y[c * y_stride + r] = row r of the packed group `w` . activation row c (at a + c * a_stride),
// for r < kPackedRows and c < cols <= kPackedMaxCols. `a_sums[c * sums_stride + b]` is the sum of
// the quants of activation block b of row c (activation_block_sums; used by Q4_0, ignored by
// types whose activations carry their own sums). Per row and column the float arithmetic is fixed
// (e.g. acc = fma(float(integer dot of block b), d_w * d_a, acc) over b in order, see each
// reference), so a value never depends on `cols` or on the table, and equals the scalar reference
// bit for bit.
using PackedDotFn = void (*)(int64_t n, const void* w, const void* a, size_t a_stride, const int32_t* a_sums,
                             int64_t sums_stride, int cols, float* y, int64_t y_stride);

// Attention over an F16 KV cache (head_dim a multiple of 8). Scores: scores[q * scores_stride + j]
// = q_q . k_rows[j] for q < n_q query rows (q_stride floats apart, values exactly representable
// in F16) and j < n_cells. Each score's order is fixed: lane l (d = l mod 8) accumulates by fma in
// order of d, then the lanes are summed ((l0+l4)+(l2+l6))+((l1+l5)+(l3+l7)); so a score never
// depends on n_q, n_cells or the table.
using AttnScoresF16Fn = void (*)(int64_t head_dim, int n_q, const float* q, int64_t q_stride, int64_t n_cells,
                                 const uint16_t* const* k_rows, float* scores, int64_t scores_stride);
// Softmax of one row of n >= 1 scores into F16 probabilities, as ggml's: s = scores[j] * scale,
// e = exp(s - max s), probs[j] = f16(e * float(1 / sum e)). Fixed order: exp is the polynomial of
// reference::attn_exp, the sum is in double over 8 lanes (lane j mod 8, in order of j) summed as
// the scores' lanes. `scores` is overwritten (with e).
using AttnSoftmaxF16Fn = void (*)(int64_t n, float scale, float* scores, uint16_t* probs);
// Weighted sums of values for n_q rows of F16 probabilities (p_stride apart): out[q * out_stride
// + d] += sum over j of p[q][j] * v_rows[j][d], by fma in order of j, starting from the value
// already in out. So a row's sum over cells [0, n) may be split into calls over [0, m) and
// [m, n) with the same result, whatever n_q each call has.
using AttnValuesF16Fn = void (*)(int64_t head_dim, int n_q, const uint16_t* p, int64_t p_stride, int64_t n_cells,
                                 const uint16_t* const* v_rows, float* out, int64_t out_stride);

// The Gated DeltaNet of one head (math: reference/delta_net.h): token by token, and chunked.
using DeltaNetRecurrentFn = void (*)(const reference::DeltaNetHeadArgs& a, float* state);
using DeltaNetChunkedFn = void (*)(const reference::DeltaNetHeadArgs& a, float* state, int64_t chunk_size);
// The causal depthwise convolution + SiLU of channels [c0, c1) (reference::causal_conv1d_silu_channels,
// taps [kernel][n_channels]); a channel's value does not depend on the range it is computed in.
using CausalConvSiluFn = void (*)(const float* x, int64_t x_stride, int64_t n_tokens, int64_t n_channels, int64_t c0,
                                  int64_t c1, const float* taps, int64_t kernel, const float* window, float* y);

struct WeightKernels {
  bool supported = false;
  GgmlType activation_type = GgmlType::F32;
  VecDotFn vec_dot = nullptr;
  TileDotFn tile_dot = nullptr;  // optional; when set, tile_rows and tile_cols are >= 1
  int tile_rows = 0;
  int tile_cols = 0;
  TileDotRowsFn tile_dot_rows = nullptr;  // optional, with tile_dot: the same tile with fewer rows
  PackFn pack = nullptr;                  // optional, with packed_dot: the matmul then runs on packed rows
  PackedDotFn packed_dot = nullptr;
  // Optional: packed_dot over two adjacent groups, w and the next one (n / block size x
  // packed_block_bytes further), the second's rows written at y[c * y_stride + 8 + r]. Every value
  // equals packed_dot's bit for bit; it only saves loads (each activation serves 16 rows).
  PackedDotFn packed_dot_pair = nullptr;
  int packed_block_bytes = 0;  // bytes of one block of a packed group of kPackedRows rows
  int packed_n_multiple = 1;   // rows are packed only when n is a multiple of this (and of the block size)
};

// Sums of the int8 quants of each 32-element block of a Q8_0 activation row (n elements).
void activation_block_sums(const void* a, int64_t n, int32_t* sums);

struct KernelTable {
  std::string_view isa;                      // "generic", "avx2", "neon", "neon-dotprod", "neon-i8mm"
  std::array<WeightKernels, 40> weights{};   // indexed by GgmlType value
  std::array<FromFloatFn, 40> from_float{};  // activation converters, indexed by activation type
  RoundF16Fn round_f16 = nullptr;
  AxpyF16Fn axpy_f16 = nullptr;
  SwigluFn swiglu = nullptr;
  RmsNormFn rms_norm = nullptr;
  AttnScoresF16Fn attn_scores_f16 = nullptr;
  AttnSoftmaxF16Fn attn_softmax_f16 = nullptr;
  AttnValuesF16Fn attn_values_f16 = nullptr;
  DeltaNetRecurrentFn delta_net_recurrent = nullptr;
  DeltaNetChunkedFn delta_net_chunked = nullptr;
  CausalConvSiluFn causal_conv1d_silu_channels = nullptr;
  // The table's int8 and BF16 dot-product peak loops (dot_peak.h): what `bench --peak` measures.
  DotPeakFn int8_dot_peak = nullptr;
  DotPeakFn bf16_dot_peak = nullptr;

  const WeightKernels& for_weight(GgmlType t) const { return weights[static_cast<size_t>(t)]; }
  FromFloatFn converter(GgmlType activation_type) const { return from_float[static_cast<size_t>(activation_type)]; }
};

// The scalar reference table: every supported type, plain loops. Always available.
const KernelTable& reference_kernels();

// Every table this host can run, the reference first and the preferred one last.
std::vector<const KernelTable*> available_kernels();

// The table chosen for this process: the best the CPU supports, or the one named by the
// CELLSERVE_ISA environment variable. Resolved once; thread-safe.
const KernelTable& active_kernels();

// Resolves an ISA name ("generic", ...) to a table; InvalidArgument when unknown or when the
// host CPU cannot run it.
Result<const KernelTable*> kernels_for_isa(std::string_view isa);

}  // namespace cellserve::engine::kernels
