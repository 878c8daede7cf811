// The Gated DeltaNet kernels of Qwen3.5's linear-attention layers (scalar reference): the causal
// depthwise convolution that feeds them, and the gated delta rule in two equivalent forms — the
// token-by-token recurrence (decode) and the chunked form (prefill), which processes a block of
// tokens with matrix products and reaches the same state and outputs up to float rounding.
//
// The arithmetic follows ggml-cpu's GGML_OP_SSM_CONV and GGML_OP_GATED_DELTA_NET (and the
// chunked graph of llama.cpp's src/models/delta-net-base.cpp). Per token t of one head:
//   S' = exp(g_t) · S                       decay (g_t <= 0 is a log decay)
//   u  = beta_t · (v_t − S'ᵀ k_t)           the delta-rule correction
//   S  = S' + k_t uᵀ                        rank-1 update
//   o_t = Sᵀ (scale · q_t)                  read-out
// S is a d_k × d_v matrix stored value-major: state[j * d_k + i] = S[i][j] (ggml's layout, so
// the state is one contiguous [d_v][d_k] block per head).
#pragma once

#include <cstdint>
#include <vector>

namespace cellserve::engine::kernels::reference {

// The inputs of one head over `n_tokens` consecutive tokens of one sequence. Token t's vectors
// start at `x + t * x_stride` (strides in floats, so rows may be views into wider buffers).
struct DeltaNetHeadArgs {
  const float* q = nullptr;     // [n_tokens][d_k], L2-normalised, not yet scaled
  const float* k = nullptr;     // [n_tokens][d_k], L2-normalised
  const float* v = nullptr;     // [n_tokens][d_v]
  const float* g = nullptr;     // [n_tokens] log decay (one scalar per token)
  const float* beta = nullptr;  // [n_tokens] update strength in (0, 1)
  int64_t q_stride = 0, k_stride = 0, v_stride = 0, g_stride = 1, beta_stride = 1;
  int64_t n_tokens = 0;
  int64_t d_k = 0;
  int64_t d_v = 0;
  float scale = 1.0f;    // applied to q (1/sqrt(d_k) in Qwen3.5)
  float* out = nullptr;  // [n_tokens][d_v] at out + t * out_stride
  int64_t out_stride = 0;
};

// Runs the recurrence one token at a time, updating `state` ([d_v][d_k]) in place.
void delta_net_recurrent(const DeltaNetHeadArgs& a, float* state);

// Same result through the chunked (WY) form: tokens are taken `chunk_size` at a time (the last
// chunk may be shorter); within a chunk the corrections of all tokens come from one triangular
// solve and the state is updated once per chunk. REQUIRES chunk_size >= 1.
void delta_net_chunked(const DeltaNetHeadArgs& a, float* state, int64_t chunk_size);

// Causal depthwise convolution of `n_tokens` new rows over `n_channels` channels, kernel size
// `kernel` (weights [n_channels][kernel], ggml's ssm_conv1d layout), followed by SiLU:
//   y[t][c] = silu(Σ_j x̂[t + j][c] · w[c][j]),  x̂ = the window's kernel-1 rows, then x.
// `window` ([kernel-1][n_channels]) holds the previous kernel-1 input rows of the sequence and
// is advanced to the last kernel-1 rows of x̂. x rows are x + t * x_stride; y is [n_tokens]
// [n_channels] contiguous.
void causal_conv1d_silu(const float* x, int64_t x_stride, int64_t n_tokens, int64_t n_channels, const float* w,
                        int64_t kernel, float* window, float* y);

// The two halves of causal_conv1d_silu, so that threads can share the channels: y's channels
// [c0, c1), reading the window but not advancing it; then the window's channels [c0, c1)
// advanced, once every value of those channels has been computed (each thread may advance its
// own channels). Each y value is computed exactly as by causal_conv1d_silu. Here the weights
// come tap by tap, `taps` [kernel][n_channels] (conv_taps_by_tap), so a vector of channels reads
// one tap with one load; the model arranges them once, at load.
void causal_conv1d_silu_channels(const float* x, int64_t x_stride, int64_t n_tokens, int64_t n_channels, int64_t c0,
                                 int64_t c1, const float* taps, int64_t kernel, const float* window, float* y);
void causal_conv1d_advance_window(const float* x, int64_t x_stride, int64_t n_tokens, int64_t n_channels, int64_t c0,
                                  int64_t c1, int64_t kernel, float* window);
// w [n_channels][kernel] (ggml's layout) as [kernel][n_channels].
std::vector<float> conv_taps_by_tap(const float* w, int64_t n_channels, int64_t kernel);

// x /= max(‖x‖₂, eps) for `n_rows` rows of `n` floats (ggml_l2_norm).
void l2_norm(float* x, int64_t n_rows, int64_t n, float eps);

}  // namespace cellserve::engine::kernels::reference
