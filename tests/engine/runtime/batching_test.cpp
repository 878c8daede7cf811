// Batching invariance: sequences decoded together in one multi-sequence batch produce the same
// greedy tokens as each decoded alone; KV cells copied between sequences reproduce a prefix.
#include <gtest/gtest.h>

#include <algorithm>
#include <span>
#include <vector>

#include "engine/runtime/context.h"
#include "tests/support/testdata.h"

namespace cellserve::engine {
namespace {

int32_t argmax(std::span<const float> v) {
  return static_cast<int32_t>(std::max_element(v.begin(), v.end()) - v.begin());
}

// Keeps the first run's logits in `first`; a later run's must equal them bit for bit.
void expect_same_as_first(std::vector<float>& first, std::span<const float> logits) {
  if (first.empty()) {
    first.assign(logits.begin(), logits.end());
    return;
  }
  ASSERT_EQ(logits.size(), first.size());
  for (size_t v = 0; v < first.size(); ++v) ASSERT_EQ(logits[v], first[v]) << v;
}

std::unique_ptr<Context> make_context(const std::string& model_file, int n_threads = 2) {
  auto model = load_model(cellserve::testing::testdata_path(model_file));
  EXPECT_TRUE(model.ok()) << model.status().to_string();
  ContextParams p;
  p.n_ctx = 512;
  p.n_threads = n_threads;
  p.kv_type = GgmlType::F32;
  auto ctx = Context::create(*model, p);
  EXPECT_TRUE(ctx.ok());
  return std::move(ctx).value();
}

const std::vector<std::vector<int32_t>> kPrompts = {
    {1, 403, 407, 261, 378}, {1, 50, 60, 70}, {1, 300, 301, 302, 303, 304, 305}, {1, 9}};

std::vector<int32_t> greedy_alone(Context& ctx, const std::vector<int32_t>& prompt, int n) {
  Batch b;
  for (size_t i = 0; i < prompt.size(); ++i) b.add(prompt[i], static_cast<int32_t>(i), 0, i + 1 == prompt.size());
  EXPECT_TRUE(ctx.decode(b).ok());
  std::vector<int32_t> out;
  for (int i = 0; i < n; ++i) {
    out.push_back(argmax(ctx.logits(0)));
    Batch s;
    s.add(out.back(), static_cast<int32_t>(prompt.size() + i), 0, true);
    EXPECT_TRUE(ctx.decode(s).ok());
  }
  EXPECT_TRUE(ctx.seq_rm(0).ok());
  return out;
}

TEST(Batching, MultiSequenceBatchEqualsOneByOne) {
  CS_REQUIRE_TESTDATA();
  for (const std::string file :
       {"models/stories260K.gguf", "models/qwen3-tiny-f32.gguf", "models/llama-tiny-q4_0.gguf"}) {
    SCOPED_TRACE(file);
    auto ctx = make_context(file);
    const int n = 12;
    std::vector<std::vector<int32_t>> alone;
    for (const auto& p : kPrompts) alone.push_back(greedy_alone(*ctx, p, n));

    // All prompts in one batch, then every decode step advances all sequences together.
    Batch b;
    for (size_t s = 0; s < kPrompts.size(); ++s) {
      for (size_t i = 0; i < kPrompts[s].size(); ++i) {
        b.add(kPrompts[s][i], static_cast<int32_t>(i), static_cast<SeqId>(s), i + 1 == kPrompts[s].size());
      }
    }
    ASSERT_TRUE(ctx->decode(b).ok());
    std::vector<std::vector<int32_t>> together(kPrompts.size());
    for (int step = 0; step < n; ++step) {
      Batch next;
      for (size_t s = 0; s < kPrompts.size(); ++s) {
        together[s].push_back(argmax(ctx->logits(static_cast<int64_t>(s))));
        next.add(together[s].back(), static_cast<int32_t>(kPrompts[s].size()) + step, static_cast<SeqId>(s), true);
      }
      ASSERT_TRUE(ctx->decode(next).ok());
    }
    EXPECT_EQ(together, alone);
  }
}

TEST(Batching, CopiedPrefixContinuesLikeTheOriginal) {
  CS_REQUIRE_TESTDATA();
  auto ctx = make_context("models/stories260K.gguf", 1);
  const std::vector<int32_t> prompt = kPrompts[0];
  const auto reference = greedy_alone(*ctx, prompt, 8);
  // Prefill all but the last prompt token in sequence 0, share it with sequence 1, drop 0.
  Batch b;
  for (size_t i = 0; i + 1 < prompt.size(); ++i) b.add(prompt[i], static_cast<int32_t>(i), 0, false);
  ASSERT_TRUE(ctx->decode(b).ok());
  ASSERT_TRUE(ctx->seq_cp(0, 1).ok());
  ASSERT_TRUE(ctx->seq_rm(0).ok());
  EXPECT_EQ(ctx->seq_pos_max(0), -1);
  EXPECT_EQ(ctx->seq_pos_max(1), static_cast<int32_t>(prompt.size()) - 2);
  Batch last;
  last.add(prompt.back(), static_cast<int32_t>(prompt.size()) - 1, 1, true);
  ASSERT_TRUE(ctx->decode(last).ok());
  std::vector<int32_t> out;
  for (int i = 0; i < 8; ++i) {
    out.push_back(argmax(ctx->logits(0)));
    Batch s;
    s.add(out.back(), static_cast<int32_t>(prompt.size()) + i, 1, true);
    ASSERT_TRUE(ctx->decode(s).ok());
  }
  EXPECT_EQ(out, reference);
}

TEST(Batching, ChunkedPrefillEqualsOneBatch) {
  CS_REQUIRE_TESTDATA();
  auto model = load_model(cellserve::testing::testdata_path("models/qwen3-tiny-f32.gguf"));
  ASSERT_TRUE(model.ok());
  std::vector<float> whole;
  for (int64_t n_batch : {64, 3}) {
    ContextParams p;
    p.n_ctx = 128;
    p.n_batch = n_batch;
    p.kv_type = GgmlType::F32;
    auto ctx = Context::create(*model, p);
    ASSERT_TRUE(ctx.ok());
    Batch b;
    for (int i = 0; i < 20; ++i) b.add(100 + i, i, 0, i == 19);
    ASSERT_TRUE((*ctx)->decode(b).ok());
    const auto logits = (*ctx)->logits(0);
    if (whole.empty()) {
      whole.assign(logits.begin(), logits.end());
    } else {
      for (size_t v = 0; v < whole.size(); ++v) ASSERT_NEAR(logits[v], whole[v], 1e-4) << v;
    }
  }
}

// With an F16 cache, prefill runs attention in tiles of consecutive tokens (engine/models/
// blocks.cpp) and decode one token at a time; every sum keeps its order either way, so the
// logits must be the same bits, whether the prompt goes in as one batch, in odd chunks, or one
// token per decode, and whether another sequence shares the batch.
TEST(Batching, F16CacheLogitsDoNotDependOnTiling) {
  CS_REQUIRE_TESTDATA();
  auto model = load_model(cellserve::testing::testdata_path("models/qwen3-tiny-f32.gguf"));
  ASSERT_TRUE(model.ok());
  constexpr int kTokens = 70;  // several tiles, and tokens past the kernels' 64-cell block
  std::vector<float> whole;
  struct Run {
    int64_t n_batch;
    bool mixed;  // a second sequence's tokens interleaved: sequence 0's are no longer consecutive
  };
  for (const Run run : {Run{128, false}, Run{5, false}, Run{1, false}, Run{256, true}}) {
    SCOPED_TRACE(::testing::Message() << "n_batch " << run.n_batch << (run.mixed ? " mixed" : ""));
    ContextParams p;
    p.n_ctx = 256;
    p.n_batch = run.n_batch;
    p.kv_type = GgmlType::F16;
    auto ctx = Context::create(*model, p);
    ASSERT_TRUE(ctx.ok());
    Batch b;
    for (int i = 0; i < kTokens; ++i) {
      b.add(100 + (i * 37) % 400, i, 0, i + 1 == kTokens);
      if (run.mixed) b.add(50 + i, i, 1, false);
    }
    ASSERT_TRUE((*ctx)->decode(b).ok());
    expect_same_as_first(whole, (*ctx)->logits(0));
    if (HasFatalFailure()) return;
  }
}

// Every parallel job gives each output element to one thread, whole, so the thread count (which
// the pool may also lower while running, on a busy machine) never changes a logit: prefill with
// attention tiles, the Gated DeltaNet's convolution split by channels, and decode.
TEST(Batching, LogitsDoNotDependOnTheThreadCount) {
  CS_REQUIRE_TESTDATA();
  for (const char* file :
       {"models/qwen3-tiny-f32.gguf", "models/qwen3-tiny-q4_0.gguf", "models/qwen35-tiny-q4_k_m.gguf"}) {
    SCOPED_TRACE(file);
    auto model = load_model(cellserve::testing::testdata_path(file));
    ASSERT_TRUE(model.ok()) << model.status().to_string();
    std::vector<float> want;
    for (const int threads : {1, 2, 3}) {
      SCOPED_TRACE(::testing::Message() << threads << " threads");
      ContextParams p;
      p.n_ctx = 256;
      p.n_threads = threads;
      p.kv_type = GgmlType::F16;
      auto ctx = Context::create(*model, p);
      ASSERT_TRUE(ctx.ok());
      Batch b;
      for (int i = 0; i < 70; ++i) b.add(100 + (i * 37) % 400, i, 0, i == 69);
      ASSERT_TRUE((*ctx)->decode(b).ok());
      Batch next;
      next.add(7, 70, 0, true);
      ASSERT_TRUE((*ctx)->decode(next).ok());
      expect_same_as_first(want, (*ctx)->logits(0));
      if (HasFatalFailure()) return;
    }
  }
}

TEST(Batching, RejectsBadBatches) {
  CS_REQUIRE_TESTDATA();
  auto ctx = make_context("models/stories260K.gguf", 1);
  Batch b;
  EXPECT_EQ(ctx->decode(b).code(), StatusCode::InvalidArgument);  // empty
  b.add(100000, 0, 0, true);
  EXPECT_EQ(ctx->decode(b).code(), StatusCode::InvalidArgument);  // token out of range
  b.clear();
  b.add(1, 0, 99, true);
  EXPECT_EQ(ctx->decode(b).code(), StatusCode::InvalidArgument);  // sequence out of range
  b.clear();
  b.add(1, 0, 0, true);
  ASSERT_TRUE(ctx->decode(b).ok());
  EXPECT_EQ(ctx->decode(b).code(), StatusCode::InvalidArgument);  // position does not advance
}

TEST(Batching, FullCacheIsResourceExhaustedAndLeavesCacheUnchanged) {
  CS_REQUIRE_TESTDATA();
  auto model = load_model(cellserve::testing::testdata_path("models/stories260K.gguf"));
  ASSERT_TRUE(model.ok());
  ContextParams p;
  p.n_ctx = 8;
  auto ctx = Context::create(*model, p);
  ASSERT_TRUE(ctx.ok());
  Batch b;
  for (int i = 0; i < 6; ++i) b.add(1, i, 0, false);
  ASSERT_TRUE((*ctx)->decode(b).ok());
  Batch more;
  for (int i = 6; i < 10; ++i) more.add(1, i, 0, false);
  EXPECT_EQ((*ctx)->decode(more).code(), StatusCode::ResourceExhausted);
  EXPECT_EQ((*ctx)->kv().used_cells(), 6);
}

}  // namespace
}  // namespace cellserve::engine
