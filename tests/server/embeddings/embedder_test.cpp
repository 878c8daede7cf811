// The Embedder against an ordinary forward pass of the same model: "last" pooling is the last
// token's normalised result_norm row, "mean" the normalised mean of every row, "cls" the first;
// results are deterministic and do not depend on how inputs are grouped into batches or split
// into passes. Runs on the tiny models of shared/testdata (skipped when absent), including the
// hybrid qwen35 model, whose recurrent state must be cleared between inputs.
#include "server/embeddings/embedder.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "engine/runtime/context.h"
#include "engine/tokenizer/tokenizer.h"
#include "tests/support/testdata.h"

namespace cellserve::server::embeddings {
namespace {

// Every "result_norm" row of the decodes it watches, in order.
class ResultNormProbe : public engine::ProbeSink {
 public:
  void record(std::string_view name, int, const float* data, int64_t n_tokens, int64_t width) override {
    if (name != "result_norm") return;
    rows.insert(rows.end(), data, data + n_tokens * width);
  }
  std::vector<float> rows;
};

float max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
  EXPECT_EQ(a.size(), b.size());
  float m = 0;
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) m = std::max(m, std::fabs(a[i] - b[i]));
  return m;
}

class EmbedderTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    CS_REQUIRE_TESTDATA();
    auto model = engine::load_model(testing::testdata_path("models/" + GetParam()));
    ASSERT_TRUE(model.ok()) << model.status().to_string();
    model_ = *model;
    auto tok = engine::tokenizer::Tokenizer::from_gguf(model_->file());
    ASSERT_TRUE(tok.ok()) << tok.status().to_string();
    tok_ = std::make_unique<engine::tokenizer::Tokenizer>(std::move(tok).value());
  }

  std::vector<int32_t> tokens(const std::string& text) const { return tok_->tokenize(text, true, true); }

  std::unique_ptr<Embedder> embedder(Pooling pooling, int64_t n_ctx = 256, int64_t n_batch = 512,
                                     int64_t max_output_rows = 0) const {
    EmbedderOptions o;
    o.pooling = pooling;
    o.n_ctx = n_ctx;
    o.n_batch = n_batch;
    o.kv_type = engine::GgmlType::F32;
    o.max_output_rows = max_output_rows;
    auto e = Embedder::create(model_, o);
    EXPECT_TRUE(e.ok()) << e.status().to_string();
    return e.ok() ? std::move(e).value() : nullptr;
  }

  // The result_norm rows of an ordinary single-sequence forward pass over `ids`, for the
  // positions `wanted` selects: [n_selected][n_embd].
  std::vector<float> reference_rows(const std::vector<int32_t>& ids, const std::function<bool(int64_t)>& wanted) {
    engine::ContextParams p;
    p.n_ctx = 256;
    p.kv_type = engine::GgmlType::F32;
    auto ctx = engine::Context::create(model_, p);
    EXPECT_TRUE(ctx.ok()) << ctx.status().to_string();
    ResultNormProbe probe;
    (*ctx)->set_probe(&probe);
    engine::Batch b;
    for (size_t i = 0; i < ids.size(); ++i) b.add(ids[i], static_cast<int32_t>(i), 0, wanted(static_cast<int64_t>(i)));
    EXPECT_TRUE((*ctx)->decode(b).ok());
    return probe.rows;
  }

  std::vector<float> embed_one(Embedder& e, const std::vector<int32_t>& ids) {
    const std::vector<std::vector<int32_t>> inputs{ids};
    auto out = e.embed(inputs);
    EXPECT_TRUE(out.ok()) << out.status().to_string();
    if (!out.ok() || out->size() != 1) return {};
    return (*out)[0].values;
  }

  std::shared_ptr<const engine::Model> model_;
  std::unique_ptr<engine::tokenizer::Tokenizer> tok_;
};

const char* const kText = "Once upon a time, there was a little girl named Lily.";

TEST_P(EmbedderTest, LastIsTheLastTokensNormalisedResultNorm) {
  const std::vector<int32_t> ids = tokens(kText);
  const auto n = static_cast<int64_t>(ids.size());
  std::vector<float> want = reference_rows(ids, [n](int64_t pos) { return pos == n - 1; });
  ASSERT_EQ(static_cast<int64_t>(want.size()), model_->info().n_embd);
  l2_normalize(want);
  auto e = embedder(Pooling::Last);
  ASSERT_NE(e, nullptr);
  const std::vector<float> got = embed_one(*e, ids);
  EXPECT_LE(max_abs_diff(got, want), 1e-6f);
}

TEST_P(EmbedderTest, MeanIsTheNormalisedMeanOfEveryRow) {
  const std::vector<int32_t> ids = tokens(kText);
  const int64_t E = model_->info().n_embd;
  const std::vector<float> rows = reference_rows(ids, [](int64_t) { return true; });
  ASSERT_EQ(rows.size(), ids.size() * static_cast<size_t>(E));
  std::vector<float> want(static_cast<size_t>(E));
  for (int64_t k = 0; k < E; ++k) {
    double s = 0;
    for (size_t t = 0; t < ids.size(); ++t) s += rows[t * static_cast<size_t>(E) + static_cast<size_t>(k)];
    want[static_cast<size_t>(k)] = static_cast<float>(s / static_cast<double>(ids.size()));
  }
  l2_normalize(want);
  auto e = embedder(Pooling::Mean);
  ASSERT_NE(e, nullptr);
  EXPECT_LE(max_abs_diff(embed_one(*e, ids), want), 1e-6f);
}

