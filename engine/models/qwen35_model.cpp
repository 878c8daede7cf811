// qwen35 (Qwen3.5 dense): a hybrid of Gated DeltaNet ("linear attention") layers and gated
// full-attention layers — by default every `full_attention_interval`-th layer is full
// attention, the others are recurrent. Every layer: x += mixer(rms_norm(x)); x +=
// swiglu_ffn(rms_norm(x)) with the second norm named post_attention_norm.
//
// Gated DeltaNet layer (llama.cpp src/models/qwen35.cpp, build_layer_attn_linear):
//   qkv = W_qkv x → causal depthwise conv (kernel ssm.conv_kernel, rolling window per sequence)
//   → SiLU → split q [Hk][dk], k [Hk][dk], v [Hv][dv]; q, k L2-normalised (eps = rms eps);
//   beta = sigmoid(W_beta x), g = ssm_a · softplus(W_alpha x + ssm_dt.bias) (ssm_a = −exp(A_log)
//   as stored); value head h reads key head h mod Hk (ggml_repeat); gated delta rule with q
//   scaled by 1/sqrt(dk) (kernels/reference/delta_net.h); o = rms_norm(o)·ssm_norm ⊙ silu(W_gate x)
//   per head; out = W_ssm_out o.
// Full-attention layer (build_layer_attn): W_q x gives per head [query | output gate]; QK-norm;
//   partial rotary embedding of rope.dimension_count dims in the interleaved multi-section
//   layout (IMROPE, rope.dimension_sections); GQA over the KV cache; out = W_o (attn ⊙ σ(gate)).
// Layers past block_count − nextn_predict_layers are multi-token-prediction blocks: not bound,
// not run.
#include <algorithm>
#include <cmath>
#include <string>

#include "base/check.h"
#include "engine/kernels/kernel_table.h"
#include "engine/kernels/reference/delta_net.h"
#include "engine/lora/lora_apply.h"
#include "engine/models/decoder_model.h"
#include "engine/models/registry.h"
#include "engine/models/scratch.h"
#include "engine/quant/quantize.h"

namespace cellserve::engine {
namespace {

namespace ref = kernels::reference;

// Prefill processes runs of a sequence's tokens this many at a time with the chunked delta rule
// (llama.cpp's chunk size); a single token takes the recurrent step.
constexpr int64_t kDeltaNetChunk = 64;

struct Qwen35Hparams {
  DecoderHparams base;          // embedding, FFN, full-attention and rope sizes; base.n_layer = main layers
  int64_t conv_kernel = 0;      // ssm.conv_kernel
  int64_t n_k_heads = 0;        // ssm.group_count
  int64_t head_dim_k = 0;       // ssm.state_size
  int64_t n_v_heads = 0;        // ssm.time_step_rank
  int64_t head_dim_v = 0;       // ssm.inner_size / n_v_heads
  std::vector<bool> recurrent;  // per main layer

