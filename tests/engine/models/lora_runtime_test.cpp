// LoRA adapters at run time: loading and validation against the base model, and the adapted
// forward pass — a set per sequence, sequences with different sets in one batch, scales. The
// llama.cpp golden for the adapter is checked by golden_test.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <numeric>

#include "engine/gguf/gguf_writer.h"
#include "engine/lora/lora_adapter.h"
#include "engine/lora/lora_merge.h"
#include "engine/runtime/context.h"
#include "tests/support/testdata.h"

namespace cellserve::engine {
namespace {

class LoraRuntimeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    CS_REQUIRE_TESTDATA();
    auto model = load_model(testing::testdata_path("models/qwen3-tiny-f32.gguf"));
    ASSERT_TRUE(model.ok()) << model.status().to_string();
    model_ = *model;
    auto adapter = LoraAdapter::load(adapter_path(), *model_);
    ASSERT_TRUE(adapter.ok()) << adapter.status().to_string();
    adapter_ = *adapter;
  }
  static std::string adapter_path() { return testing::testdata_path("models/qwen3-tiny-lora-f32.gguf"); }

  std::unique_ptr<Context> context(int n_seq) {
    ContextParams p;
    p.n_ctx = 256;
    p.n_seq_max = n_seq;
    p.n_threads = 2;
    p.kv_type = GgmlType::F32;
    auto ctx = Context::create(model_, p);
    EXPECT_TRUE(ctx.ok());
    return std::move(ctx).value();
  }

  // Logits at every position of `tokens` run alone as sequence 0 with `set`.
  std::vector<std::vector<float>> solo(const std::vector<int32_t>& tokens, std::shared_ptr<const LoraSet> set) {
    auto ctx = context(1);
    EXPECT_TRUE(ctx->set_lora(0, std::move(set)).ok());
    Batch b;
    for (size_t i = 0; i < tokens.size(); ++i) b.add(tokens[i], static_cast<int32_t>(i), 0, true);
    EXPECT_TRUE(ctx->decode(b).ok());
    std::vector<std::vector<float>> out;
    for (size_t i = 0; i < tokens.size(); ++i) {
      const auto l = ctx->logits(static_cast<int64_t>(i));
      out.emplace_back(l.begin(), l.end());
    }
    return out;
  }

  std::shared_ptr<const LoraSet> set(float scale) const {
    return std::make_shared<const LoraSet>(LoraSet{{adapter_, scale}});
  }

  std::shared_ptr<const Model> model_;
  std::shared_ptr<const LoraAdapter> adapter_;
};

float max_diff(const std::vector<float>& a, std::span<const float> b) {
  float m = 0;
  for (size_t i = 0; i < a.size(); ++i) m = std::max(m, std::fabs(a[i] - b[i]));
  return m;
}

TEST_F(LoraRuntimeTest, ReadsTheAdapter) {
  EXPECT_EQ(adapter_->tensors().size(), 6u);
  EXPECT_FLOAT_EQ(adapter_->alpha(), 16.0f);
  EXPECT_EQ(adapter_->name(), "qwen3-tiny-lora-f32");
  for (const LoraTensor& t : adapter_->tensors()) EXPECT_EQ(t.rank, 8);
  EXPECT_FLOAT_EQ(adapter_->effective_scale(1.0f, 8), 2.0f);  // alpha / rank
  const GgufTensorInfo* wq = model_->file().find_tensor("blk.0.attn_q.weight");
  ASSERT_NE(wq, nullptr);
  ASSERT_NE(adapter_->find(model_->file().view(*wq).data.data()), nullptr);
  EXPECT_EQ(adapter_->find(model_->file().view(*wq).data.data())->base_name, "blk.0.attn_q.weight");
  const GgufTensorInfo* wk = model_->file().find_tensor("blk.0.attn_k.weight");
  EXPECT_EQ(adapter_->find(model_->file().view(*wk).data.data()), nullptr);
}

