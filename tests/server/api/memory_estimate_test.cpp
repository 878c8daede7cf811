// The memory a model needs before it is loaded: read from the GGUF header of shared/testdata's
// tiny models (skipped when absent), and the refusal a device with too little free memory gives.
#include "server/memory_estimate.h"

#include <algorithm>
#include <filesystem>

#include <gtest/gtest.h>

#include "server/serve_stack.h"
#include "tests/support/testdata.h"

namespace cellserve::server {
namespace {

MemoryEstimate estimate(const std::string& model, int64_t ctx, int parallel = 1, const std::string& kv = "f16") {
  auto e = estimate_serve_memory({testing::testdata_path("models/" + model), ctx, parallel, 512, kv});
  EXPECT_TRUE(e.ok()) << e.status().to_string();
  return e.ok() ? *e : MemoryEstimate{};
}

TEST(MemoryEstimate, WeightsAreTheTensorsAndTheKvCacheFollowsItsSizeAndType) {
  CS_REQUIRE_TESTDATA();
  const std::string path = testing::testdata_path("models/qwen3-tiny-f32.gguf");
  const uint64_t file = std::filesystem::file_size(path);
  const MemoryEstimate e = estimate("qwen3-tiny-f32.gguf", 1024);
  EXPECT_LE(e.weights_bytes, file);
  EXPECT_GT(e.weights_bytes, file * 9 / 10) << "the header and vocabulary are a small part of the file";
  EXPECT_GT(e.kv_bytes, 0u);
  EXPECT_GT(e.scratch_bytes, 0u);
  EXPECT_EQ(e.recurrent_bytes, 0u) << "qwen3 has no recurrent layers";
  EXPECT_EQ(e.total(), e.weights_bytes + e.kv_bytes + e.scratch_bytes);
  EXPECT_EQ(estimate("qwen3-tiny-f32.gguf", 2048).kv_bytes, 2 * e.kv_bytes);
  EXPECT_EQ(estimate("qwen3-tiny-f32.gguf", 1024, 1, "f32").kv_bytes, 2 * e.kv_bytes);
  EXPECT_LT(estimate("qwen3-tiny-f32.gguf", 1024, 1, "q8_0").kv_bytes, e.kv_bytes);
  EXPECT_LT(estimate("qwen3-tiny-q4_0.gguf", 1024).weights_bytes, e.weights_bytes / 3);
}

TEST(MemoryEstimate, GatedDeltaNetLayersKeepAStatePerSlotAndFewerAttentionLayersCache) {
  CS_REQUIRE_TESTDATA();
  const MemoryEstimate one = estimate("qwen35-tiny-f32.gguf", 1024, 1);
  const MemoryEstimate four = estimate("qwen35-tiny-f32.gguf", 1024, 4);
  EXPECT_GT(one.recurrent_bytes, 0u);
  // One state per slot; the prefix cache's snapshots: one per 1,024 cells and one per slot's
  // finished sequence. 1 + (1 + 1) states against 4 + (1 + 4).
  EXPECT_EQ(four.recurrent_bytes * 3, one.recurrent_bytes * 9);
  EXPECT_EQ(four.kv_bytes, one.kv_bytes) << "the KV cells are shared by the slots";
}

TEST(MemoryEstimate, StateSnapshotsGrowWithTheContextUpToThePrefixCacheBudget) {
  CS_REQUIRE_TESTDATA();
  const std::string path = testing::testdata_path("models/qwen35-tiny-f32.gguf");
  auto at = [&](int64_t ctx, int64_t prefix_cache_mb) {
    auto e = estimate_serve_memory({path, ctx, 1, 512, "f16", prefix_cache_mb});
    EXPECT_TRUE(e.ok()) << e.status().to_string();
    return e.ok() ? e->recurrent_bytes : 0;
  };
  const uint64_t per_seq = at(1024, 1024) / 3;  // the slot, one snapshot of the cells, one finished sequence
  EXPECT_EQ(at(8192, 1024), per_seq * (1 + 8 + 1));
  EXPECT_EQ(at(8192, 0), per_seq) << "no prefix cache, no snapshots";
  EXPECT_EQ(at(8192, 1), per_seq + std::min<uint64_t>(per_seq * 9, uint64_t{1} << 20)) << "a 1 MiB budget";
}

TEST(MemoryEstimate, TheRefusalGivesTheNumbers) {
  MemoryEstimate e;
  e.weights_bytes = 5ull << 30;
  e.kv_bytes = 512ull << 20;
  e.scratch_bytes = 40ull << 20;
  EXPECT_EQ(insufficient_memory(e, e.total()), "");
  EXPECT_EQ(insufficient_memory(e, 3ull << 30),
            "insufficient_memory: needs 5.5 GiB (weights 5.0 GiB + KV cache 512 MiB + scratch 40 MiB); 3.0 GiB free");
  e.recurrent_bytes = 19ull << 20;
  EXPECT_NE(insufficient_memory(e, 0).find("+ recurrent state 19 MiB"), std::string::npos);
  EXPECT_EQ(human_bytes(0), "0 MiB");
  EXPECT_EQ(human_bytes(1536ull << 20), "1.5 GiB");
}

TEST(MemoryEstimate, BadInputIsAnError) {
  EXPECT_FALSE(estimate_serve_memory({"/nonexistent/model.gguf", 1024, 1, 512, "f16"}).ok());
  CS_REQUIRE_TESTDATA();
  const auto bad_kv = estimate_serve_memory({testing::testdata_path("models/qwen3-tiny-f32.gguf"), 1024, 1, 512, "q2"});
  EXPECT_EQ(bad_kv.status().code(), StatusCode::InvalidArgument);
}

TEST(LoadServeStack, RefusesAModelLargerThanTheFreeMemoryBeforeLoadingIt) {
  CS_REQUIRE_TESTDATA();
  ServeStackOptions o;
  o.model_path = testing::testdata_path("models/qwen3-tiny-f32.gguf");
  o.parallel = 1;
  o.ctx_size = 256;
  o.memory_available_bytes = 6ull << 20;  // the tiny-memory fixture's MemAvailable: 6 MiB
  Metrics metrics;
  std::vector<std::string> logged;
  auto stack = load_serve_stack(o, &metrics, [&](const std::string& line) { logged.push_back(line); });
  ASSERT_FALSE(stack.ok());
  EXPECT_EQ(stack.status().code(), StatusCode::ResourceExhausted);
  EXPECT_EQ(stack.status().message().rfind("insufficient_memory: needs ", 0), 0u) << stack.status().message();
  EXPECT_NE(stack.status().message().find("; 6 MiB free"), std::string::npos) << stack.status().message();

  o.memory_available_bytes = 1ull << 30;
  logged.clear();
  auto loaded = load_serve_stack(o, &metrics, [&](const std::string& line) { logged.push_back(line); });
  ASSERT_TRUE(loaded.ok()) << loaded.status().to_string();
  bool said = false;
  for (const std::string& line : logged) said |= line.rfind("memory: needs ", 0) == 0;
  EXPECT_TRUE(said) << "the agent's log shows what the model takes";
}

}  // namespace
}  // namespace cellserve::server
