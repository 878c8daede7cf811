// The building blocks every architecture shares: norms, matrix products through the kernel
// table, rotary embeddings, attention over the KV cache, SwiGLU. Each follows the arithmetic of
// the corresponding ggml-cpu op so results agree with llama.cpp to rounding.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <vector>

#include "engine/gguf/tensor_view.h"
#include "engine/runtime/kv_cache.h"
#include "engine/runtime/thread_pool.h"

namespace cellserve::engine {

// y[t] = rms_norm(x[t]) * w for `n_rows` rows of `n` floats (w may be empty: no scaling).
// Sums of squares in double, as ggml does. x and y may alias. Rows are split over the pool's
// threads when there are enough of them.
void rms_norm(const float* x, std::span<const float> w, float* y, int64_t n_rows, int64_t n, float eps,
              ThreadPool& pool);

// y[t][r] = W[r] · x[t] for t < n_tokens. W is [n_in, n_out] in ggml order; x is
// [n_tokens][n_in], y is [n_tokens][n_out]. Activations are converted to the weight type's
// activation format first (the kernel table's choice), rows are split over the pool's threads.
void matmul(const TensorView& w, const float* x, int64_t n_tokens, float* y, ThreadPool& pool);

// A weight and where its product goes, for matmul_shared_input.
struct MatmulOut {
  const TensorView* w;
  float* y;
};

// matmul(*o.w, x, n_tokens, o.y) for every o of `outs`, all with the same input (a layer's Q, K
// and V; its gate and up). In decode, where each product is a short job, the weights that take
// the same activations run as one job on activations converted once. Values equal separate
// matmuls bit for bit.
void matmul_shared_input(std::span<const MatmulOut> outs, const float* x, int64_t n_tokens, ThreadPool& pool);

// y[t][i] += b[i].
void add_bias(float* y, std::span<const float> b, int64_t n_tokens);

// Copies row `token` of an embedding matrix (any dequantizable type) into `out` as floats.
void get_embedding_row(const TensorView& embd, int32_t token, float* out);

// Norm: rotate adjacent pairs (x[2i], x[2i+1]). Neox: rotate halves (x[i], x[i + n_rot/2]).
// Mrope / Imrope (ggml_rope_multi): NeoX pairs whose angle comes from one of four position
// streams chosen per pair by `sections` — contiguous sections (Mrope) or interleaved ones
// (Imrope, Qwen3-VL / Qwen3.5). For text all streams are the token position except the fourth,
// which is 0, so a pair mapped to it is not rotated.
enum class RopeType { Norm, Neox, Mrope, Imrope };

struct RopeParams {
  RopeType type = RopeType::Norm;
  int n_rot = 0;  // rotated dimensions per head (the first n_rot)
  float freq_base = 10000.0f;
  float freq_scale = 1.0f;  // 1 / linear scaling factor
  float ext_factor = 0.0f;  // YaRN extrapolation mix (0: off)
  float attn_factor = 1.0f;
  float beta_fast = 32.0f;
  float beta_slow = 1.0f;
  int n_ctx_orig = 0;
  std::vector<float> freq_factors;          // per rotated pair (rope_freqs.weight), empty when absent
  std::array<int, 4> sections{0, 0, 0, 0};  // Mrope/Imrope: pairs per position stream
};

// The cos and sin of every rotated pair for each token at its position: angles is
// [n_tokens][n_rot], (cos, sin) per pair, scaled as ggml's rope cache. A forward pass computes them
// once; every layer's queries and keys are rotated by the same ones.
void rope_angles(const int32_t* pos, int64_t n_tokens, const RopeParams& p, float* angles, ThreadPool& pool);

// Rotates `n_heads` heads of `head_dim` floats for each token by its rope_angles, in place.
// x is [n_tokens][n_heads][head_dim]. Tokens are split over the pool's threads.
void rope(float* x, const float* angles, int64_t n_tokens, int64_t n_heads, int64_t head_dim, const RopeParams& p,
          ThreadPool& pool);

// Attention of every token of a batch over the KV cache cells its sequence can see.
struct AttentionArgs {
  const float* q = nullptr;  // [n_tokens][n_head][head_dim_k], roped
  const int32_t* pos = nullptr;
  const int32_t* seq = nullptr;
  int64_t n_tokens = 0;
  int64_t n_head = 0;
  int64_t kv_layer = 0;
  float scale = 1.0f;
  float* out = nullptr;  // [n_tokens][n_head][head_dim_v]
};
void attention(const AttentionArgs& a, const KvCache& kv, ThreadPool& pool);

// Stores k [n_tokens][n_kv_head][hd_k] and v (same with hd_v) of layer `kv_layer` into `cells`.
void store_kv(KvCache& kv, int64_t kv_layer, const float* k, const float* v, const std::vector<int32_t>& cells);

// h[i] = silu(gate[i]) * up[i] for n floats (gate and h may alias), split over the pool when long.
void swiglu(const float* gate, const float* up, float* h, int64_t n, ThreadPool& pool);

// Work below this many floats runs on the calling thread: handing it to the pool costs more.
inline constexpr int64_t kParallelFloats = 16 * 1024;

// fn(i0, i1) over the items [0, n_items) (rows, tokens, floats) that together hold n_floats floats
// of work: on the calling thread below kParallelFloats, else split over the pool's threads.
template <typename Fn>
void parallel_for_work(ThreadPool& pool, int64_t n_items, int64_t n_floats, const Fn& fn) {
  if (n_floats < kParallelFloats) return fn(0, n_items);
  pool.parallel_for(n_items, fn);
}

// x[i] += y[i] for n floats (the residual stream), on the pool's threads when large.
void add_in_place(float* x, const float* y, int64_t n, ThreadPool& pool);

}  // namespace cellserve::engine