TEST_P(EmbedderTest, ClsIsTheFirstRowAndNoneIsEveryRow) {
  const std::vector<int32_t> ids = tokens(kText);
  const int64_t E = model_->info().n_embd;
  std::vector<float> rows = reference_rows(ids, [](int64_t) { return true; });
  for (size_t r = 0; r < ids.size(); ++r)
    l2_normalize(std::span<float>(rows).subspan(r * static_cast<size_t>(E), static_cast<size_t>(E)));

  auto cls = embedder(Pooling::Cls);
  ASSERT_NE(cls, nullptr);
  EXPECT_LE(max_abs_diff(embed_one(*cls, ids), std::vector<float>(rows.begin(), rows.begin() + E)), 1e-6f);

  auto none = embedder(Pooling::None);
  ASSERT_NE(none, nullptr);
  const std::vector<std::vector<int32_t>> inputs{ids};
  auto out = none->embed(inputs);
  ASSERT_TRUE(out.ok()) << out.status().to_string();
  EXPECT_EQ((*out)[0].n_rows, static_cast<int64_t>(ids.size()));
  EXPECT_LE(max_abs_diff((*out)[0].values, rows), 1e-6f);
}

TEST_P(EmbedderTest, IsDeterministic) {
  auto e = embedder(Pooling::Mean);
  ASSERT_NE(e, nullptr);
  const std::vector<int32_t> ids = tokens(kText);
  const std::vector<float> first = embed_one(*e, ids);
  EXPECT_EQ(embed_one(*e, ids), first);
  auto fresh = embedder(Pooling::Mean);
  ASSERT_NE(fresh, nullptr);
  EXPECT_EQ(embed_one(*fresh, ids), first);
}

TEST_P(EmbedderTest, BatchedInputsGiveTheVectorsOfOneAtATime) {
  const std::vector<std::vector<int32_t>> inputs{tokens("Once upon a time"), tokens(kText), tokens("Lily"),
                                                 tokens("She loved to play outside in the park.")};
  for (Pooling pooling : {Pooling::Last, Pooling::Mean}) {
    auto e = embedder(pooling);
    ASSERT_NE(e, nullptr);
    auto together = e->embed(inputs);
    ASSERT_TRUE(together.ok()) << together.status().to_string();
    ASSERT_EQ(together->size(), inputs.size());
    for (size_t i = 0; i < inputs.size(); ++i) {
      const std::vector<float> alone = embed_one(*e, inputs[i]);
      EXPECT_LE(max_abs_diff((*together)[i].values, alone), 1e-5f) << pooling_name(pooling) << " input " << i;
    }
  }
}

TEST_P(EmbedderTest, ManyInputsAndSplitPassesGiveTheSameVectors) {
  // 11 inputs: more than kMaxSequences, and more tokens together than a 40-cell cache holds.
  std::vector<std::vector<int32_t>> inputs;
  for (int i = 0; i < 11; ++i) inputs.push_back(tokens("Lily saw " + std::to_string(i * 7) + " red balls."));
  auto wide = embedder(Pooling::Mean);
  auto narrow = embedder(Pooling::Mean, /*n_ctx=*/40, /*n_batch=*/4, /*max_output_rows=*/3);
  ASSERT_NE(wide, nullptr);
  ASSERT_NE(narrow, nullptr);
  auto a = wide->embed(inputs);
  auto b = narrow->embed(inputs);
  ASSERT_TRUE(a.ok()) << a.status().to_string();
  ASSERT_TRUE(b.ok()) << b.status().to_string();
  ASSERT_EQ(a->size(), inputs.size());
  ASSERT_EQ(b->size(), inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    EXPECT_LE(max_abs_diff((*a)[i].values, (*b)[i].values), 1e-5f) << "input " << i;
    double n2 = 0;
    for (float x : (*a)[i].values) n2 += static_cast<double>(x) * x;
    EXPECT_NEAR(n2, 1.0, 1e-5);
  }
}

TEST_P(EmbedderTest, RefusesBadInputsAndStopsWhenAsked) {
  auto e = embedder(Pooling::Last, /*n_ctx=*/8);
  ASSERT_NE(e, nullptr);
  const std::vector<std::vector<int32_t>> empty{{}};
  EXPECT_EQ(e->embed(empty).status().code(), StatusCode::InvalidArgument);
  const std::vector<std::vector<int32_t>> too_long{std::vector<int32_t>(9, 5)};
  auto r = e->embed(too_long);
  EXPECT_EQ(r.status().code(), StatusCode::InvalidArgument);
  EXPECT_NE(r.status().message().find("9 tokens"), std::string::npos) << r.status().message();
  const std::vector<std::vector<int32_t>> bad_id{{1, static_cast<int32_t>(model_->info().n_vocab)}};
  EXPECT_EQ(e->embed(bad_id).status().code(), StatusCode::InvalidArgument);
  const std::vector<std::vector<int32_t>> fine{{1, 2, 3}};
  EXPECT_EQ(e->embed(fine, [] { return true; }).status().code(), StatusCode::Unavailable);
  // A stopped call leaves nothing behind for the next.
  auto after = e->embed(fine);
  ASSERT_TRUE(after.ok()) << after.status().to_string();
  auto fresh = embedder(Pooling::Last, 8);
  ASSERT_NE(fresh, nullptr);
  EXPECT_EQ((*after)[0].values, embed_one(*fresh, fine[0]));
}

INSTANTIATE_TEST_SUITE_P(TinyModels, EmbedderTest,
                         ::testing::Values("llama-tiny-f32.gguf", "qwen3-tiny-f32.gguf", "qwen35-tiny-f32.gguf",
                                           "stories260K-q8_0.gguf"),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           std::string name = info.param.substr(0, info.param.find('.'));
                           std::replace(name.begin(), name.end(), '-', '_');
                           return name;
                         });

}  // namespace
}  // namespace cellserve::server::embeddings
