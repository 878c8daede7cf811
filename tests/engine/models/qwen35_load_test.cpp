// Loading qwen35 files: the hybrid layout from metadata, trailing MTP blocks skipped, and precise
// errors for missing keys and tensors.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>

#include "engine/gguf/gguf_writer.h"
#include "engine/runtime/context.h"

namespace cellserve::engine {
namespace {

struct TinyOptions {
  bool sections = true;
  bool ssm_a = true;
  bool mtp = true;  // one extra block (nextn_predict_layers = 1) with tensors the trunk cannot bind
};

// Two trunk layers (0: Gated DeltaNet, 1: full attention, interval 2), E = 32.
std::string write_tiny_qwen35(const std::string& name, const TinyOptions& o) {
  GgufWriter w;
  auto u32 = [&](const std::string& k, uint32_t v) { w.set("qwen35." + k, GgufValue::u32(v)); };
  w.set("general.architecture", GgufValue::string("qwen35"));
  u32("embedding_length", 32);
  u32("block_count", o.mtp ? 3 : 2);
  if (o.mtp) u32("nextn_predict_layers", 1);
  u32("feed_forward_length", 48);
  u32("attention.head_count", 2);
  u32("attention.head_count_kv", 1);
  u32("attention.key_length", 16);
  u32("attention.value_length", 16);
  w.set("qwen35.attention.layer_norm_rms_epsilon", GgufValue::f32(1e-6f));
  u32("rope.dimension_count", 8);
  if (o.sections) w.set("qwen35.rope.dimension_sections", GgufValue::i32_array({2, 1, 1, 0}));
  u32("ssm.conv_kernel", 4);
  u32("ssm.state_size", 8);
  u32("ssm.group_count", 1);
  u32("ssm.time_step_rank", 2);
  u32("ssm.inner_size", 16);
  u32("full_attention_interval", 2);
  int counter = 0;
  auto f32 = [&](const std::string& n, std::initializer_list<int64_t> dims) {
    const Shape s = make_shape(dims);
    std::vector<float> v(static_cast<size_t>(s.elements()));
    for (float& f : v) f = 0.1f * std::sin(static_cast<float>(++counter));  // small, deterministic
    std::vector<std::byte> bytes(v.size() * sizeof(float));
    std::memcpy(bytes.data(), v.data(), bytes.size());
    (void)w.add_tensor(n, GgmlType::F32, s, std::move(bytes));
  };
  f32("token_embd.weight", {32, 10});
  f32("output_norm.weight", {32});
  for (int il = 0; il < 2; ++il) {
    const std::string p = "blk." + std::to_string(il) + ".";
    f32(p + "attn_norm.weight", {32});
    f32(p + "post_attention_norm.weight", {32});
    if (il == 0) {
      f32(p + "attn_qkv.weight", {32, 32});  // 2 * 1 * 8 + 2 * 8 channels
      f32(p + "attn_gate.weight", {32, 16});
      f32(p + "ssm_conv1d.weight", {4, 32});
      f32(p + "ssm_dt.bias", {2});
      if (o.ssm_a) f32(p + "ssm_a", {2});
      f32(p + "ssm_beta.weight", {32, 2});
      f32(p + "ssm_alpha.weight", {32, 2});
      f32(p + "ssm_norm.weight", {8});
      f32(p + "ssm_out.weight", {16, 32});
    } else {
      f32(p + "attn_q.weight", {32, 64});
      f32(p + "attn_k.weight", {32, 16});
      f32(p + "attn_v.weight", {32, 16});
      f32(p + "attn_output.weight", {32, 32});
      f32(p + "attn_q_norm.weight", {16});
      f32(p + "attn_k_norm.weight", {16});
    }
    f32(p + "ffn_gate.weight", {32, 48});
    f32(p + "ffn_up.weight", {32, 48});
    f32(p + "ffn_down.weight", {48, 32});
  }
  if (o.mtp) f32("blk.2.nextn.eh_proj.weight", {64, 32});
  const std::string path = (std::filesystem::temp_directory_path() / name).string();
  EXPECT_TRUE(w.write(path).ok());
  return path;
}

TEST(Qwen35Load, HybridLayoutFromMetadataAndMtpBlocksSkipped) {
  auto m = load_model(write_tiny_qwen35("cs_tiny_qwen35.gguf", {}));
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  const ModelInfo& info = (*m)->info();
  EXPECT_EQ(info.n_layer, 2);
  EXPECT_EQ(info.kv_shape.n_layer, 1);  // only the attention layer keeps keys and values
  EXPECT_EQ(info.kv_shape.head_dim_k, 16);
  EXPECT_EQ(info.recurrent_shape.n_layer, 1);
  EXPECT_EQ(info.recurrent_shape.conv_rows, 3);
  EXPECT_EQ(info.recurrent_shape.conv_channels, 32);
  EXPECT_EQ(info.recurrent_shape.n_head, 2);
  EXPECT_EQ(info.recurrent_shape.head_dim_k, 8);
  EXPECT_EQ(info.recurrent_shape.head_dim_v, 8);

  ContextParams p;
  p.n_ctx = 16;
  p.kv_type = GgmlType::F32;
  auto ctx = Context::create(*m, p);
  ASSERT_TRUE(ctx.ok());
  Batch b;
  for (int i = 0; i < 5; ++i) b.add(i, i, 0, true);
  ASSERT_TRUE((*ctx)->decode(b).ok());
  for (int64_t r = 0; r < 5; ++r) {
    for (float v : (*ctx)->logits(r)) ASSERT_TRUE(std::isfinite(v));
  }
  EXPECT_TRUE((*ctx)->recurrent().in_use(0));
  EXPECT_EQ((*ctx)->recurrent().memory_bytes(), (3 * 32 + 2 * 8 * 8) * sizeof(float));
}

TEST(Qwen35Load, MissingSectionsAndTensorsAreNamed) {
  TinyOptions no_sections;
  no_sections.sections = false;
  auto m = load_model(write_tiny_qwen35("cs_tiny_qwen35_nosec.gguf", no_sections));
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("qwen35.rope.dimension_sections"), std::string::npos) << m.status().message();

  TinyOptions no_a;
  no_a.ssm_a = false;
  m = load_model(write_tiny_qwen35("cs_tiny_qwen35_noa.gguf", no_a));
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("tensor blk.0.ssm_a is missing"), std::string::npos) << m.status().message();
}

}  // namespace
}  // namespace cellserve::engine
