// Bad requests are refused with a Status that says what is known.
#include <gtest/gtest.h>

#include "engine/synth/presets.h"
#include "engine/synth/synth.h"
#include "tests/engine/synth/synth_test_util.h"

namespace cellserve::engine::synth {
namespace {

bool mentions(const Status& s, const std::string& text) { return s.message().find(text) != std::string::npos; }

TEST(SynthArgs, UnknownArchListsTheKnownOnes) {
  auto a = arch_from_name("mistral");
  ASSERT_FALSE(a.ok());
  EXPECT_EQ(a.status().code(), StatusCode::InvalidArgument);
  EXPECT_TRUE(mentions(a.status(), "mistral"));
  EXPECT_TRUE(mentions(a.status(), "qwen35"));
  EXPECT_EQ(arch_from_name("QWEN3").value(), Arch::Qwen3);
}

TEST(SynthArgs, UnknownTypeListsTheKnownOnes) {
  auto t = synth_type_from_name("Q3_K_S");
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), StatusCode::InvalidArgument);
  EXPECT_TRUE(mentions(t.status(), "Q4_K_M"));
  EXPECT_EQ(synth_type_from_name("q5_k_m").value(), SynthType::Q5_K_M);
  EXPECT_EQ(synth_type_from_name("bf16").value(), SynthType::BF16);
}

TEST(SynthArgs, UnknownShapeListsThePresetsOfTheArch) {
  auto p = plan_model({Arch::Qwen3, "qwen35-9b", SynthType::F32});
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), StatusCode::InvalidArgument);
  EXPECT_TRUE(mentions(p.status(), "qwen35-9b"));
  EXPECT_TRUE(mentions(p.status(), "qwen3-0.6b"));
}

TEST(SynthArgs, InconsistentShapesAreRejected) {
  ModelShape s = find_preset(Arch::Llama, "tiny").value();
  s.n_head_kv = 3;  // 4 heads cannot share 3 KV heads
  EXPECT_EQ(build_tensor_plan(s, SynthType::F32).status().code(), StatusCode::InvalidArgument);
  s = find_preset(Arch::Qwen35, "tiny").value();
  s.full_attention_interval = 0;
  EXPECT_EQ(build_tensor_plan(s, SynthType::F32).status().code(), StatusCode::InvalidArgument);
}

TEST(SynthArgs, RowsNoTypeCanHoldAreRejectedLikeLlamaQuantize) {
  ModelShape s = find_preset(Arch::Llama, "tiny").value();
  s.n_embd = 200;  // not a multiple of 32: Q4_0 has no fallback
  EXPECT_TRUE(build_tensor_plan(s, SynthType::F16).ok());
  auto plan = build_tensor_plan(s, SynthType::Q4_0);
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.status().code(), StatusCode::InvalidArgument);
  EXPECT_TRUE(mentions(plan.status(), "no fallback"));
}

TEST(SynthArgs, UnwritablePathFails) {
  auto plan = plan_model({Arch::Llama, "tiny", SynthType::Q8_0});
  ASSERT_TRUE(plan.ok());
  const Status st = write_model(*plan, "/nonexistent-dir/x/model.gguf");
  EXPECT_FALSE(st.ok());
}

TEST(SynthArgs, PlansWithoutTokenizerCannotBeWritten) {
  auto plan = plan_model({Arch::Qwen3, "tiny", SynthType::F16}, PlanContents::WithoutTokenizer);
  ASSERT_TRUE(plan.ok());
  for (const auto& kv : plan->metadata) EXPECT_FALSE(kv.key.starts_with("tokenizer.")) << kv.key;
  EXPECT_EQ(make_writer(*plan, {}).status().code(), StatusCode::InvalidArgument);
}

}  // namespace
}  // namespace cellserve::engine::synth
