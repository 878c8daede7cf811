// merge_lora on small files written here (no testdata needed): the formula, adapter order and
// scales, type conversion, the recorded metadata, and every error leaving no file.
#include "engine/lora/lora_merge.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>

#include "tests/engine/lora/merge_test_support.h"

namespace cellserve::engine {
namespace {

using testing::FactorSpec;
using testing::open_gguf;
using testing::TempDir;
using testing::tensor_values;
using testing::write_adapter;

constexpr int64_t kIn = 32;   // n_embd
constexpr int64_t kOut = 16;  // rows of blk.0.attn_q.weight

// A qwen3-named base: token_embd {32, 10}, blk.0.attn_norm {32}, blk.0.attn_q {32, 16}, all F32.
void write_base(const std::string& path, int64_t q_in = kIn) {
  GgufWriter w;
  w.set("general.architecture", GgufValue::string("qwen3"));
  w.set("general.name", GgufValue::string("tiny base"));
  w.set("general.file_type", GgufValue::u32(0));
  w.set("qwen3.block_count", GgufValue::u32(1));
  w.set("tokenizer.ggml.tokens", GgufValue::string_array({"a", "b"}));
  auto add = [&](const std::string& name, Shape shape) {
    std::vector<float> v(static_cast<size_t>(shape.elements()));
    for (size_t i = 0; i < v.size(); ++i) v[i] = std::sin(0.37f * static_cast<float>(i)) * 0.1f;
    ASSERT_TRUE(w.add_tensor(name, GgmlType::F32, shape, std::as_bytes(std::span(v))).ok());
  };
  add("token_embd.weight", make_shape({kIn, 10}));
  add("blk.0.attn_norm.weight", make_shape({kIn}));
  add("blk.0.attn_q.weight", make_shape({q_in, kOut}));
  ASSERT_TRUE(w.write(path).ok());
}

// Rank-4 factors of blk.0.attn_q.weight: A {32, 4}, B {4, 16}.
std::vector<FactorSpec> q_factors(float a_mul = 1.0f) {
  FactorSpec a{"blk.0.attn_q.weight.lora_a", make_shape({kIn, 4}), {}};
  FactorSpec b{"blk.0.attn_q.weight.lora_b", make_shape({4, kOut}), {}};
  for (int64_t i = 0; i < kIn * 4; ++i) a.values.push_back(a_mul * std::cos(0.11f * static_cast<float>(i)));
  for (int64_t i = 0; i < 4 * kOut; ++i) b.values.push_back(0.05f * std::sin(0.29f * static_cast<float>(i) + 1.0f));
  return {a, b};
}

// W + s·B·A in double: W'[o][i] = W[o][i] + s · Σ_k B[o][k] · A[k][i].
std::vector<double> expected_merge(const std::vector<float>& w, const std::vector<FactorSpec>& f, double s) {
  std::vector<double> out(w.begin(), w.end());
  for (int64_t o = 0; o < kOut; ++o) {
    for (int64_t i = 0; i < kIn; ++i) {
      double d = 0.0;
      for (int64_t k = 0; k < 4; ++k) d += double(f[1].values[o * 4 + k]) * f[0].values[k * kIn + i];
      out[o * kIn + i] += s * d;
    }
  }
  return out;
}

class LoraMergeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    write_base(base_);
    write_adapter(adapter_, "qwen3", 8.0f, q_factors());  // s = scale · 8 / 4
  }
  // Merges and expects success.
  MergeSummary merge(const std::vector<LoraArg>& adapters, const std::string& out, const std::string& type = "") {
    MergeOptions options;
    options.type = type;
    options.n_threads = 2;
    auto r = merge_lora(base_, adapters, options, out);
    EXPECT_TRUE(r.ok()) << r.status().to_string();
    return r.ok() ? *r : MergeSummary{};
  }
  // Merges, expects failure with `code` and a message containing `part`, and no file left.
  void expect_error(const std::string& base, const std::vector<LoraArg>& adapters, const std::string& type,
                    StatusCode code, const std::string& part) {
    MergeOptions options;
    options.type = type;
    const std::string out = dir_.file("failed.gguf");
    auto r = merge_lora(base, adapters, options, out);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), code) << r.status().to_string();
    EXPECT_NE(r.status().message().find(part), std::string::npos) << r.status().message();
    EXPECT_FALSE(std::filesystem::exists(out));
    for (const std::string& f : dir_.files()) {
      EXPECT_TRUE(f.find(".merging") == std::string::npos && f.find(".partial") == std::string::npos) << f;
    }
  }

  TempDir dir_;
  std::string base_ = dir_.file("base.gguf");
  std::string adapter_ = dir_.file("q-adapter.gguf");
};

