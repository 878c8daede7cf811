// Tensor table of the qwen35 blocks (Qwen3.5 dense: Gated DeltaNet + gated full attention).
//
// Shapes follow llama.cpp's qwen35 loader and convert_hf_to_gguf.py (Qwen3_5TextModel):
//   linear-attention layer: attn_qkv {n_embd, 2*Hk*dk + Hv*dv} (q, k, v of in_proj_qkv),
//     attn_gate {n_embd, Hv*dv} (in_proj_z), ssm_conv1d {kernel, 2*Hk*dk + Hv*dv},
//     ssm_dt.bias {Hv}, ssm_a {Hv} (= -exp(A_log)), ssm_beta / ssm_alpha {n_embd, Hv}
//     (in_proj_b / in_proj_a), ssm_norm {dv}, ssm_out {Hv*dv, n_embd};
//   full-attention layer: attn_q {n_embd, 2*n_head*head_dim} (query and output gate),
//     attn_k / attn_v {n_embd, n_head_kv*head_dim}, attn_output {n_head*head_dim, n_embd},
//     attn_q_norm / attn_k_norm {head_dim};
//   every layer: attn_norm, post_attention_norm (the pre-FFN norm), ffn_gate/up/down.
// with Hk = ssm.group_count, dk = ssm.state_size, Hv = ssm.time_step_rank,
// dv = ssm.inner_size / Hv. The order within a layer is that of shared/testdata's qwen35-tiny.
#include <cmath>

#include "engine/synth/plan_builder.h"

namespace cellserve::engine::synth {
namespace {

void add_norms(PlanBuilder& b, int64_t il) {
  b.norm(PlanBuilder::blk(il, "attn_norm.weight"), b.shape().n_embd);
  b.norm(PlanBuilder::blk(il, "post_attention_norm.weight"), b.shape().n_embd);
}

void add_ffn(PlanBuilder& b, int64_t il) {
  const ModelShape& s = b.shape();
  b.linear(PlanBuilder::blk(il, "ffn_gate.weight"), s.n_embd, s.n_ff);
  b.linear(PlanBuilder::blk(il, "ffn_up.weight"), s.n_embd, s.n_ff);
  b.linear(PlanBuilder::blk(il, "ffn_down.weight"), s.n_ff, s.n_embd, s.init.res_gain);
}

void add_linear_attention(PlanBuilder& b, int64_t il) {
  const ModelShape& s = b.shape();
  const int64_t hv = s.ssm_time_step_rank;
  const int64_t dv = s.ssm_inner_size / hv;
  const int64_t conv_dim = 2 * s.ssm_group_count * s.ssm_state_size + s.ssm_inner_size;
  b.linear(PlanBuilder::blk(il, "attn_qkv.weight"), s.n_embd, conv_dim);
  b.linear(PlanBuilder::blk(il, "attn_gate.weight"), s.n_embd, s.ssm_inner_size);
  b.add(PlanBuilder::blk(il, "ssm_conv1d.weight"), make_shape({s.ssm_conv_kernel, conv_dim}),
        {InitKind::Normal, 0.35f});
  b.vector(PlanBuilder::blk(il, "ssm_dt.bias"), hv, {InitKind::Uniform, 1.0f});
  b.vector(PlanBuilder::blk(il, "ssm_a"), hv, {InitKind::SsmA, 1.0f});
  b.linear(PlanBuilder::blk(il, "ssm_beta.weight"), s.n_embd, hv);
  b.linear(PlanBuilder::blk(il, "ssm_alpha.weight"), s.n_embd, hv, 0.5f);
  b.norm(PlanBuilder::blk(il, "ssm_norm.weight"), dv);
  b.linear(PlanBuilder::blk(il, "ssm_out.weight"), s.ssm_inner_size, s.n_embd, s.init.res_gain);
}

void add_full_attention(PlanBuilder& b, int64_t il) {
  const ModelShape& s = b.shape();
  const int64_t q_dim = s.n_head * s.head_dim;
  const int64_t kv_dim = s.n_head_kv * s.head_dim;
  b.linear(PlanBuilder::blk(il, "attn_q.weight"), s.n_embd, 2 * q_dim);
  b.linear(PlanBuilder::blk(il, "attn_k.weight"), s.n_embd, kv_dim);
  b.linear(PlanBuilder::blk(il, "attn_v.weight"), s.n_embd, kv_dim);
  b.linear(PlanBuilder::blk(il, "attn_output.weight"), q_dim, s.n_embd, s.init.res_gain);
  b.norm(PlanBuilder::blk(il, "attn_q_norm.weight"), s.head_dim);
  b.norm(PlanBuilder::blk(il, "attn_k_norm.weight"), s.head_dim);
}

}  // namespace

void add_qwen35_blocks(PlanBuilder& b) {
  for (int64_t il = 0; il < b.shape().n_layer; ++il) {
    add_norms(b, il);
    if (b.shape().is_full_attention(il)) {
      add_full_attention(b, il);
    } else {
      add_linear_attention(b, il);
    }
    add_ffn(b, il);
  }
}

}  // namespace cellserve::engine::synth
