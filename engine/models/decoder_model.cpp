#include "engine/models/decoder_model.h"

#include <cmath>
#include <string>

#include "engine/lora/lora_apply.h"
#include "engine/models/scratch.h"

namespace cellserve::engine {
namespace {

class DecoderModel final : public Model {
 public:
  DecoderModel(std::shared_ptr<const GgufFile> file, ModelInfo info, DecoderHparams hp, DecoderVariant variant)
      : Model(std::move(file), std::move(info)), hp_(std::move(hp)), variant_(variant) {}

  Status bind(TensorBinder& b);
  void forward(const ForwardArgs& args) const override;

 private:
  void attention_block(const DecoderLayer& l, int64_t il, const ForwardArgs& args, const float* rope_angles,
                       const float* cur, float* out) const;
  void ffn_block(const DecoderLayer& l, const ForwardArgs& args, const float* cur, int64_t n, float* out) const;

  DecoderHparams hp_;
  DecoderVariant variant_;
  TensorView token_embd_;           // [n_embd, n_vocab]
  std::vector<float> output_norm_;  // [n_embd]
  TensorView output_;               // [n_embd, n_vocab]; token_embd_ when tied
  std::vector<DecoderLayer> layers_;
};

Status DecoderModel::bind(TensorBinder& b) {
  const int64_t E = hp_.n_embd;
  const int64_t q_dim = hp_.n_head * hp_.head_dim_k;
  const int64_t k_dim = hp_.n_head_kv * hp_.head_dim_k;
  const int64_t v_dim = hp_.n_head_kv * hp_.head_dim_v;
  token_embd_ = b.lookup_table("token_embd.weight", {E, hp_.n_vocab});
  output_norm_ = b.vector("output_norm.weight", E);
  output_ = b.projection("output.weight", {E, hp_.n_vocab}, /*required=*/false);
  // Tied embeddings (not adaptable: it is also the table); packed for the output matmul.
  if (output_.data.empty()) output_ = b.pack(token_embd_);
  if (b.has("rope_freqs.weight")) hp_.rope.freq_factors = b.vector("rope_freqs.weight", hp_.rope.n_rot / 2);
  layers_.resize(static_cast<size_t>(hp_.n_layer));
  for (int64_t i = 0; i < hp_.n_layer; ++i) {
    DecoderLayer& l = layers_[static_cast<size_t>(i)];
    const std::string p = "blk." + std::to_string(i) + ".";
    if (b.has(p + "ffn_gate_inp.weight")) {
      return Status::unimplemented(p + "ffn_gate_inp.weight: mixture-of-experts layers are not supported");
    }
    l.attn_norm = b.vector(p + "attn_norm.weight", E);
    l.wq = b.projection(p + "attn_q.weight", {E, q_dim});
    l.wk = b.projection(p + "attn_k.weight", {E, k_dim});
    l.wv = b.projection(p + "attn_v.weight", {E, v_dim});
    l.wo = b.projection(p + "attn_output.weight", {hp_.n_head * hp_.head_dim_v, E});
    const bool need_bias = variant_.require_qkv_bias;
    l.bq = b.vector(p + "attn_q.bias", q_dim, need_bias);
    l.bk = b.vector(p + "attn_k.bias", k_dim, need_bias);
    l.bv = b.vector(p + "attn_v.bias", v_dim, need_bias);
    l.bo = b.vector(p + "attn_output.bias", E, false);
    if (variant_.qk_norm) {
      l.q_norm = b.vector(p + "attn_q_norm.weight", hp_.head_dim_k);
      l.k_norm = b.vector(p + "attn_k_norm.weight", hp_.head_dim_k);
    }
    l.ffn_norm = b.vector(p + "ffn_norm.weight", E);
    l.w_gate = b.projection(p + "ffn_gate.weight", {E, hp_.n_ff});
    l.w_up = b.projection(p + "ffn_up.weight", {E, hp_.n_ff});
    l.w_down = b.projection(p + "ffn_down.weight", {hp_.n_ff, E});
  }
  projections_.insert(b.projections().begin(), b.projections().end());
  resident_weights_ = b.resident();
  return b.status();
}

void DecoderModel::attention_block(const DecoderLayer& l, int64_t il, const ForwardArgs& args, const float* rope_angles,
                                   const float* cur, float* out) const {
  const Batch& batch = *args.batch;
  ThreadPool& pool = *args.pool;
  const int64_t n = batch.size();
  ScratchFrame scratch;
  const std::span<float> q = scratch.take(static_cast<size_t>(n * hp_.n_head * hp_.head_dim_k));
  const std::span<float> k = scratch.take(static_cast<size_t>(n * hp_.n_head_kv * hp_.head_dim_k));
  const std::span<float> v = scratch.take(static_cast<size_t>(n * hp_.n_head_kv * hp_.head_dim_v));
  // Projections (+ biases where the variant has them).
  const MatmulOut qkv[] = {{&l.wq, q.data()}, {&l.wk, k.data()}, {&l.wv, v.data()}};
  project_shared_input(qkv, cur, n, pool, args.lora);
  if (!l.bq.empty()) add_bias(q.data(), l.bq, n);
  if (!l.bk.empty()) add_bias(k.data(), l.bk, n);
  if (!l.bv.empty()) add_bias(v.data(), l.bv, n);
  // Per-head QK norm, then rotary embeddings.
  if (variant_.qk_norm) {
    rms_norm(q.data(), l.q_norm, q.data(), n * hp_.n_head, hp_.head_dim_k, hp_.rms_eps, pool);
    rms_norm(k.data(), l.k_norm, k.data(), n * hp_.n_head_kv, hp_.head_dim_k, hp_.rms_eps, pool);
  }
  rope(q.data(), rope_angles, n, hp_.n_head, hp_.head_dim_k, hp_.rope, pool);
  rope(k.data(), rope_angles, n, hp_.n_head_kv, hp_.head_dim_k, hp_.rope, pool);
  // Keys and values into this batch's cells, then attention over every visible cell.
  store_kv(*args.kv, il, k.data(), v.data(), *args.cells);
  const std::span<float> attn = scratch.take(static_cast<size_t>(n * hp_.n_head * hp_.head_dim_v));
  AttentionArgs a;
  a.q = q.data();
  a.pos = batch.pos.data();
  a.seq = batch.seq.data();
  a.n_tokens = n;
  a.n_head = hp_.n_head;
  a.kv_layer = il;
  a.scale = 1.0f / std::sqrt(static_cast<float>(hp_.head_dim_k));
  a.out = attn.data();
  attention(a, *args.kv, pool);
  project(l.wo, attn.data(), n, out, pool, args.lora);
  if (!l.bo.empty()) add_bias(out, l.bo, n);
}

void DecoderModel::ffn_block(const DecoderLayer& l, const ForwardArgs& args, const float* cur, int64_t n,
                             float* out) const {
  ThreadPool& pool = *args.pool;
  ScratchFrame scratch;
  const std::span<float> gate = scratch.take(static_cast<size_t>(n * hp_.n_ff));
  const std::span<float> up = scratch.take(static_cast<size_t>(n * hp_.n_ff));
  const MatmulOut gate_up[] = {{&l.w_gate, gate.data()}, {&l.w_up, up.data()}};
  project_shared_input(gate_up, cur, n, pool, args.lora);
  swiglu(gate.data(), up.data(), gate.data(), n * hp_.n_ff, pool);
  project(l.w_down, gate.data(), n, out, pool, args.lora);
}

void DecoderModel::forward(const ForwardArgs& args) const {
  const Batch& batch = *args.batch;
  const int64_t n = batch.size();
  const int64_t E = hp_.n_embd;
  auto probe = [&](const char* name, int layer, const float* data, int64_t rows, int64_t width) {
    if (args.probe != nullptr) args.probe->record(name, layer, data, rows, width);
  };

  // Token embeddings: x is the residual stream [n][n_embd].
  ScratchFrame scratch;
  const std::span<float> x = scratch.take(static_cast<size_t>(n * E));
  for (int64_t t = 0; t < n; ++t)
    get_embedding_row(token_embd_, batch.tokens[static_cast<size_t>(t)], x.data() + t * E);

  const std::span<float> cur = scratch.take(static_cast<size_t>(n * E));
  const std::span<float> branch = scratch.take(static_cast<size_t>(n * E));
  const std::span<float> angles = scratch.take(static_cast<size_t>(n * hp_.rope.n_rot));
  rope_angles(batch.pos.data(), n, hp_.rope, angles.data(), *args.pool);
  for (int64_t il = 0; il < hp_.n_layer; ++il) {
    const DecoderLayer& l = layers_[static_cast<size_t>(il)];
    const int layer = static_cast<int>(il);
    // Attention block with residual connection.
    rms_norm(x.data(), l.attn_norm, cur.data(), n, E, hp_.rms_eps, *args.pool);
    probe("attn_norm", layer, cur.data(), n, E);
    attention_block(l, il, args, angles.data(), cur.data(), branch.data());
    probe("attn_out", layer, branch.data(), n, E);
    add_in_place(x.data(), branch.data(), n * E, *args.pool);
    // Feed-forward block with residual connection.
    rms_norm(x.data(), l.ffn_norm, cur.data(), n, E, hp_.rms_eps, *args.pool);
    ffn_block(l, args, cur.data(), n, branch.data());
    probe("ffn_out", layer, branch.data(), n, E);
    add_in_place(x.data(), branch.data(), n * E, *args.pool);
    probe("layer_out", layer, x.data(), n, E);
  }

  // Final norm and output projection, only for the rows that want logits.
  OutputRows rows = gather_output_rows(batch, x.data(), E, args.lora);
  if (rows.n == 0) return;
  rms_norm(rows.x.data(), output_norm_, rows.x.data(), rows.n, E, hp_.rms_eps, *args.pool);
  probe("result_norm", -1, rows.x.data(), rows.n, E);
  project(output_, rows.x.data(), rows.n, args.logits, *args.pool, rows.lora_or_null());
  probe("logits", -1, args.logits, rows.n, hp_.n_vocab);
}

}  // namespace

DecoderHparams read_decoder_hparams(HparamReader& r, const GgufFile& file, RopeType rope_type) {
  DecoderHparams hp;
  hp.n_embd = r.require_int("embedding_length");
  hp.n_layer = r.require_int("block_count", 1, 4096);
  hp.n_ff = r.require_int("feed_forward_length");
  hp.n_head = r.require_int("attention.head_count", 1, 4096);
  hp.n_head_kv = r.int_or("attention.head_count_kv", hp.n_head, 1, hp.n_head);
  hp.n_ctx_train = r.int_or("context_length", 4096, 1);
  hp.head_dim_k = r.int_or("attention.key_length", hp.n_embd / std::max<int64_t>(hp.n_head, 1), 1);
  hp.head_dim_v = r.int_or("attention.value_length", hp.head_dim_k, 1);
  hp.rms_eps = r.float_or("attention.layer_norm_rms_epsilon", 1e-5f);
  if (const GgufTensorInfo* embd = file.find_tensor("token_embd.weight")) hp.n_vocab = embd->shape.ne[1];

  RopeParams& rope = hp.rope;
  rope.type = rope_type;
  rope.n_rot = static_cast<int>(r.int_or("rope.dimension_count", hp.head_dim_k, 2, hp.head_dim_k));
  rope.freq_base = r.float_or("rope.freq_base", 10000.0f);
  const std::string scaling = r.string_or("rope.scaling.type", "none");
  const float factor = r.float_or("rope.scaling.factor", 0.0f);
  if (scaling == "linear" || scaling == "yarn") rope.freq_scale = factor > 0.0f ? 1.0f / factor : 1.0f;
  if (scaling == "yarn") {
    rope.ext_factor = 1.0f;
    rope.beta_fast = r.float_or("rope.scaling.yarn_beta_fast", 32.0f);
    rope.beta_slow = r.float_or("rope.scaling.yarn_beta_slow", 1.0f);
    rope.attn_factor = r.float_or("rope.scaling.attn_factor", 1.0f);
  }
  rope.n_ctx_orig = static_cast<int>(r.int_or("rope.scaling.original_context_length", hp.n_ctx_train, 1));
  return hp;
}

Result<std::shared_ptr<const Model>> load_decoder_model(std::shared_ptr<const GgufFile> file, const DecoderHparams& hp,
                                                        const DecoderVariant& variant) {
  if (hp.n_head % hp.n_head_kv != 0) {
    return Status::invalid_argument("attention.head_count " + std::to_string(hp.n_head) +
                                    " is not a multiple of head_count_kv " + std::to_string(hp.n_head_kv));
  }
  if (hp.rope.n_rot % 2 != 0) return Status::invalid_argument("rope.dimension_count must be even");
  if (hp.n_vocab <= 0) return Status::invalid_argument("tensor token_embd.weight is missing");
  ModelInfo info;
  info.architecture = file->get_string("general.architecture").value_or("");
  info.name = file->get_string("general.name").value_or("");
  info.n_vocab = hp.n_vocab;
  info.n_embd = hp.n_embd;
  info.n_layer = hp.n_layer;
  info.n_ctx_train = hp.n_ctx_train;
  info.kv_shape = KvCacheShape{hp.n_layer, hp.n_head_kv, hp.head_dim_k, hp.head_dim_v};
  auto model = std::make_shared<DecoderModel>(file, std::move(info), hp, variant);
  TensorBinder binder(*file);
  CS_RETURN_IF_ERROR(model->bind(binder));
  return std::shared_ptr<const Model>(std::move(model));
}

}  // namespace cellserve::engine