  int64_t conv_channels() const { return 2 * n_k_heads * head_dim_k + n_v_heads * head_dim_v; }
  int64_t value_dim() const { return n_v_heads * head_dim_v; }
};

struct LinearAttention {
  TensorView w_qkv;              // [n_embd, conv_channels]: q, k, v of every head
  TensorView w_gate;             // [n_embd, value_dim]: z, the output gate
  TensorView w_beta;             // [n_embd, n_v_heads]
  TensorView w_alpha;            // [n_embd, n_v_heads]
  TensorView w_out;              // [value_dim, n_embd]
  std::vector<float> conv_taps;  // [conv_kernel][conv_channels] (conv_taps_by_tap)
  std::vector<float> dt_bias;    // [n_v_heads]
  std::vector<float> a;          // [n_v_heads], −exp(A_log)
  std::vector<float> norm;       // [head_dim_v]
};

struct FullAttention {
  TensorView wq;                      // [n_embd, n_head * 2 * head_dim]: per head query then gate
  TensorView wk;                      // [n_embd, n_head_kv * head_dim]
  TensorView wv;                      // [n_embd, n_head_kv * head_dim]
  TensorView wo;                      // [n_head * head_dim, n_embd]
  std::vector<float> q_norm, k_norm;  // [head_dim]
};

struct Qwen35Layer {
  bool recurrent = false;
  int64_t slot = 0;              // index among the recurrent layers, or KV-cache layer
  std::vector<float> attn_norm;  // [n_embd]
  std::vector<float> post_norm;  // [n_embd], before the FFN
  LinearAttention lin;
  FullAttention full;
  TensorView w_gate, w_up;  // [n_embd, n_ff]
  TensorView w_down;        // [n_ff, n_embd]
};

// The batch's tokens grouped by sequence, each group in batch order.
struct SeqGroup {
  SeqId seq = 0;
  std::vector<int64_t> tokens;  // batch indices
};

std::vector<SeqGroup> group_by_sequence(const Batch& batch) {
  std::vector<SeqGroup> groups;
  for (int64_t t = 0; t < batch.size(); ++t) {
    const SeqId s = batch.seq[static_cast<size_t>(t)];
    auto it = std::find_if(groups.begin(), groups.end(), [&](const SeqGroup& g) { return g.seq == s; });
    if (it == groups.end()) it = groups.insert(groups.end(), SeqGroup{s, {}});
    it->tokens.push_back(t);
  }
  return groups;
}

float sigmoid(float x) { return 1.0f / (1.0f + std::exp(-x)); }
float silu(float x) { return x / (1.0f + std::exp(-x)); }
float softplus(float x) { return x > 20.0f ? x : std::log(1.0f + std::exp(x)); }  // ggml's threshold

class Qwen35Model final : public Model {
 public:
  Qwen35Model(std::shared_ptr<const GgufFile> file, ModelInfo info, Qwen35Hparams hp)
      : Model(std::move(file), std::move(info)), hp_(std::move(hp)) {}

  Status bind(TensorBinder& b);
  void forward(const ForwardArgs& args) const override;

 private:
  Status bind_linear(TensorBinder& b, const std::string& p, LinearAttention& l);
  void linear_attention(const Qwen35Layer& l, const ForwardArgs& args, const std::vector<SeqGroup>& groups,
                        const float* cur, float* out) const;
  void full_attention(const Qwen35Layer& l, const ForwardArgs& args, const float* rope_angles, const float* cur,
                      float* out) const;
  void ffn(const Qwen35Layer& l, const ForwardArgs& args, const float* cur, int64_t n, float* out) const;

