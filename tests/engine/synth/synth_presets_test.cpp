// The big presets have the true sizes of the published checkpoints (checked on the tensor
// table alone, nothing written), and their per-tensor types follow llama-quantize's rules.
#include <gtest/gtest.h>

#include "engine/synth/presets.h"
#include "engine/synth/synth.h"
#include "tests/engine/synth/synth_test_util.h"

namespace cellserve::engine::synth {
namespace {

using testing::find;
using testing::find_value;
// The tokenizer is checked in synth_vocab_test.cpp; leaving it out keeps these plans cheap.
ModelPlan plan_or_die(Arch arch, const std::string& shape, SynthType type) {
  return testing::plan_or_die(arch, shape, type, PlanContents::WithoutTokenizer);
}

void expect_tensor(const ModelPlan& plan, const std::string& name, std::initializer_list<int64_t> ne, GgmlType type) {
  const PlannedTensor* t = find(plan, name);
  ASSERT_NE(t, nullptr) << name;
  EXPECT_EQ(t->shape, make_shape(ne)) << name << ": " << t->shape.to_string();
  EXPECT_EQ(t->type, type) << name << ": " << ggml_type_name(t->type);
}

void expect_u32(const ModelPlan& plan, const std::string& key, uint32_t v) {
  const GgufValue* value = find_value(plan, key);
  ASSERT_NE(value, nullptr) << key;
  EXPECT_EQ(value->type(), GgufValueType::UInt32) << key;
  EXPECT_EQ(value->as_int(), static_cast<int64_t>(v)) << key;
}

void expect_f32(const ModelPlan& plan, const std::string& key, float v) {
  const GgufValue* value = find_value(plan, key);
  ASSERT_NE(value, nullptr) << key;
  EXPECT_EQ(value->type(), GgufValueType::Float32) << key;
  EXPECT_EQ(value->as_float(), static_cast<double>(v)) << key;
}

int count_prefix(const ModelPlan& plan, const std::string& suffix) {
  int n = 0;
  for (const auto& t : plan.tensors) n += t.name.ends_with(suffix) ? 1 : 0;
  return n;
}

TEST(SynthPresets, EveryArchHasTinyFirst) {
  for (Arch a : all_archs()) {
    ASSERT_FALSE(presets_for(a).empty());
    EXPECT_EQ(presets_for(a).front().preset, "tiny");
    for (const ModelShape& s : presets_for(a)) {
      EXPECT_TRUE(s.validate().ok()) << s.preset;
      EXPECT_FALSE(s.source.empty()) << s.preset;
    }
  }
}

TEST(SynthPresets, Llama32_1B) {
  const ModelPlan p = plan_or_die(Arch::Llama, "llama-3.2-1b", SynthType::F16);
  // 1,235,814,400 is the published parameter count of Llama 3.2 1B; + 32 rope_freqs factors.
  EXPECT_EQ(p.parameter_count(), 1235814400u + 32u);
  expect_u32(p, "llama.block_count", 16);
  expect_u32(p, "llama.embedding_length", 2048);
  expect_u32(p, "llama.feed_forward_length", 8192);
  expect_u32(p, "llama.attention.head_count", 32);
  expect_u32(p, "llama.attention.head_count_kv", 8);
  expect_u32(p, "llama.rope.dimension_count", 64);
  expect_u32(p, "llama.context_length", 131072);
  expect_u32(p, "llama.vocab_size", 128256);
  expect_f32(p, "llama.rope.freq_base", 500000.0f);
  expect_tensor(p, "rope_freqs.weight", {32}, GgmlType::F32);
  expect_tensor(p, "token_embd.weight", {2048, 128256}, GgmlType::F16);
  expect_tensor(p, "blk.15.attn_k.weight", {2048, 512}, GgmlType::F16);
  expect_tensor(p, "blk.0.ffn_down.weight", {8192, 2048}, GgmlType::F16);
  EXPECT_EQ(find(p, "output.weight"), nullptr);  // tied
}

TEST(SynthPresets, Qwen25_05B) {
  const ModelPlan p = plan_or_die(Arch::Qwen2, "qwen2.5-0.5b", SynthType::Q4_K_M);
  EXPECT_EQ(p.parameter_count(), 494032768u);  // published: 494,032,768
  expect_u32(p, "qwen2.block_count", 24);
  expect_u32(p, "qwen2.attention.head_count", 14);
  EXPECT_EQ(find_value(p, "qwen2.attention.key_length"), nullptr);  // config.json has no head_dim
  // n_embd 896 is not a multiple of 256: K-quants fall back (Q4_K->Q5_0, Q6_K->Q8_0).
  expect_tensor(p, "token_embd.weight", {896, 151936}, GgmlType::Q8_0);
  expect_tensor(p, "blk.0.attn_q.weight", {896, 896}, GgmlType::Q5_0);
  expect_tensor(p, "blk.0.attn_q.bias", {896}, GgmlType::F32);
  expect_tensor(p, "blk.0.attn_v.weight", {896, 128}, GgmlType::Q8_0);  // use_more_bits(0) -> Q6_K -> Q8_0
  expect_tensor(p, "blk.3.attn_v.weight", {896, 128}, GgmlType::Q5_0);
  expect_tensor(p, "blk.0.ffn_down.weight", {4864, 896}, GgmlType::Q6_K);
  expect_tensor(p, "blk.3.ffn_down.weight", {4864, 896}, GgmlType::Q4_K);
  expect_tensor(p, "blk.5.ffn_down.weight", {4864, 896}, GgmlType::Q6_K);  // (5 - 3) % 3 == 2
}

TEST(SynthPresets, Qwen3_06B) {
  const ModelPlan p = plan_or_die(Arch::Qwen3, "qwen3-0.6b", SynthType::Q4_K_M);
  EXPECT_EQ(p.tensors.size(), 2u + 28u * 11u);
  EXPECT_EQ(p.parameter_count(), 596049920u);  // 0.44B non-embedding + 151936 x 1024 tied embedding
  expect_u32(p, "qwen3.block_count", 28);
  expect_u32(p, "qwen3.embedding_length", 1024);
  expect_u32(p, "qwen3.feed_forward_length", 3072);
  expect_u32(p, "qwen3.attention.head_count", 16);
  expect_u32(p, "qwen3.attention.head_count_kv", 8);
  expect_u32(p, "qwen3.attention.key_length", 128);
  expect_u32(p, "qwen3.context_length", 40960);
  expect_f32(p, "qwen3.rope.freq_base", 1000000.0f);
  expect_tensor(p, "token_embd.weight", {1024, 151936}, GgmlType::Q6_K);  // tied output
  expect_tensor(p, "blk.0.attn_q.weight", {1024, 2048}, GgmlType::Q4_K);
  expect_tensor(p, "blk.0.attn_output.weight", {2048, 1024}, GgmlType::Q4_K);
  expect_tensor(p, "blk.0.attn_v.weight", {1024, 1024}, GgmlType::Q6_K);
  expect_tensor(p, "blk.27.attn_k_norm.weight", {128}, GgmlType::F32);
}

TEST(SynthPresets, Qwen35Layouts) {
  struct Expect {
    const char* name;
    int64_t n_embd, n_ff, n_layer, n_head, n_head_kv, v_heads;
    bool tied;
  };
  for (const Expect& e :
       {Expect{"qwen35-0.8b", 1024, 3584, 24, 8, 2, 16, true}, Expect{"qwen35-4b", 2560, 9216, 32, 16, 4, 32, true},
        Expect{"qwen35-9b", 4096, 12288, 32, 16, 4, 32, false}}) {
    SCOPED_TRACE(e.name);
    const ModelPlan p = plan_or_die(Arch::Qwen35, e.name, SynthType::F32);
    const int64_t inner = 128 * e.v_heads;
    const int64_t conv = 2 * 16 * 128 + inner;
    expect_u32(p, "qwen35.block_count", static_cast<uint32_t>(e.n_layer));
    expect_u32(p, "qwen35.embedding_length", static_cast<uint32_t>(e.n_embd));
    expect_u32(p, "qwen35.feed_forward_length", static_cast<uint32_t>(e.n_ff));
    expect_u32(p, "qwen35.attention.head_count", static_cast<uint32_t>(e.n_head));
    expect_u32(p, "qwen35.attention.head_count_kv", static_cast<uint32_t>(e.n_head_kv));
    expect_u32(p, "qwen35.attention.key_length", 256);
    expect_u32(p, "qwen35.rope.dimension_count", 64);
    expect_u32(p, "qwen35.context_length", 262144);
    expect_u32(p, "qwen35.ssm.conv_kernel", 4);
    expect_u32(p, "qwen35.ssm.state_size", 128);
    expect_u32(p, "qwen35.ssm.group_count", 16);
    expect_u32(p, "qwen35.ssm.time_step_rank", static_cast<uint32_t>(e.v_heads));
    expect_u32(p, "qwen35.ssm.inner_size", static_cast<uint32_t>(inner));
    expect_u32(p, "qwen35.full_attention_interval", 4);
    expect_f32(p, "qwen35.rope.freq_base", 10000000.0f);
    EXPECT_EQ(*find_value(p, "qwen35.rope.dimension_sections"), GgufValue::i32_array({11, 11, 10, 0}));
    EXPECT_EQ(count_prefix(p, "attn_qkv.weight"), e.n_layer * 3 / 4);
    EXPECT_EQ(count_prefix(p, "attn_q.weight"), e.n_layer / 4);
    EXPECT_EQ(find(p, "output.weight") == nullptr, e.tied);
    expect_tensor(p, "token_embd.weight", {e.n_embd, 248320}, GgmlType::F32);
    expect_tensor(p, "blk.0.attn_qkv.weight", {e.n_embd, conv}, GgmlType::F32);
    expect_tensor(p, "blk.0.attn_gate.weight", {e.n_embd, inner}, GgmlType::F32);
    expect_tensor(p, "blk.0.ssm_conv1d.weight", {4, conv}, GgmlType::F32);
    expect_tensor(p, "blk.0.ssm_a", {e.v_heads}, GgmlType::F32);
    expect_tensor(p, "blk.0.ssm_dt.bias", {e.v_heads}, GgmlType::F32);
    expect_tensor(p, "blk.0.ssm_alpha.weight", {e.n_embd, e.v_heads}, GgmlType::F32);
    expect_tensor(p, "blk.0.ssm_norm.weight", {128}, GgmlType::F32);
    expect_tensor(p, "blk.0.ssm_out.weight", {inner, e.n_embd}, GgmlType::F32);
    expect_tensor(p, "blk.3.attn_q.weight", {e.n_embd, 2 * e.n_head * 256}, GgmlType::F32);
    expect_tensor(p, "blk.3.attn_k.weight", {e.n_embd, e.n_head_kv * 256}, GgmlType::F32);
    expect_tensor(p, "blk.3.attn_output.weight", {e.n_head * 256, e.n_embd}, GgmlType::F32);
    expect_tensor(p, "blk.3.attn_q_norm.weight", {256}, GgmlType::F32);
    expect_tensor(p, "blk.3.post_attention_norm.weight", {e.n_embd}, GgmlType::F32);
    expect_tensor(p, "blk.0.ffn_down.weight", {e.n_ff, e.n_embd}, GgmlType::F32);
  }
  // Qwen3.5-9B: 8.95B parameters in the language model (the GGUF llama.cpp makes of it).
  const ModelPlan p9 = plan_or_die(Arch::Qwen35, "qwen35-9b", SynthType::F32);
  EXPECT_NEAR(static_cast<double>(p9.parameter_count()), 8.95e9, 0.01e9);
}

TEST(SynthPresets, Qwen35QuantMix) {
  const ModelPlan p = plan_or_die(Arch::Qwen35, "qwen35-9b", SynthType::Q4_K_M);
  expect_tensor(p, "output.weight", {4096, 248320}, GgmlType::Q6_K);
  expect_tensor(p, "token_embd.weight", {4096, 248320}, GgmlType::Q4_K);  // untied
  // attn_qkv (linear layers) and attn_v (full layers) share llama-quantize's attn_v counter.
  expect_tensor(p, "blk.0.attn_qkv.weight", {4096, 8192}, GgmlType::Q6_K);
  expect_tensor(p, "blk.1.attn_qkv.weight", {4096, 8192}, GgmlType::Q6_K);  // 1 < 32/8
  expect_tensor(p, "blk.4.attn_qkv.weight", {4096, 8192}, GgmlType::Q4_K);
  expect_tensor(p, "blk.3.attn_v.weight", {4096, 1024}, GgmlType::Q6_K);  // counter 3 < 32/8
  expect_tensor(p, "blk.7.attn_v.weight", {4096, 1024}, GgmlType::Q4_K);  // (7 - 4) % 3 == 0
  expect_tensor(p, "blk.31.attn_v.weight", {4096, 1024}, GgmlType::Q6_K);
  expect_tensor(p, "blk.0.ssm_alpha.weight", {4096, 32}, GgmlType::Q4_K);
  expect_tensor(p, "blk.0.ssm_conv1d.weight", {4, 8192}, GgmlType::F32);
  expect_tensor(p, "blk.0.ssm_norm.weight", {128}, GgmlType::F32);

  const ModelPlan q = plan_or_die(Arch::Qwen35, "qwen35-0.8b", SynthType::Q4_0);
  expect_tensor(q, "token_embd.weight", {1024, 248320}, GgmlType::Q6_K);  // tied: the output's type
  expect_tensor(q, "blk.0.attn_qkv.weight", {1024, 6144}, GgmlType::Q4_0);
}

TEST(SynthPresets, QuantizedFilesAreSortedLikeLlamaQuantize) {
  const ModelPlan p = plan_or_die(Arch::Qwen3, "tiny", SynthType::Q8_0);
  ASSERT_GE(p.tensors.size(), 3u);
  EXPECT_EQ(p.tensors[0].name, "output_norm.weight");
  EXPECT_EQ(p.tensors[1].name, "token_embd.weight");
  EXPECT_EQ(p.tensors[2].name, "blk.0.attn_k.weight");
  const ModelPlan big = plan_or_die(Arch::Llama, "llama-3.2-1b", SynthType::Q8_0);
  // Layer 10 sorts after layer 9 (numeric, not lexicographic), as weight_name_comparer does.
  size_t i9 = 0, i10 = 0;
  for (size_t i = 0; i < big.tensors.size(); ++i) {
    if (big.tensors[i].name == "blk.9.ffn_up.weight") i9 = i;
    if (big.tensors[i].name == "blk.10.attn_k.weight") i10 = i;
  }
  EXPECT_LT(i9, i10);
  EXPECT_EQ(big.metadata.back().key, "general.file_type");
  EXPECT_EQ(big.metadata.back().value, GgufValue::u32(7));
}

}  // namespace
}  // namespace cellserve::engine::synth