TEST_F(LoraRuntimeTest, SequencesWithDifferentSetsShareABatch) {
  const std::vector<int32_t> a = {1, 17, 300, 42, 9, 511, 3};
  const std::vector<int32_t> b = {1, 17, 300, 42, 9, 511, 3};  // same tokens: only the adapter differs
  const std::vector<int32_t> c = {5, 600, 70, 8};
  const auto base_a = solo(a, nullptr);
  const auto lora_b = solo(b, set(1.0f));
  const auto half_c = solo(c, set(0.5f));
  ASSERT_GT(max_diff(base_a.back(), lora_b.back()), 0.5f) << "the adapter must move the logits";

  auto ctx = context(3);
  ASSERT_TRUE(ctx->set_lora(1, set(1.0f)).ok());
  ASSERT_TRUE(ctx->set_lora(2, set(0.5f)).ok());
  // Interleaved tokens of the three sequences in one batch.
  Batch batch;
  std::vector<std::pair<int, size_t>> order;
  for (size_t i = 0; i < a.size(); ++i) {
    batch.add(a[i], static_cast<int32_t>(i), 0, true);
    order.emplace_back(0, i);
    batch.add(b[i], static_cast<int32_t>(i), 1, true);
    order.emplace_back(1, i);
    if (i < c.size()) {
      batch.add(c[i], static_cast<int32_t>(i), 2, true);
      order.emplace_back(2, i);
    }
  }
  ASSERT_TRUE(ctx->decode(batch).ok());
  float worst = 0;
  for (size_t row = 0; row < order.size(); ++row) {
    const auto& [seq, pos] = order[row];
    const auto& ref = seq == 0 ? base_a[pos] : seq == 1 ? lora_b[pos] : half_c[pos];
    worst = std::max(worst, max_diff(ref, ctx->logits(static_cast<int64_t>(row))));
  }
  EXPECT_LT(worst, 1e-4f) << "a batched row must equal its sequence run alone";
}

TEST_F(LoraRuntimeTest, ScalesAddUp) {
  const std::vector<int32_t> t = {1, 99, 250, 7, 1000};
  const auto base = solo(t, nullptr);
  const auto zero = solo(t, set(0.0f));
  for (size_t i = 0; i < t.size(); ++i) EXPECT_EQ(max_diff(base[i], zero[i]), 0.0f) << "scale 0 is the base model";
  const auto full = solo(t, set(1.0f));
  const auto halves = solo(t, std::make_shared<const LoraSet>(LoraSet{{adapter_, 0.5f}, {adapter_, 0.5f}}));
  for (size_t i = 0; i < t.size(); ++i) EXPECT_LT(max_diff(full[i], halves[i]), 1e-3f);
}

TEST_F(LoraRuntimeTest, ClearingTheSetRestoresTheBase) {
  auto ctx = context(1);
  ASSERT_TRUE(ctx->set_lora(-1, set(1.0f)).ok());
  EXPECT_NE(ctx->lora(0), nullptr);
  ASSERT_TRUE(ctx->set_lora(0, nullptr).ok());
  EXPECT_EQ(ctx->lora(0), nullptr);
  ASSERT_TRUE(ctx->set_lora(0, std::make_shared<const LoraSet>()).ok());
  EXPECT_EQ(ctx->lora(0), nullptr) << "an empty set is no set";
  EXPECT_FALSE(ctx->set_lora(5, nullptr).ok());
}