  Qwen35Hparams hp_;
  TensorView token_embd_;           // [n_embd, n_vocab]
  std::vector<float> output_norm_;  // [n_embd]
  TensorView output_;               // [n_embd, n_vocab]; token_embd_ when tied
  std::vector<Qwen35Layer> layers_;
};

Status Qwen35Model::bind_linear(TensorBinder& b, const std::string& p, LinearAttention& l) {
  const int64_t E = hp_.base.n_embd;
  const int64_t C = hp_.conv_channels();
  const int64_t K = hp_.conv_kernel;
  l.w_qkv = b.projection(p + "attn_qkv.weight", {E, C});
  l.w_gate = b.projection(p + "attn_gate.weight", {E, hp_.value_dim()});
  l.w_beta = b.projection(p + "ssm_beta.weight", {E, hp_.n_v_heads});
  l.w_alpha = b.projection(p + "ssm_alpha.weight", {E, hp_.n_v_heads});
  l.w_out = b.projection(p + "ssm_out.weight", {hp_.value_dim(), E});
  l.dt_bias = b.vector(p + "ssm_dt.bias", hp_.n_v_heads);
  l.a = b.vector(p + "ssm_a", hp_.n_v_heads);
  l.norm = b.vector(p + "ssm_norm.weight", hp_.head_dim_v);
  // The convolution kernel is tiny and read per channel: keep it as floats. Rows of `kernel`
  // elements rule out block-quantized types (llama-quantize keeps it F32).
  const TensorView conv = b.weight(p + "ssm_conv1d.weight", {K, C});
  if (conv.data.empty()) return b.status();
  if (ggml_block_size(conv.type) != 1 || !can_dequantize(conv.type)) {
    return Status::unimplemented(p + "ssm_conv1d.weight: tensor type " + std::string(ggml_type_name(conv.type)) +
                                 " is not supported (F32, F16, BF16)");
  }
  std::vector<float> by_channel(static_cast<size_t>(K * C));
  dequantize_row(conv.type, conv.data.data(), by_channel.data(), K * C);
  l.conv_taps = ref::conv_taps_by_tap(by_channel.data(), C, K);
  return b.status();
}

Status Qwen35Model::bind(TensorBinder& b) {
  const DecoderHparams& d = hp_.base;
  const int64_t E = d.n_embd;
  token_embd_ = b.lookup_table("token_embd.weight", {E, d.n_vocab});
  output_norm_ = b.vector("output_norm.weight", E);
  output_ = b.projection("output.weight", {E, d.n_vocab}, /*required=*/false);
  if (output_.data.empty()) output_ = b.pack(token_embd_);  // tied embeddings, packed for the output matmul
  layers_.resize(static_cast<size_t>(d.n_layer));
  int64_t n_recurrent = 0;
  int64_t n_attention = 0;
  for (int64_t i = 0; i < d.n_layer; ++i) {
    Qwen35Layer& l = layers_[static_cast<size_t>(i)];
    const std::string p = "blk." + std::to_string(i) + ".";
    if (b.has(p + "ffn_gate_inp.weight")) {
      return Status::unimplemented(p + "ffn_gate_inp.weight: mixture-of-experts layers are not supported");
    }
    l.recurrent = hp_.recurrent[static_cast<size_t>(i)];
    l.slot = l.recurrent ? n_recurrent++ : n_attention++;
    l.attn_norm = b.vector(p + "attn_norm.weight", E);
    l.post_norm = b.vector(p + "post_attention_norm.weight", E);
    if (l.recurrent) {
      CS_RETURN_IF_ERROR(bind_linear(b, p, l.lin));
    } else {
      const int64_t hd = d.head_dim_k;
      l.full.wq = b.projection(p + "attn_q.weight", {E, d.n_head * hd * 2});
      l.full.wk = b.projection(p + "attn_k.weight", {E, d.n_head_kv * hd});
      l.full.wv = b.projection(p + "attn_v.weight", {E, d.n_head_kv * hd});
      l.full.wo = b.projection(p + "attn_output.weight", {d.n_head * hd, E});
      l.full.q_norm = b.vector(p + "attn_q_norm.weight", hd);
      l.full.k_norm = b.vector(p + "attn_k_norm.weight", hd);
    }
    l.w_gate = b.projection(p + "ffn_gate.weight", {E, d.n_ff});
    l.w_up = b.projection(p + "ffn_up.weight", {E, d.n_ff});
    l.w_down = b.projection(p + "ffn_down.weight", {d.n_ff, E});
  }
  projections_.insert(b.projections().begin(), b.projections().end());
  resident_weights_ = b.resident();
  return b.status();
}

void Qwen35Model::linear_attention(const Qwen35Layer& l, const ForwardArgs& args, const std::vector<SeqGroup>& groups,
                                   const float* cur, float* out) const {
  ThreadPool& pool = *args.pool;
  const int64_t n = args.batch->size();
  const int64_t C = hp_.conv_channels();
  const int64_t V = hp_.value_dim();
  const int64_t Hk = hp_.n_k_heads, Hv = hp_.n_v_heads, dk = hp_.head_dim_k, dv = hp_.head_dim_v;
  const LinearAttention& w = l.lin;
  const kernels::KernelTable& table = kernels::active_kernels();

  // Input projections for the whole batch.
  ScratchFrame scratch;
  const std::span<float> qkv = scratch.take(static_cast<size_t>(n * C)), z = scratch.take(static_cast<size_t>(n * V));
  const std::span<float> beta = scratch.take(static_cast<size_t>(n * Hv)),
                         g = scratch.take(static_cast<size_t>(n * Hv));
  const MatmulOut projections[] = {
      {&w.w_qkv, qkv.data()}, {&w.w_gate, z.data()}, {&w.w_beta, beta.data()}, {&w.w_alpha, g.data()}};
  project_shared_input(projections, cur, n, pool, args.lora);
  for (int64_t t = 0; t < n; ++t) {
    for (int64_t h = 0; h < Hv; ++h) {
      const auto i = static_cast<size_t>(t * Hv + h);
      beta[i] = sigmoid(beta[i]);
      g[i] = softplus(g[i] + w.dt_bias[static_cast<size_t>(h)]) * w.a[static_cast<size_t>(h)];
    }
  }

  // Per sequence, in batch order: convolution over its tokens (advancing its window), then the
  // normalised q and k. Each group's rows are gathered into contiguous buffers.
  // Scratch, not fresh vectors: at 512 tokens these are ~30 MB a layer, and zeroing them (with a
  // page fault per 4 KiB once glibc hands them back) was a fifth of a 7,000-token prefill.
  struct Work {
    std::span<float> x, g, beta, o;  // [n_s][C], [n_s][Hv], [n_s][Hv], [n_s][V]
    float* state = nullptr;
  };
  std::vector<Work> work(groups.size());
  for (size_t gi = 0; gi < groups.size(); ++gi) {
    const SeqGroup& grp = groups[gi];
    Work& wk = work[gi];
    const auto ns = static_cast<int64_t>(grp.tokens.size());
    const std::span<float> in = scratch.take(static_cast<size_t>(ns * C));
    wk.g = scratch.take(static_cast<size_t>(ns * Hv));
    wk.beta = scratch.take(static_cast<size_t>(ns * Hv));
    for (int64_t j = 0; j < ns; ++j) {
      const int64_t t = grp.tokens[static_cast<size_t>(j)];
      std::copy_n(qkv.begin() + t * C, C, in.begin() + j * C);
      std::copy_n(g.begin() + t * Hv, Hv, wk.g.begin() + j * Hv);
      std::copy_n(beta.begin() + t * Hv, Hv, wk.beta.begin() + j * Hv);
    }
    wk.x = scratch.take(static_cast<size_t>(ns * C));
    // A long prompt's convolution is millions of exps: the threads share the channels.
    float* window = args.recurrent->conv(l.slot, grp.seq);
    // Each thread advances the window of its own channels once it has read them: no serial step.
    pool.parallel_for(C, [&](int64_t c0, int64_t c1) {
      table.causal_conv1d_silu_channels(in.data(), C, ns, C, c0, c1, w.conv_taps.data(), hp_.conv_kernel, window,
                                        wk.x.data());
      ref::causal_conv1d_advance_window(in.data(), C, ns, C, c0, c1, hp_.conv_kernel, window);
    });
    pool.parallel_for(ns, [&](int64_t j0, int64_t j1) {
      for (int64_t j = j0; j < j1; ++j) ref::l2_norm(wk.x.data() + j * C, 2 * Hk, dk, hp_.base.rms_eps);  // q, k heads
    });
    wk.o = scratch.take(static_cast<size_t>(ns * V));
    wk.state = args.recurrent->ssm(l.slot, grp.seq);
  }

  // The delta rule, one (sequence, value head) pair per job.
  const auto n_jobs = static_cast<int64_t>(groups.size()) * Hv;
  pool.parallel_for(n_jobs, [&](int64_t j0, int64_t j1) {
    for (int64_t job = j0; job < j1; ++job) {
      Work& wk = work[static_cast<size_t>(job / Hv)];
      const int64_t h = job % Hv;
      const int64_t kh = h % Hk;  // value head h reads key head h mod Hk
      ref::DeltaNetHeadArgs a;
      a.n_tokens = static_cast<int64_t>(wk.g.size()) / Hv;
      a.d_k = dk;
      a.d_v = dv;
      a.q = wk.x.data() + kh * dk;
      a.k = wk.x.data() + (Hk + kh) * dk;
      a.v = wk.x.data() + 2 * Hk * dk + h * dv;
      a.q_stride = a.k_stride = a.v_stride = C;
      a.g = wk.g.data() + h;
      a.beta = wk.beta.data() + h;
      a.g_stride = a.beta_stride = Hv;
      a.scale = 1.0f / std::sqrt(static_cast<float>(dk));
      a.out = wk.o.data() + h * dv;
      a.out_stride = V;
      float* state = wk.state + h * dk * dv;
      if (a.n_tokens == 1) {
        table.delta_net_recurrent(a, state);
      } else {
        table.delta_net_chunked(a, state, kDeltaNetChunk);
      }
    }
  });

  // Gated RMSNorm per head, back in batch order, then the output projection.
  const std::span<float> core = scratch.take(static_cast<size_t>(n * V));
  for (size_t gi = 0; gi < groups.size(); ++gi) {
    const std::vector<int64_t>& toks = groups[gi].tokens;
    for (size_t j = 0; j < toks.size(); ++j) {
      std::copy_n(work[gi].o.begin() + static_cast<int64_t>(j) * V, V, core.begin() + toks[j] * V);
    }
  }
  rms_norm(core.data(), w.norm, core.data(), n * Hv, dv, hp_.base.rms_eps, pool);
  for (size_t i = 0; i < core.size(); ++i) core[i] *= silu(z[i]);
  project(w.w_out, core.data(), n, out, pool, args.lora);
}

void Qwen35Model::full_attention(const Qwen35Layer& l, const ForwardArgs& args, const float* rope_angles,
                                 const float* cur, float* out) const {
  const DecoderHparams& d = hp_.base;
  const Batch& batch = *args.batch;
  ThreadPool& pool = *args.pool;
  const int64_t n = batch.size();
  const int64_t hd = d.head_dim_k;
  const int64_t q_dim = d.n_head * hd;
  const int64_t kv_dim = d.n_head_kv * hd;
  // The joint projection holds, per head, hd query values then hd gate values.
  ScratchFrame scratch;
  const std::span<float> qg = scratch.take(static_cast<size_t>(n * 2 * q_dim));
  const std::span<float> q = scratch.take(static_cast<size_t>(n * q_dim)),
                         gate = scratch.take(static_cast<size_t>(n * q_dim));
  const std::span<float> k = scratch.take(static_cast<size_t>(n * kv_dim)),
                         v = scratch.take(static_cast<size_t>(n * kv_dim));
  const MatmulOut qkv[] = {{&l.full.wq, qg.data()}, {&l.full.wk, k.data()}, {&l.full.wv, v.data()}};
  project_shared_input(qkv, cur, n, pool, args.lora);
  for (int64_t r = 0; r < n * d.n_head; ++r) {
    std::copy_n(qg.begin() + r * 2 * hd, hd, q.begin() + r * hd);
    std::copy_n(qg.begin() + r * 2 * hd + hd, hd, gate.begin() + r * hd);
  }
  // QK-norm, partial multi-section rotary embedding, then attention over the cache.
  rms_norm(q.data(), l.full.q_norm, q.data(), n * d.n_head, hd, d.rms_eps, pool);
  rms_norm(k.data(), l.full.k_norm, k.data(), n * d.n_head_kv, hd, d.rms_eps, pool);
  rope(q.data(), rope_angles, n, d.n_head, hd, d.rope, pool);
  rope(k.data(), rope_angles, n, d.n_head_kv, hd, d.rope, pool);
  store_kv(*args.kv, l.slot, k.data(), v.data(), *args.cells);
  const std::span<float> attn = scratch.take(static_cast<size_t>(n * q_dim));
  AttentionArgs a;
  a.q = q.data();
  a.pos = batch.pos.data();
  a.seq = batch.seq.data();
  a.n_tokens = n;
  a.n_head = d.n_head;
  a.kv_layer = l.slot;
  a.scale = 1.0f / std::sqrt(static_cast<float>(hd));
  a.out = attn.data();
  attention(a, *args.kv, pool);
  const auto n_gated = static_cast<int64_t>(attn.size());
  parallel_for_work(pool, n_gated, n_gated, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) attn[i] *= sigmoid(gate[i]);
  });
  project(l.full.wo, attn.data(), n, out, pool, args.lora);
}