TEST_F(LoraMergeTest, AppliesScaledLowRankUpdate) {
  const std::string out = dir_.file("merged.gguf");
  const MergeSummary s = merge({{adapter_, 0.5f}}, out);
  EXPECT_EQ(s.n_tensors, 3u);
  EXPECT_EQ(s.n_adapted, 1u);
  EXPECT_EQ(s.n_converted, 1u);
  const GgufFile base = open_gguf(base_);
  const GgufFile merged = open_gguf(out);
  const std::vector<double> want = expected_merge(tensor_values(base, "blk.0.attn_q.weight"), q_factors(), 0.5 * 2.0);
  const std::vector<float> got = tensor_values(merged, "blk.0.attn_q.weight");
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-6) << "element " << i;
  EXPECT_TRUE(testing::same_bytes(base, merged, "token_embd.weight"));
  EXPECT_TRUE(testing::same_bytes(base, merged, "blk.0.attn_norm.weight"));
}

TEST_F(LoraMergeTest, AdaptersApplyInOrderAndAdapterWithoutAlphaUsesTheScale) {
  const std::string second = dir_.file("second.gguf");
  write_adapter(second, "qwen3", 0.0f, q_factors(-3.0f));  // no alpha: s = scale
  const std::string out = dir_.file("merged.gguf");
  EXPECT_EQ(merge({{adapter_, 1.0f}, {second, 0.25f}}, out).n_adapted, 1u);
  const GgufFile base = open_gguf(base_);
  std::vector<double> want = expected_merge(tensor_values(base, "blk.0.attn_q.weight"), q_factors(), 2.0);
  const std::vector<double> second_update = expected_merge(std::vector<float>(want.size()), q_factors(-3.0f), 0.25);
  for (size_t i = 0; i < want.size(); ++i) want[i] += second_update[i];
  const std::vector<float> got = tensor_values(open_gguf(out), "blk.0.attn_q.weight");
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-6) << "element " << i;

  const GgufFile merged = open_gguf(out);
  const auto* names = merged.find("general.merged_lora.adapters")->as_array();
  ASSERT_EQ(names->items.size(), 2u);
  EXPECT_EQ(*names->items[0].as_string(), "q-adapter.gguf");
  EXPECT_EQ(*names->items[1].as_string(), "second.gguf");
  const auto* scales = merged.find("general.merged_lora.scales")->as_array();
  ASSERT_EQ(scales->items.size(), 2u);
  EXPECT_EQ(scales->items[0].as_float(), 1.0);
  EXPECT_EQ(scales->items[1].as_float(), 0.25);
}

TEST_F(LoraMergeTest, ScaleZeroCopiesEveryTensor) {
  const std::string out = dir_.file("merged.gguf");
  const MergeSummary s = merge({{adapter_, 0.0f}}, out);
  EXPECT_EQ(s.n_adapted, 0u);
  EXPECT_EQ(s.n_converted, 0u);
  const GgufFile base = open_gguf(base_);
  const GgufFile merged = open_gguf(out);
  for (const GgufTensorInfo& t : base.tensors()) EXPECT_TRUE(testing::same_bytes(base, merged, t.name)) << t.name;
}

