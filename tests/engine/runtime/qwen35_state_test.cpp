// qwen35's per-sequence recurrent state: batching invariance, prefill in one batch vs token by
// token vs small batches, copying a sequence, refusing partial removal, and snapshots.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "engine/runtime/context.h"
#include "tests/support/testdata.h"

namespace cellserve::engine {
namespace {

constexpr const char* kModel = "models/qwen35-tiny-f32.gguf";

int32_t argmax(std::span<const float> v) {
  return static_cast<int32_t>(std::max_element(v.begin(), v.end()) - v.begin());
}

std::unique_ptr<Context> make_context(const std::string& file, int64_t n_batch = 512, int n_threads = 2) {
  auto model = load_model(cellserve::testing::testdata_path(file));
  EXPECT_TRUE(model.ok()) << model.status().to_string();
  if (!model.ok()) return nullptr;
  ContextParams p;
  p.n_ctx = 512;
  p.n_batch = n_batch;
  p.n_threads = n_threads;
  p.kv_type = GgmlType::F32;
  auto ctx = Context::create(*model, p);
  EXPECT_TRUE(ctx.ok()) << ctx.status().to_string();
  return ctx.ok() ? std::move(ctx).value() : nullptr;
}

// Tokens [begin, end) of `tokens` at their index as position, logits for the last one.
Status feed(Context& ctx, const std::vector<int32_t>& tokens, size_t begin, size_t end, SeqId seq) {
  Batch b;
  for (size_t i = begin; i < end; ++i) b.add(tokens[i], static_cast<int32_t>(i), seq, i + 1 == end);
  return ctx.decode(b);
}

std::vector<int32_t> greedy(Context& ctx, SeqId seq, int32_t next_pos, int n) {
  std::vector<int32_t> out;
  for (int i = 0; i < n; ++i) {
    out.push_back(argmax(ctx.logits(0)));
    Batch s;
    s.add(out.back(), next_pos + i, seq, true);
    EXPECT_TRUE(ctx.decode(s).ok());
  }
  return out;
}

std::vector<int32_t> test_tokens(int n) {
  std::vector<int32_t> t;
  for (int i = 0; i < n; ++i) t.push_back((i * 37 + 11) % 1000);
  return t;
}

float max_abs_diff(std::span<const float> a, std::span<const float> b) {
  float m = 0.0f;
  for (size_t i = 0; i < a.size(); ++i) m = std::max(m, std::fabs(a[i] - b[i]));
  return m;
}

TEST(Qwen35State, MultiSequenceBatchEqualsOneByOne) {
  CS_REQUIRE_TESTDATA();
  const std::vector<std::vector<int32_t>> prompts = {
      {1001, 872, 198, 641}, {50, 60, 70}, {300, 301, 302, 303, 304, 305, 306, 307, 308}, {9}};
  for (const char* file : {kModel, "models/qwen35-tiny-q4_k_m.gguf"}) {
    SCOPED_TRACE(file);
    auto ctx = make_context(file);
    ASSERT_NE(ctx, nullptr);
    const int n = 10;
    std::vector<std::vector<int32_t>> alone;
    for (const auto& p : prompts) {
      ASSERT_TRUE(feed(*ctx, p, 0, p.size(), 0).ok());
      alone.push_back(greedy(*ctx, 0, static_cast<int32_t>(p.size()), n));
      ASSERT_TRUE(ctx->seq_rm(0).ok());
    }
    // All prompts interleaved in one batch, then every step advances all sequences together.
    Batch b;
    for (size_t i = 0; i < 9; ++i) {
      for (size_t s = 0; s < prompts.size(); ++s) {
        if (i < prompts[s].size()) {
          b.add(prompts[s][i], static_cast<int32_t>(i), static_cast<SeqId>(s), i + 1 == prompts[s].size());
        }
      }
    }
    ASSERT_TRUE(ctx->decode(b).ok());
    // Output rows are in batch order: the sequence whose prompt ends first comes first.
    std::vector<size_t> order = {3, 1, 0, 2};
    std::vector<std::vector<int32_t>> together(prompts.size());
    for (size_t r = 0; r < order.size(); ++r)
      together[order[r]].push_back(argmax(ctx->logits(static_cast<int64_t>(r))));
    for (int step = 1; step < n; ++step) {
      Batch next;
      for (size_t s = 0; s < prompts.size(); ++s) {
        next.add(together[s].back(), static_cast<int32_t>(prompts[s].size()) + step - 1, static_cast<SeqId>(s), true);
      }
      ASSERT_TRUE(ctx->decode(next).ok());
      for (size_t s = 0; s < prompts.size(); ++s) together[s].push_back(argmax(ctx->logits(static_cast<int64_t>(s))));
    }
    EXPECT_EQ(together, alone);
  }
}

TEST(Qwen35State, PrefillInOneBatchTokenByTokenAndChunkedAgree) {
  CS_REQUIRE_TESTDATA();
  // 150 tokens: the one-batch path crosses two delta-rule chunk boundaries (64).
  const std::vector<int32_t> tokens = test_tokens(150);
  std::vector<float> reference;
  for (int64_t n_batch : {512, 1, 7, 64}) {
    SCOPED_TRACE("n_batch " + std::to_string(n_batch));
    auto ctx = make_context(kModel, n_batch);
    ASSERT_NE(ctx, nullptr);
    ASSERT_TRUE(feed(*ctx, tokens, 0, tokens.size(), 0).ok());
    const auto logits = ctx->logits(0);
    if (reference.empty()) {
      reference.assign(logits.begin(), logits.end());
    } else {
      EXPECT_LE(max_abs_diff(logits, reference), 1e-4f);
    }
  }
  // Token by token through separate decode calls (the recurrent step every time).
  auto ctx = make_context(kModel);
  ASSERT_NE(ctx, nullptr);
  for (size_t i = 0; i < tokens.size(); ++i) ASSERT_TRUE(feed(*ctx, tokens, i, i + 1, 0).ok());
  EXPECT_LE(max_abs_diff(ctx->logits(0), reference), 1e-4f);
}

TEST(Qwen35State, CopiedSequenceContinuesIdentically) {
  CS_REQUIRE_TESTDATA();
  auto ctx = make_context(kModel, 512, 1);
  ASSERT_NE(ctx, nullptr);
  const std::vector<int32_t> prompt = test_tokens(20);
  ASSERT_TRUE(feed(*ctx, prompt, 0, prompt.size(), 0).ok());
  const auto reference = greedy(*ctx, 0, 20, 8);
  ASSERT_TRUE(ctx->seq_rm(0).ok());

  // Prefill all but the last token in sequence 0, copy it to sequence 1, drop 0, continue in 1.
  ASSERT_TRUE(feed(*ctx, prompt, 0, 19, 0).ok());
  EXPECT_EQ(ctx->seq_cp(0, 1, 0, 5).code(), StatusCode::Unimplemented);  // part of a recurrent sequence
  ASSERT_TRUE(ctx->seq_cp(0, 1).ok());
  EXPECT_EQ(ctx->seq_cp(0, 1).code(), StatusCode::InvalidArgument);  // destination not empty
  ASSERT_TRUE(ctx->seq_rm(0).ok());
  EXPECT_EQ(ctx->seq_pos_max(0), -1);
  EXPECT_FALSE(ctx->recurrent().in_use(0));
  ASSERT_TRUE(feed(*ctx, prompt, 19, 20, 1).ok());
  EXPECT_EQ(greedy(*ctx, 1, 20, 8), reference);
}

TEST(Qwen35State, PartialRemovalIsRefusedAndChangesNothing) {
  CS_REQUIRE_TESTDATA();
  auto ctx = make_context(kModel, 512, 1);
  ASSERT_NE(ctx, nullptr);
  EXPECT_TRUE(ctx->is_recurrent());
  const std::vector<int32_t> prompt = test_tokens(12);
  ASSERT_TRUE(feed(*ctx, prompt, 0, 10, 0).ok());
  EXPECT_EQ(ctx->seq_rm(0, 5, -1).code(), StatusCode::Unimplemented);
  EXPECT_EQ(ctx->seq_rm(0, 0, 3).code(), StatusCode::Unimplemented);
  EXPECT_EQ(ctx->seq_rm(-1, 9, -1).code(), StatusCode::Unimplemented);
  EXPECT_EQ(ctx->seq_rm(64, 0, -1).code(), StatusCode::InvalidArgument);
  EXPECT_TRUE(ctx->seq_rm(0, 10, -1).ok());  // holds none of the positions: nothing to do
  EXPECT_EQ(ctx->seq_pos_max(0), 9);
  ASSERT_TRUE(feed(*ctx, prompt, 10, 12, 0).ok());
  const std::vector<float> continued(ctx->logits(0).begin(), ctx->logits(0).end());

  // Whole-sequence removal resets the state: starting over reproduces the same logits.
  ASSERT_TRUE(ctx->seq_rm(0, 0, -1).ok());
  EXPECT_FALSE(ctx->recurrent().in_use(0));
  ASSERT_TRUE(feed(*ctx, prompt, 0, 10, 0).ok());
  ASSERT_TRUE(feed(*ctx, prompt, 10, 12, 0).ok());
  EXPECT_EQ(max_abs_diff(ctx->logits(0), continued), 0.0f);
}

TEST(Qwen35State, SnapshotRestoresASharedPrefix) {
  CS_REQUIRE_TESTDATA();
  for (const char* file : {kModel, "models/qwen3-tiny-f32.gguf"}) {  // hybrid, and KV-only
    SCOPED_TRACE(file);
    auto ctx = make_context(file, 512, 1);
    ASSERT_NE(ctx, nullptr);
    const std::vector<int32_t> system = test_tokens(30);
    std::vector<int32_t> a = system, b = system;
    for (int i = 0; i < 6; ++i) a.push_back(500 + i), b.push_back(700 + 3 * i);

    // Reference: each conversation from scratch.
    ASSERT_TRUE(feed(*ctx, a, 0, a.size(), 0).ok());
    const std::vector<float> ref_a(ctx->logits(0).begin(), ctx->logits(0).end());
    ASSERT_TRUE(ctx->seq_rm(0).ok());
    ASSERT_TRUE(feed(*ctx, b, 0, b.size(), 0).ok());
    const std::vector<float> ref_b(ctx->logits(0).begin(), ctx->logits(0).end());
    ASSERT_TRUE(ctx->seq_rm(0).ok());

    // The system prompt once, snapshot, then conversation a in the same sequence.
    EXPECT_EQ(ctx->save_state(0, 7).code(), StatusCode::InvalidArgument);  // nothing to save yet
    ASSERT_TRUE(feed(*ctx, system, 0, system.size(), 0).ok());
    ASSERT_TRUE(ctx->save_state(0, 7).ok());
    ASSERT_TRUE(feed(*ctx, a, system.size(), a.size(), 0).ok());
    EXPECT_LE(max_abs_diff(ctx->logits(0), ref_a), 1e-4f);
    // Back to the snapshot in place, then conversation b.
    EXPECT_EQ(ctx->restore_state(0, 8).code(), StatusCode::NotFound);
    ASSERT_TRUE(ctx->restore_state(0, 7).ok());
    EXPECT_EQ(ctx->seq_pos_max(0), 29);
    ASSERT_TRUE(feed(*ctx, b, system.size(), b.size(), 0).ok());
    EXPECT_LE(max_abs_diff(ctx->logits(0), ref_b), 1e-4f);
    // A second sequence reuses the prefix cells of sequence 0 (which holds b now).
    EXPECT_EQ(ctx->restore_state(2, 7, 5).code(), StatusCode::InvalidArgument);  // 5 holds nothing
    ASSERT_TRUE(ctx->restore_state(2, 7, 0).ok());
    EXPECT_EQ(ctx->seq_pos_max(2), 29);
    EXPECT_EQ(ctx->seq_pos_max(0), static_cast<int32_t>(b.size()) - 1);
    EXPECT_EQ(ctx->restore_state(2, 7, 0).code(), StatusCode::InvalidArgument);  // 2 is not empty now
    ASSERT_TRUE(feed(*ctx, a, system.size(), a.size(), 2).ok());
    EXPECT_LE(max_abs_diff(ctx->logits(0), ref_a), 1e-4f);
    ctx->drop_state(7);
    EXPECT_EQ(ctx->restore_state(0, 7).code(), StatusCode::NotFound);
  }
}

}  // namespace
}  // namespace cellserve::engine
