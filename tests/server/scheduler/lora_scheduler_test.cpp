// Per-request LoRA adapters in the scheduler: requests with and without an adapter share
// batches yet each gets its solo tokens, and the prefix cache never hands keys and values
// computed under one adapter set to a request with another.
#include <gtest/gtest.h>

#include "server/metrics.h"
#include "server/scheduler/scheduler.h"
#include "tests/server/scheduler/job_output.h"
#include "tests/support/testdata.h"

namespace cellserve::server {
namespace {

class LoraSchedulerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    CS_REQUIRE_TESTDATA();
    auto model = engine::load_model(testing::testdata_path("models/qwen3-tiny-f32.gguf"));
    ASSERT_TRUE(model.ok()) << model.status().to_string();
    model_ = *model;
    auto tok = engine::tokenizer::Tokenizer::from_gguf(model_->file());
    ASSERT_TRUE(tok.ok()) << tok.status().to_string();
    tok_ = std::make_unique<engine::tokenizer::Tokenizer>(std::move(tok).value());
    auto adapter = engine::LoraAdapter::load(testing::testdata_path("models/qwen3-tiny-lora-f32.gguf"), *model_);
    ASSERT_TRUE(adapter.ok()) << adapter.status().to_string();
    lora_ = std::make_shared<const engine::LoraSet>(engine::LoraSet{{*adapter, 1.0f}});
  }

  std::unique_ptr<Scheduler> make(int n_slots, size_t cache_bytes) {
    SchedulerOptions o;
    o.n_slots = n_slots;
    o.n_ctx_per_slot = 256;
    o.prefill_chunk = 5;  // prompts are read over several steps, interleaved with decodes
    o.prefix_cache_bytes = cache_bytes;
    return make_test_scheduler(model_, *tok_, o, &metrics_);
  }

  GenerationJob job(const std::string& prompt, bool with_lora) {
    GenerationJob j;
    j.prompt = tok_->tokenize(prompt, true, true);
    j.sampling.temperature = 0;
    j.max_tokens = 16;
    j.ignore_eos = true;
    j.logprobs = 0;  // token events carry the token ids
    if (with_lora) j.lora = lora_;
    return j;
  }

  std::shared_ptr<const engine::Model> model_;
  std::unique_ptr<engine::tokenizer::Tokenizer> tok_;
  std::shared_ptr<const engine::LoraSet> lora_;
  Metrics metrics_;
};

TEST_F(LoraSchedulerTest, MixedRequestsInOneBatchGetTheirSoloTokens) {
  const std::vector<std::string> prompts = {"Hello world, this is a test", "Hello world, this is a test",
                                            "Another prompt entirely", "Another prompt entirely"};
  std::vector<Output> solo;
  for (size_t i = 0; i < prompts.size(); ++i) {
    auto s = make(1, 0);
    solo.push_back(collect(*s->submit(job(prompts[i], i % 2 == 1))));
  }
  ASSERT_NE(solo[0].tokens, solo[1].tokens)
      << "the adapter must change this greedy output for the test to mean anything";
  auto s = make(4, size_t{64} << 20);
  std::vector<std::shared_ptr<JobEvents>> running;
  for (size_t i = 0; i < prompts.size(); ++i) running.push_back(*s->submit(job(prompts[i], i % 2 == 1)));
  for (size_t i = 0; i < prompts.size(); ++i) {
    const Output out = collect(running[i]);
    EXPECT_EQ(out.tokens, solo[i].tokens) << "request " << i << (i % 2 == 1 ? " (LoRA)" : " (base)");
  }
}

TEST_F(LoraSchedulerTest, PrefixCacheIsKeptPerAdapterSet) {
  auto s = make(1, size_t{64} << 20);
  const std::string prompt = "Once upon a time there was a little dog who liked to run";
  const Output base = collect(*s->submit(job(prompt, false)));
  const Output lora_first = collect(*s->submit(job(prompt, true)));
  ASSERT_EQ(lora_first.tokens.size(), 16u);
  ASSERT_NE(lora_first.tokens, base.tokens);
  EXPECT_EQ(lora_first.done.usage.cached_tokens, 0) << "base keys and values must not serve an adapter request";
  const Output lora_again = collect(*s->submit(job(prompt, true)));
  EXPECT_GT(lora_again.done.usage.cached_tokens, 0);
  EXPECT_EQ(lora_again.tokens, lora_first.tokens);
  // A different set object with the same adapter and scale is the same set.
  GenerationJob same = job(prompt, false);
  same.lora = std::make_shared<const engine::LoraSet>(*lora_);
  const Output lora_copy = collect(*s->submit(std::move(same)));
  EXPECT_GT(lora_copy.done.usage.cached_tokens, 0);
  EXPECT_EQ(lora_copy.tokens, lora_first.tokens);
  // Another scale is another set.
  GenerationJob half = job(prompt, false);
  half.lora = std::make_shared<const engine::LoraSet>(engine::LoraSet{{(*lora_)[0].adapter, 0.5f}});
  const Output lora_half = collect(*s->submit(std::move(half)));
  EXPECT_EQ(lora_half.done.usage.cached_tokens, 0);
  const Output base_again = collect(*s->submit(job(prompt, false)));
  EXPECT_GT(base_again.done.usage.cached_tokens, 0);
  EXPECT_EQ(base_again.tokens, base.tokens);
}

TEST(SameLora, ComparesAdaptersAndScalesInOrder) {
  EXPECT_TRUE(same_lora(nullptr, nullptr));
  const engine::LoraSet empty;
  EXPECT_TRUE(same_lora(nullptr, &empty));
  // Adapters are compared by identity; null stand-ins suffice here.
  const engine::LoraSet a{{nullptr, 1.0f}};
  const engine::LoraSet b{{nullptr, 0.5f}};
  EXPECT_FALSE(same_lora(&a, nullptr));
  EXPECT_FALSE(same_lora(&a, &b));
  EXPECT_TRUE(same_lora(&a, &a));
}

}  // namespace
}  // namespace cellserve::server
