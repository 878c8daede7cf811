// Tensor tables of the dense architectures (llama, qwen2, qwen3) and the plan entry points.
// Names and shapes follow llama.cpp (src/llama-arch.cpp names, convert_hf_to_gguf.py shapes);
// the order of the F32 master is that of shared/testdata's F32 files.
#include "engine/synth/tensor_plan.h"

#include <algorithm>

#include "engine/quant/quant_mix.h"
#include "engine/synth/plan_builder.h"

namespace cellserve::engine::synth {
namespace {

// One attention + SwiGLU block of llama / qwen2 / qwen3.
void add_dense_block(PlanBuilder& b, int64_t il) {
  const ModelShape& s = b.shape();
  const int64_t q_dim = s.n_head * s.head_dim;
  const int64_t kv_dim = s.n_head_kv * s.head_dim;
  const bool bias = s.arch == Arch::Qwen2;  // Qwen2 has q/k/v biases
  const WeightInit bias_init{InitKind::Normal, 0.1f};
  b.norm(PlanBuilder::blk(il, "attn_norm.weight"), s.n_embd);
  b.linear(PlanBuilder::blk(il, "attn_q.weight"), s.n_embd, q_dim);
  if (bias) b.vector(PlanBuilder::blk(il, "attn_q.bias"), q_dim, bias_init);
  b.linear(PlanBuilder::blk(il, "attn_k.weight"), s.n_embd, kv_dim);
  if (bias) b.vector(PlanBuilder::blk(il, "attn_k.bias"), kv_dim, bias_init);
  b.linear(PlanBuilder::blk(il, "attn_v.weight"), s.n_embd, kv_dim);
  if (bias) b.vector(PlanBuilder::blk(il, "attn_v.bias"), kv_dim, bias_init);
  b.linear(PlanBuilder::blk(il, "attn_output.weight"), q_dim, s.n_embd, s.init.res_gain);
  if (s.arch == Arch::Qwen3) {  // per-head QK RMSNorm
    b.norm(PlanBuilder::blk(il, "attn_q_norm.weight"), s.head_dim);
    b.norm(PlanBuilder::blk(il, "attn_k_norm.weight"), s.head_dim);
  }
  b.norm(PlanBuilder::blk(il, "ffn_norm.weight"), s.n_embd);
  b.linear(PlanBuilder::blk(il, "ffn_gate.weight"), s.n_embd, s.n_ff);
  b.linear(PlanBuilder::blk(il, "ffn_up.weight"), s.n_embd, s.n_ff);
  b.linear(PlanBuilder::blk(il, "ffn_down.weight"), s.n_ff, s.n_embd, s.init.res_gain);
}

// The layer of "blk.<n>.*", or -1: llama-model-loader's weight_name_comparer key.
int64_t layer_of(const std::string& name) {
  if (name.rfind("blk.", 0) != 0) return -1;
  int64_t layer = 0;
  size_t i = 4;
  if (i >= name.size() || name[i] < '0' || name[i] > '9') return -1;
  for (; i < name.size() && name[i] >= '0' && name[i] <= '9'; ++i) layer = layer * 10 + (name[i] - '0');
  return layer;
}

}  // namespace

Result<std::vector<PlannedTensor>> build_master_plan(const ModelShape& s) {
  CS_RETURN_IF_ERROR(s.validate());
  std::vector<PlannedTensor> out;
  PlanBuilder b(s, &out);
  if (s.llama3_rope) b.vector("rope_freqs.weight", s.head_dim / 2, {InitKind::RopeFreqs, 1.0f});
  b.add("token_embd.weight", make_shape({s.n_embd, s.vocab.n_vocab}), {InitKind::Normal, s.init.emb_std});
  b.norm("output_norm.weight", s.n_embd);
  if (!s.tied_embeddings) {
    b.add("output.weight", make_shape({s.n_embd, s.vocab.n_vocab}), {InitKind::Normal, s.init.out_std});
  }
  if (s.arch == Arch::Qwen35) {
    add_qwen35_blocks(b);
  } else {
    for (int64_t il = 0; il < s.n_layer; ++il) add_dense_block(b, il);
  }
  return out;
}

Result<std::vector<PlannedTensor>> build_tensor_plan(const ModelShape& shape, SynthType type) {
  CS_ASSIGN_OR_RETURN(std::vector<PlannedTensor> plan, build_master_plan(shape));
  if (type == SynthType::F32) return plan;
  // llama-quantize walks (and writes) the tensors in llama_model_loader's weights_map order.
  std::stable_sort(plan.begin(), plan.end(), [](const PlannedTensor& a, const PlannedTensor& b) {
    const int64_t la = layer_of(a.name);
    const int64_t lb = layer_of(b.name);
    return la != lb ? la < lb : a.name < b.name;
  });
  std::vector<QuantMixTensor> mix;
  mix.reserve(plan.size());
  for (const PlannedTensor& t : plan) mix.push_back({t.name, t.shape.n_dims, t.shape.ne[0], GgmlType::F32});
  CS_RETURN_IF_ERROR(assign_quant_types(synth_quant_mix(type), shape.n_layer, &mix));
  for (size_t i = 0; i < plan.size(); ++i) plan[i].type = mix[i].type;
  return plan;
}

}  // namespace cellserve::engine::synth