void Qwen35Model::ffn(const Qwen35Layer& l, const ForwardArgs& args, const float* cur, int64_t n, float* out) const {
  ThreadPool& pool = *args.pool;
  const int64_t F = hp_.base.n_ff;
  ScratchFrame scratch;
  const std::span<float> gate = scratch.take(static_cast<size_t>(n * F)), up = scratch.take(static_cast<size_t>(n * F));
  const MatmulOut gate_up[] = {{&l.w_gate, gate.data()}, {&l.w_up, up.data()}};
  project_shared_input(gate_up, cur, n, pool, args.lora);
  swiglu(gate.data(), up.data(), gate.data(), n * F, pool);
  project(l.w_down, gate.data(), n, out, pool, args.lora);
}

void Qwen35Model::forward(const ForwardArgs& args) const {
  const Batch& batch = *args.batch;
  const int64_t n = batch.size();
  const int64_t E = hp_.base.n_embd;
  const float eps = hp_.base.rms_eps;
  auto probe = [&](const char* name, int layer, const float* data, int64_t rows, int64_t width) {
    if (args.probe != nullptr) args.probe->record(name, layer, data, rows, width);
  };
  CS_CHECK(args.recurrent != nullptr && args.recurrent->shape().n_layer == info_.recurrent_shape.n_layer)
      << "qwen35 needs the recurrent state its ModelInfo describes";
  const std::vector<SeqGroup> groups = group_by_sequence(batch);

  // Token embeddings: x is the residual stream [n][n_embd].
  ScratchFrame scratch;
  const std::span<float> x = scratch.take(static_cast<size_t>(n * E));
  for (int64_t t = 0; t < n; ++t)
    get_embedding_row(token_embd_, batch.tokens[static_cast<size_t>(t)], x.data() + t * E);

  const std::span<float> cur = scratch.take(static_cast<size_t>(n * E)),
                         branch = scratch.take(static_cast<size_t>(n * E));
  const std::span<float> angles = scratch.take(static_cast<size_t>(n * hp_.base.rope.n_rot));
  rope_angles(batch.pos.data(), n, hp_.base.rope, angles.data(), *args.pool);
  for (size_t il = 0; il < layers_.size(); ++il) {
    const Qwen35Layer& l = layers_[il];
    const int layer = static_cast<int>(il);
    // Token mixer (Gated DeltaNet or gated attention) with residual connection. Its output is
    // probed as "attn_out" for both kinds.
    rms_norm(x.data(), l.attn_norm, cur.data(), n, E, eps, *args.pool);
    probe("attn_norm", layer, cur.data(), n, E);
    if (l.recurrent) {
      linear_attention(l, args, groups, cur.data(), branch.data());
    } else {
      full_attention(l, args, angles.data(), cur.data(), branch.data());
    }
    probe("attn_out", layer, branch.data(), n, E);
    add_in_place(x.data(), branch.data(), n * E, *args.pool);
    // Feed-forward block with residual connection.
    rms_norm(x.data(), l.post_norm, cur.data(), n, E, eps, *args.pool);
    ffn(l, args, cur.data(), n, branch.data());
    probe("ffn_out", layer, branch.data(), n, E);
    add_in_place(x.data(), branch.data(), n * E, *args.pool);
    probe("layer_out", layer, x.data(), n, E);
  }

  // Final norm and output projection, only for the rows that want logits.
  OutputRows rows = gather_output_rows(batch, x.data(), E, args.lora);
  if (rows.n == 0) return;
  rms_norm(rows.x.data(), output_norm_, rows.x.data(), rows.n, E, eps, *args.pool);
  probe("result_norm", -1, rows.x.data(), rows.n, E);
  project(output_, rows.x.data(), rows.n, args.logits, *args.pool, rows.lora_or_null());
  probe("logits", -1, args.logits, rows.n, hp_.base.n_vocab);
}