TEST_F(LoraMergeTest, CarriesMetadataAndRecordsTheMerge) {
  const std::string out = dir_.file("merged.gguf");
  merge({{adapter_, 1.5f}}, out);
  const GgufFile base = open_gguf(base_);
  const GgufFile merged = open_gguf(out);
  ASSERT_EQ(merged.metadata().size(), base.metadata().size() + 2);
  for (size_t i = 0; i < base.metadata().size(); ++i) {
    EXPECT_EQ(merged.metadata()[i].key, base.metadata()[i].key);
    EXPECT_TRUE(merged.metadata()[i].value == base.metadata()[i].value) << base.metadata()[i].key;
  }
  EXPECT_TRUE(*merged.find("general.merged_lora.adapters") == GgufValue::string_array({"q-adapter.gguf"}));
  EXPECT_TRUE(*merged.find("general.merged_lora.scales") == GgufValue::f32_array({1.5f}));

  // Merging into a merged model appends to the record.
  const std::string again = dir_.file("again.gguf");
  MergeOptions options;
  ASSERT_TRUE(merge_lora(out, {{adapter_, -1.5f}}, options, again).ok());
  const GgufFile twice = open_gguf(again);
  EXPECT_TRUE(*twice.find("general.merged_lora.scales") == GgufValue::f32_array({1.5f, -1.5f}));
  // ... and +1.5 then -1.5 gives the base back (to rounding).
  const std::vector<float> w0 = tensor_values(base, "blk.0.attn_q.weight");
  const std::vector<float> w2 = tensor_values(twice, "blk.0.attn_q.weight");
  for (size_t i = 0; i < w0.size(); ++i) EXPECT_NEAR(w2[i], w0[i], 1e-6);
}

TEST_F(LoraMergeTest, TypeConvertsEveryTensorAndSetsFileType) {
  const std::string out = dir_.file("merged-q8.gguf");
  const MergeSummary s = merge({{adapter_, 1.0f}}, out, "q8_0");
  EXPECT_EQ(s.file_type, 7u);
  const GgufFile merged = open_gguf(out);
  // Tied embedding -> Q8_0 (row length 32 cannot hold Q6_K), norm -> F32, weights -> Q8_0.
  EXPECT_EQ(merged.find_tensor("token_embd.weight")->type, GgmlType::Q8_0);
  EXPECT_EQ(merged.find_tensor("blk.0.attn_norm.weight")->type, GgmlType::F32);
  EXPECT_EQ(merged.find_tensor("blk.0.attn_q.weight")->type, GgmlType::Q8_0);
  // llama-quantize's order: quantization_version then file_type, both moved to the end (before our record).
  const auto& md = merged.metadata();
  ASSERT_GE(md.size(), 4u);
  EXPECT_EQ(md[md.size() - 4].key, "general.quantization_version");
  EXPECT_EQ(md[md.size() - 3].key, "general.file_type");
  EXPECT_EQ(merged.get_int("general.file_type"), 7);
  const std::vector<double> want =
      expected_merge(tensor_values(open_gguf(base_), "blk.0.attn_q.weight"), q_factors(), 2);
  const std::vector<float> got = tensor_values(merged, "blk.0.attn_q.weight");
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 2e-3) << "element " << i;  // Q8_0 step

  for (const char* type : {"Q4_1", "Q5_0", "Q5_1"}) {  // Q4_0's rules, their own block type
    const std::string path = dir_.file(std::string("merged-") + type + ".gguf");
    merge({{adapter_, 1.0f}}, path, type);
    const GgufFile f = open_gguf(path);
    EXPECT_EQ(f.find_tensor("blk.0.attn_q.weight")->type, *ggml_type_from_name(type)) << type;
    EXPECT_EQ(f.find_tensor("token_embd.weight")->type, GgmlType::Q8_0) << type;
  }
}

