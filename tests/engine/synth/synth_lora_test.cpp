// Random LoRA adapters for a base model: the file is a valid adapter of that base (the engine
// loads it), adapts exactly the targeted weights at the asked rank, and is reproducible.
#include <gtest/gtest.h>

#include <set>

#include "engine/lora/lora_adapter.h"
#include "engine/models/model.h"
#include "engine/synth/synth_lora.h"
#include "tests/support/testdata.h"

namespace cellserve::engine::synth {
namespace {

TEST(SynthLora, WritesAnAdapterTheEngineLoads) {
  CS_REQUIRE_TESTDATA();
  auto model = load_model(::cellserve::testing::testdata_path("models/qwen3-tiny-f32.gguf"));
  ASSERT_TRUE(model.ok()) << model.status().to_string();
  LoraSynthRequest request;
  request.rank = 4;
  request.alpha = 8.0f;
  request.type = GgmlType::F16;
  request.targets = {"attn_q", "ffn_down"};
  auto writer = make_lora_writer((*model)->file(), request, {});
  ASSERT_TRUE(writer.ok()) << writer.status().to_string();
  const std::string path = ::testing::TempDir() + "/synth_lora.gguf";
  ASSERT_TRUE(writer->write(path).ok());
  auto adapter = LoraAdapter::load(path, **model);
  ASSERT_TRUE(adapter.ok()) << adapter.status().to_string();
  EXPECT_FLOAT_EQ((*adapter)->alpha(), 8.0f);
  std::set<std::string> names;
  for (const LoraTensor& t : (*adapter)->tensors()) {
    EXPECT_EQ(t.rank, 4);
    EXPECT_EQ(t.a.type, GgmlType::F16);
    names.insert(t.base_name);
  }
  const int64_t n_layer = (*model)->info().n_layer;
  EXPECT_EQ(names.size(), static_cast<size_t>(2 * n_layer));
  EXPECT_TRUE(names.count("blk.0.attn_q.weight"));
  EXPECT_TRUE(names.count("blk.0.ffn_down.weight"));
  // The same seed gives the same bytes.
  auto again = make_lora_writer((*model)->file(), request, {});
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->to_bytes(), writer->to_bytes());
}

TEST(SynthLora, RefusesWhatCannotBeAnAdapter) {
  CS_REQUIRE_TESTDATA();
  auto base = GgufFile::open(::cellserve::testing::testdata_path("models/qwen3-tiny-f32.gguf"));
  ASSERT_TRUE(base.ok());
  LoraSynthRequest r;
  r.targets = {"no_such_weight"};
  EXPECT_FALSE(make_lora_writer(*base, r, {}).ok());
  r = LoraSynthRequest{};
  r.rank = 0;
  EXPECT_FALSE(make_lora_writer(*base, r, {}).ok());
  r = LoraSynthRequest{};
  r.type = GgmlType::Q4_K;
  EXPECT_FALSE(make_lora_writer(*base, r, {}).ok());
  r = LoraSynthRequest{};
  r.type = GgmlType::Q8_0;  // rank 16 is not a multiple of Q8_0's 32-value blocks
  EXPECT_FALSE(make_lora_writer(*base, r, {}).ok());
}

}  // namespace
}  // namespace cellserve::engine::synth