// Reads an integer array "<arch>.<key>" of exactly `n` entries (fewer for `sections`, padded
// with 0 as llama.cpp's get_key_or_arr does). Returns an empty vector when the key is absent.
Result<std::vector<int64_t>> read_int_array(const GgufFile& file, const std::string& key, size_t max_n) {
  const GgufValue* v = file.find(key);
  if (v == nullptr) return std::vector<int64_t>{};
  const GgufArray* arr = v->as_array();
  if (arr == nullptr || arr->items.size() > max_n) {
    return Status::invalid_argument(key + " must be an array of at most " + std::to_string(max_n) + " integers");
  }
  std::vector<int64_t> out;
  for (const GgufValue& item : arr->items) {
    const auto i = item.as_int();
    if (!i) {
      const auto b = item.as_bool();
      if (!b) return Status::invalid_argument(key + " must hold integers, found " + item.to_display_string());
      out.push_back(*b ? 1 : 0);
    } else {
      out.push_back(*i);
    }
  }
  return out;
}

Result<Qwen35Hparams> read_qwen35_hparams(const GgufFile& file) {
  HparamReader r(file, "qwen35");
  Qwen35Hparams hp;
  hp.base = read_decoder_hparams(r, file, RopeType::Imrope);
  hp.conv_kernel = r.require_int("ssm.conv_kernel", 1, 64);
  hp.head_dim_k = r.require_int("ssm.state_size", 1, 4096);
  hp.n_k_heads = r.require_int("ssm.group_count", 1, 4096);
  hp.n_v_heads = r.require_int("ssm.time_step_rank", 1, 4096);
  const int64_t inner = r.require_int("ssm.inner_size", 1, int64_t{1} << 24);
  const int64_t n_layer_all = hp.base.n_layer;
  const int64_t nextn = r.int_or("nextn_predict_layers", 0, 0, n_layer_all - 1);
  const int64_t interval = r.int_or("full_attention_interval", 4, 1, 4096);
  CS_RETURN_IF_ERROR(r.status());
  if (inner % hp.n_v_heads != 0 || hp.n_v_heads % hp.n_k_heads != 0) {
    return Status::invalid_argument("qwen35.ssm.inner_size " + std::to_string(inner) +
                                    " must split into time_step_rank " + std::to_string(hp.n_v_heads) +
                                    " heads, a multiple of group_count " + std::to_string(hp.n_k_heads));
  }
  hp.head_dim_v = inner / hp.n_v_heads;
  hp.base.n_layer = n_layer_all - nextn;  // the MTP blocks come last and are not run

  // Layer pattern: the explicit per-layer array when present, else every interval-th layer is
  // full attention.
  CS_ASSIGN_OR_RETURN(const auto recurrent, read_int_array(file, "qwen35.attention.recurrent_layers", 1 << 16));
  if (!recurrent.empty() && static_cast<int64_t>(recurrent.size()) != n_layer_all) {
    return Status::invalid_argument("qwen35.attention.recurrent_layers has " + std::to_string(recurrent.size()) +
                                    " entries for block_count " + std::to_string(n_layer_all));
  }
  for (int64_t i = 0; i < hp.base.n_layer; ++i) {
    hp.recurrent.push_back(recurrent.empty() ? (i + 1) % interval != 0 : recurrent[static_cast<size_t>(i)] != 0);
  }

  CS_ASSIGN_OR_RETURN(const auto sections, read_int_array(file, "qwen35.rope.dimension_sections", 4));
  if (sections.empty()) return Status::invalid_argument("missing hyperparameter qwen35.rope.dimension_sections");
  for (size_t i = 0; i < sections.size(); ++i) {
    if (sections[i] < 0 || sections[i] > 4096)
      return Status::invalid_argument("qwen35.rope.dimension_sections is out of range");
    hp.base.rope.sections[i] = static_cast<int>(sections[i]);
  }
  return hp;
}

}  // namespace