// Small adapter files written for the error cases.
class LoraFileTest : public LoraRuntimeTest {
 protected:
  void TearDown() override {
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }
  std::string write(const std::string& name, const std::function<void(GgufWriter&)>& fill,
                    const std::string& arch = "qwen3", const std::string& type = "adapter") {
    if (dir_.empty()) {
      dir_ = std::filesystem::temp_directory_path() / ("cs_lora_" + std::to_string(::getpid()));
      std::filesystem::create_directories(dir_);
    }
    GgufWriter w;
    w.set("general.architecture", GgufValue::string(arch));
    if (!type.empty()) w.set("general.type", GgufValue::string(type));
    w.set("adapter.type", GgufValue::string("lora"));
    w.set("adapter.lora.alpha", GgufValue::f32(8.0f));
    fill(w);
    const std::string path = (dir_ / name).string();
    EXPECT_TRUE(w.write(path).ok());
    return path;
  }
  static void add_pair(GgufWriter& w, const std::string& base, int64_t n_in, int64_t rank, int64_t n_out) {
    std::vector<float> a(static_cast<size_t>(n_in * rank), 0.01f), b(static_cast<size_t>(rank * n_out), 0.01f);
    ASSERT_TRUE(
        w.add_tensor(base + ".lora_a", GgmlType::F32, make_shape({n_in, rank}), std::as_bytes(std::span(a))).ok());
    ASSERT_TRUE(
        w.add_tensor(base + ".lora_b", GgmlType::F32, make_shape({rank, n_out}), std::as_bytes(std::span(b))).ok());
  }
  int64_t ne(const std::string& tensor, int d) const {
    return model_->file().find_tensor(tensor)->shape.ne[static_cast<size_t>(d)];
  }
  std::string error_of(const std::string& path) {
    auto r = LoraAdapter::load(path, *model_);
    EXPECT_FALSE(r.ok()) << path;
    return r.ok() ? "" : r.status().message();
  }
  std::filesystem::path dir_;
};

TEST_F(LoraFileTest, MismatchesAreClearErrorsNamingTheTensor) {
  const std::string q = "blk.0.attn_q.weight";
  const int64_t n_in = ne(q, 0), n_out = ne(q, 1);
  EXPECT_NE(error_of(write(
                         "good_but_other_arch.gguf", [&](GgufWriter& w) { add_pair(w, q, n_in, 4, n_out); }, "llama"))
                .find("architecture llama"),
            std::string::npos);
  EXPECT_NE(error_of(write(
                         "not_adapter.gguf", [&](GgufWriter& w) { add_pair(w, q, n_in, 4, n_out); }, "qwen3", ""))
                .find("general.type"),
            std::string::npos);
  EXPECT_NE(error_of(write("shape.gguf", [&](GgufWriter& w) { add_pair(w, q, n_in + 32, 4, n_out); })).find(q),
            std::string::npos);
  EXPECT_NE(error_of(write("missing.gguf", [&](GgufWriter& w) { add_pair(w, "blk.9.attn_q.weight", n_in, 4, n_out); }))
                .find("blk.9.attn_q.weight"),
            std::string::npos);
  EXPECT_NE(error_of(write("half.gguf",
                           [&](GgufWriter& w) {
                             std::vector<float> a(static_cast<size_t>(n_in * 4));
                             ASSERT_TRUE(w.add_tensor(q + ".lora_a", GgmlType::F32, make_shape({n_in, 4}),
                                                      std::as_bytes(std::span(a)))
                                             .ok());
                           }))
                .find("no matching lora_b"),
            std::string::npos);
  // The embedding table is a valid adapter target for merging, but not a matrix product.
  const std::string e = "token_embd.weight";
  const std::string embd = write("embd.gguf", [&](GgufWriter& w) { add_pair(w, e, ne(e, 0), 4, ne(e, 1)); });
  EXPECT_TRUE(LoraAdapter::open(embd, model_->file()).ok());
  EXPECT_NE(error_of(embd).find("token_embd.weight"), std::string::npos);
  // The base model itself is not an adapter.
  EXPECT_NE(error_of(testing::testdata_path("models/qwen3-tiny-f32.gguf")).find("general.type"), std::string::npos);
  EXPECT_FALSE(LoraAdapter::load(dir_.string() + "/absent.gguf", *model_).ok());
}

TEST(LoraArg, ParsesFileAndScale) {
  auto a = parse_lora_arg("adapter.gguf");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->path, "adapter.gguf");
  EXPECT_EQ(a->scale, 1.0f);
  a = parse_lora_arg("/x/adapter.gguf:0.25");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->path, "/x/adapter.gguf");
  EXPECT_EQ(a->scale, 0.25f);
  a = parse_lora_arg("adapter.gguf:-1");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->scale, -1.0f);
  EXPECT_FALSE(parse_lora_arg("adapter.gguf:abc").ok());
  EXPECT_FALSE(parse_lora_arg("adapter.gguf:inf").ok());
  a = parse_lora_arg("c:/dir/adapter.gguf");  // a ':' inside the path is not a scale
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->path, "c:/dir/adapter.gguf");
}

}  // namespace
}  // namespace cellserve::engine

