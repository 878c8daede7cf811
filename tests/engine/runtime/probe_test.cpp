// Probe points report every named intermediate tensor, and they are the tensors the forward
// pass actually used (the final logits probe equals the returned logits).
#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "engine/runtime/context.h"
#include "tests/support/testdata.h"

namespace cellserve::engine {
namespace {

struct Recorded {
  int64_t n_tokens;
  int64_t width;
  std::vector<float> data;
};

class RecordingProbe : public ProbeSink {
 public:
  void record(std::string_view name, int layer, const float* data, int64_t n_tokens, int64_t width) override {
    seen[{std::string(name), layer}] = Recorded{n_tokens, width, std::vector<float>(data, data + n_tokens * width)};
  }
  std::map<std::pair<std::string, int>, Recorded> seen;
};

TEST(Probes, EveryLayerReportsItsNamedTensors) {
  CS_REQUIRE_TESTDATA();
  auto model = load_model(cellserve::testing::testdata_path("models/qwen3-tiny-f32.gguf"));
  ASSERT_TRUE(model.ok());
  ContextParams p;
  p.n_ctx = 64;
  p.kv_type = GgmlType::F32;
  auto ctx = Context::create(*model, p);
  ASSERT_TRUE(ctx.ok());
  RecordingProbe probe;
  (*ctx)->set_probe(&probe);
  Batch b;
  for (int i = 0; i < 5; ++i) b.add(10 + i, i, 0, i >= 3);
  ASSERT_TRUE((*ctx)->decode(b).ok());

  const int64_t n_layer = (*model)->info().n_layer;
  const int64_t n_embd = (*model)->info().n_embd;
  for (int il = 0; il < n_layer; ++il) {
    for (const char* name : {"attn_norm", "attn_out", "ffn_out", "layer_out"}) {
      auto it = probe.seen.find({name, il});
      ASSERT_NE(it, probe.seen.end()) << name << " layer " << il;
      EXPECT_EQ(it->second.n_tokens, 5);
      EXPECT_EQ(it->second.width, n_embd);
    }
  }
  const Recorded& logits = probe.seen.at({"logits", -1});
  EXPECT_EQ(logits.n_tokens, 2);  // only the two output rows
  ASSERT_EQ(logits.width, (*model)->info().n_vocab);
  for (int64_t i = 0; i < 2; ++i) {
    const auto ours = (*ctx)->logits(i);
    for (int64_t v = 0; v < logits.width; ++v)
      ASSERT_EQ(ours[static_cast<size_t>(v)], logits.data[static_cast<size_t>(i * logits.width + v)]);
  }
  EXPECT_EQ(probe.seen.at({"result_norm", -1}).n_tokens, 2);
}

TEST(KvCacheTypes, F16AndQ8_0CachesStayCloseToF32) {
  CS_REQUIRE_TESTDATA();
  auto model = load_model(cellserve::testing::testdata_path("models/llama-tiny-f32.gguf"));
  ASSERT_TRUE(model.ok());
  std::vector<float> reference;
  for (GgmlType type : {GgmlType::F32, GgmlType::F16, GgmlType::Q8_0}) {
    ContextParams p;
    p.n_ctx = 64;
    p.kv_type = type;
    auto ctx = Context::create(*model, p);
    ASSERT_TRUE(ctx.ok()) << ctx.status().to_string();
    Batch b;
    for (int i = 0; i < 16; ++i) b.add(1 + i * 7, i, 0, i == 15);
    ASSERT_TRUE((*ctx)->decode(b).ok());
    const auto logits = (*ctx)->logits(0);
    if (reference.empty()) {
      reference.assign(logits.begin(), logits.end());
      continue;
    }
    float max_abs = 0.0f;
    for (size_t v = 0; v < reference.size(); ++v) max_abs = std::max(max_abs, std::fabs(logits[v] - reference[v]));
    // README §4 table C: an F16 cache moves llama-tiny's logits by ~0.01; Q8_0 by more.
    EXPECT_LT(max_abs, type == GgmlType::F16 ? 0.05f : 0.5f) << ggml_type_name(type);
    EXPECT_GT(max_abs, 0.0f) << "the cache type should matter";
  }
}

}  // namespace
}  // namespace cellserve::engine