Result<std::shared_ptr<const Model>> make_qwen35_model(std::shared_ptr<const GgufFile> file) {
  CS_ASSIGN_OR_RETURN(const Qwen35Hparams hp, read_qwen35_hparams(*file));
  const DecoderHparams& d = hp.base;
  if (d.head_dim_k != d.head_dim_v) {
    return Status::invalid_argument(
        "qwen35.attention.key_length and value_length must be equal (the output gate "
        "multiplies the attention output)");
  }
  if (d.n_head % d.n_head_kv != 0) {
    return Status::invalid_argument("attention.head_count " + std::to_string(d.n_head) +
                                    " is not a multiple of head_count_kv " + std::to_string(d.n_head_kv));
  }
  if (d.rope.n_rot % 2 != 0) return Status::invalid_argument("rope.dimension_count must be even");
  if (d.n_vocab <= 0) return Status::invalid_argument("tensor token_embd.weight is missing");
  const auto n_recurrent = static_cast<int64_t>(std::count(hp.recurrent.begin(), hp.recurrent.end(), true));
  ModelInfo info;
  info.architecture = "qwen35";
  info.name = file->get_string("general.name").value_or("");
  info.n_vocab = d.n_vocab;
  info.n_embd = d.n_embd;
  info.n_layer = d.n_layer;
  info.n_ctx_train = d.n_ctx_train;
  info.kv_shape = KvCacheShape{d.n_layer - n_recurrent, d.n_head_kv, d.head_dim_k, d.head_dim_v};
  info.recurrent_shape =
      RecurrentShape{n_recurrent, hp.conv_kernel - 1, hp.conv_channels(), hp.n_v_heads, hp.head_dim_k, hp.head_dim_v};
  auto model = std::make_shared<Qwen35Model>(file, std::move(info), hp);
  TensorBinder binder(*file);
  CS_RETURN_IF_ERROR(model->bind(binder));
  return std::shared_ptr<const Model>(std::move(model));
}

}  // namespace cellserve::engine