namespace cellserve::engine {
namespace {

// The adapter on a quantized (or half-precision) base: W_q·x + s·B·(A·x) must be the model whose
// weights are dequant(W_q) + s·B·A, which `lora merge --type F32` writes exactly. The two differ
// only by the base type's activation conversion (Q8 blocks for the quantized kernels), so they
// agree to within that type's rounding, while the adapter moves logits by up to 16.
class LoraOnQuantizedBase : public ::testing::TestWithParam<const char*> {};

TEST_P(LoraOnQuantizedBase, MatchesTheMergedF32Model) {
  CS_REQUIRE_TESTDATA();
  const std::string base_path = testing::testdata_path(std::string("models/") + GetParam());
  const std::string adapter_path = testing::testdata_path("models/qwen3-tiny-lora-f32.gguf");
  const std::string merged_path = ::testing::TempDir() + "/lora_on_" + GetParam();
  MergeOptions options;
  options.type = "F32";
  ASSERT_TRUE(merge_lora(base_path, {{adapter_path, 1.0f}}, options, merged_path).ok());

  auto run = [&](const std::string& path, bool with_adapter) {
    auto model = load_model(path);
    EXPECT_TRUE(model.ok()) << model.status().to_string();
    ContextParams p;
    p.n_ctx = 64;
    p.n_threads = 2;
    p.kv_type = GgmlType::F32;
    auto ctx = Context::create(*model, p);
    EXPECT_TRUE(ctx.ok());
    if (with_adapter) {
      auto adapter = LoraAdapter::load(adapter_path, **model);
      EXPECT_TRUE(adapter.ok()) << adapter.status().to_string();
      EXPECT_TRUE((*ctx)->set_lora(0, std::make_shared<const LoraSet>(LoraSet{{*adapter, 1.0f}})).ok());
    }
    Batch b;
    const std::vector<int32_t> tokens = {1, 17, 300, 42, 9, 511, 3, 77};
    for (size_t i = 0; i < tokens.size(); ++i) b.add(tokens[i], static_cast<int32_t>(i), 0, true);
    EXPECT_TRUE((*ctx)->decode(b).ok());
    std::vector<float> all;
    for (size_t i = 0; i < tokens.size(); ++i) {
      const auto l = (*ctx)->logits(static_cast<int64_t>(i));
      all.insert(all.end(), l.begin(), l.end());
    }
    return all;
  };
  const std::vector<float> runtime = run(base_path, true);
  const std::vector<float> merged = run(merged_path, false);
  const std::vector<float> base = run(base_path, false);
  std::filesystem::remove(merged_path);
  ASSERT_EQ(runtime.size(), merged.size());
  float diff = 0, moved = 0;
  for (size_t i = 0; i < runtime.size(); ++i) {
    diff = std::max(diff, std::fabs(runtime[i] - merged[i]));
    moved = std::max(moved, std::fabs(runtime[i] - base[i]));
  }
  std::printf("[ lora     ] %s: run-time vs merged max|Δ| %.3g; the adapter moves logits by up to %.3g\n", GetParam(),
              static_cast<double>(diff), static_cast<double>(moved));
  EXPECT_GT(moved, 1.0f);
  EXPECT_LT(diff, 1.0f) << "the quantized files' tolerance against llama.cpp";
}

INSTANTIATE_TEST_SUITE_P(Testdata, LoraOnQuantizedBase,
                         ::testing::Values("qwen3-tiny-f16.gguf", "qwen3-tiny-bf16.gguf", "qwen3-tiny-q8_0.gguf",
                                           "qwen3-tiny-q4_0.gguf", "qwen3-tiny-q4_k_m.gguf", "qwen3-tiny-q6_k.gguf"),
                         [](const ::testing::TestParamInfo<const char*>& info) {
                           std::string name = info.param;
                           for (char& c : name) {
                             if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           }
                           return name;
                         });

}  // namespace
}  // namespace cellserve::engine
