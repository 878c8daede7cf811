// The pre-norm decoder-only transformer shared by llama, qwen2 and qwen3: RMSNorm, GQA
// attention with rotary embeddings over the KV cache, SwiGLU FFN. The architectures differ only
// in data (DecoderVariant), so each arch file is its hparams quirks plus one call to
// load_decoder_model.
#pragma once

#include <memory>
#include <vector>

#include "engine/models/blocks.h"
#include "engine/models/model.h"
#include "engine/models/model_loader.h"

namespace cellserve::engine {

struct DecoderVariant {
  RopeType rope_type = RopeType::Norm;
  bool qk_norm = false;           // qwen3: RMSNorm over each head of q and k before RoPE
  bool require_qkv_bias = false;  // qwen2: attn_q/k/v.bias present
};

struct DecoderHparams {
  int64_t n_vocab = 0;
  int64_t n_embd = 0;
  int64_t n_layer = 0;
  int64_t n_head = 0;
  int64_t n_head_kv = 0;
  int64_t head_dim_k = 0;
  int64_t head_dim_v = 0;
  int64_t n_ff = 0;
  int64_t n_ctx_train = 0;
  float rms_eps = 1e-5f;
  RopeParams rope;
};

struct DecoderLayer {
  std::vector<float> attn_norm;       // [n_embd]
  TensorView wq;                      // [n_embd, n_head * head_dim_k]
  TensorView wk;                      // [n_embd, n_head_kv * head_dim_k]
  TensorView wv;                      // [n_embd, n_head_kv * head_dim_v]
  TensorView wo;                      // [n_head * head_dim_v, n_embd]
  std::vector<float> bq, bk, bv, bo;  // optional biases, empty when absent
  std::vector<float> q_norm, k_norm;  // [head_dim_k], qk_norm variants only
  std::vector<float> ffn_norm;        // [n_embd]
  TensorView w_gate;                  // [n_embd, n_ff]
  TensorView w_up;                    // [n_embd, n_ff]
  TensorView w_down;                  // [n_ff, n_embd]
};

// Reads the hyperparameters common to the decoder family ("<arch>.embedding_length", ...).
DecoderHparams read_decoder_hparams(HparamReader& r, const GgufFile& file, RopeType rope_type);

// Binds every tensor of the decoder family, checks shapes, and returns the model.
Result<std::shared_ptr<const Model>> load_decoder_model(std::shared_ptr<const GgufFile> file, const DecoderHparams& hp,
                                                        const DecoderVariant& variant);

}  // namespace cellserve::engine