TEST_F(LoraMergeTest, ErrorsNameTheProblemAndLeaveNoFile) {
  const std::string llama = dir_.file("llama-adapter.gguf");
  write_adapter(llama, "llama", 8.0f, q_factors());
  expect_error(base_, {{llama, 1.0f}}, "", StatusCode::InvalidArgument, "architecture llama");

  const std::string missing = dir_.file("missing-tensor.gguf");
  write_adapter(missing, "qwen3", 8.0f,
                {{"blk.0.attn_k.weight.lora_a", make_shape({kIn, 4}), {}},
                 {"blk.0.attn_k.weight.lora_b", make_shape({4, kOut}), {}}});
  expect_error(base_, {{missing, 1.0f}}, "", StatusCode::InvalidArgument, "blk.0.attn_k.weight");

  const std::string shape = dir_.file("wrong-shape.gguf");
  write_adapter(shape, "qwen3", 8.0f,
                {{"blk.0.attn_q.weight.lora_a", make_shape({kIn, 4}), {}},
                 {"blk.0.attn_q.weight.lora_b", make_shape({4, kOut * 2}), {}}});
  expect_error(base_, {{shape, 1.0f}}, "", StatusCode::InvalidArgument, "blk.0.attn_q.weight.lora_b");

  expect_error(base_, {{base_, 1.0f}}, "", StatusCode::InvalidArgument, "general.type");
  expect_error(base_, {{adapter_, 1.0f}}, "Q3_K_XL", StatusCode::InvalidArgument, "unknown type \"Q3_K_XL\"");
  expect_error(base_, {}, "", StatusCode::InvalidArgument, "no adapter");
  expect_error(dir_.file("absent.gguf"), {{adapter_, 1.0f}}, "", StatusCode::NotFound, "absent.gguf");
  expect_error(base_, {{dir_.file("absent-adapter.gguf"), 1.0f}}, "", StatusCode::NotFound, "absent-adapter.gguf");

  // A row length Q4_0 cannot hold (48 is not a multiple of 32), and no fallback exists.
  const std::string odd_base = dir_.file("odd-base.gguf");
  write_base(odd_base, 48);
  const std::string embd = dir_.file("embd-adapter.gguf");
  write_adapter(
      embd, "qwen3", 8.0f,
      {{"token_embd.weight.lora_a", make_shape({kIn, 4}), {}}, {"token_embd.weight.lora_b", make_shape({4, 10}), {}}});
  expect_error(odd_base, {{embd, 1.0f}}, "Q4_0", StatusCode::InvalidArgument, "blk.0.attn_q.weight: row length 48");

  // An update that overflows F32 is found while writing; the output is still never created.
  const std::string huge = dir_.file("huge.gguf");
  write_adapter(huge, "qwen3", 8.0f, q_factors(1e37f));
  expect_error(base_, {{huge, 1e3f}}, "", StatusCode::InvalidArgument, "blk.0.attn_q.weight: the merged weights");

  // An output path that cannot be created.
  MergeOptions options;
  auto r = merge_lora(base_, {{adapter_, 1.0f}}, options, dir_.file("no-such-dir/out.gguf"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::Internal) << r.status().to_string();
  EXPECT_NE(r.status().message().find("no-such-dir/out.gguf"), std::string::npos) << r.status().message();
}

TEST_F(LoraMergeTest, FailedMergeKeepsAnExistingOutput) {
  const std::string out = dir_.file("merged.gguf");
  std::ofstream(out) << "previous";
  MergeOptions options;
  options.type = "nope";
  ASSERT_FALSE(merge_lora(base_, {{adapter_, 1.0f}}, options, out).ok());
  std::ifstream in(out);
  std::string content;
  in >> content;
  EXPECT_EQ(content, "previous");
}

}  // namespace
}  // namespace cellserve::engine
