// Weights are deterministic from the seed (independent of thread count), streamed through the
// quantizer, and drawn at the documented scales.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "engine/gguf/gguf_file.h"
#include "engine/quant/quantize.h"
#include "engine/synth/synth.h"
#include "engine/synth/weight_fill.h"
#include "tests/engine/synth/synth_test_util.h"

namespace cellserve::engine::synth {
namespace {

using testing::find;
using testing::plan_or_die;
using testing::TempFile;

std::vector<std::byte> bytes_of(const ModelPlan& plan, uint64_t seed, int threads) {
  auto writer = make_writer(plan, {.seed = seed, .n_threads = threads, .progress = {}});
  EXPECT_TRUE(writer.ok()) << writer.status().to_string();
  return writer.ok() ? writer->to_bytes() : std::vector<std::byte>{};
}

TEST(SynthWeights, SameSeedSameBytesDifferentSeedDifferentBytes) {
  for (SynthType type : {SynthType::F32, SynthType::Q4_0}) {
    const ModelPlan plan = plan_or_die(Arch::Qwen35, "tiny", type);
    const auto a = bytes_of(plan, 42, 1);
    const auto b = bytes_of(plan, 42, 3);  // thread count does not matter
    const auto c = bytes_of(plan, 43, 2);
    ASSERT_FALSE(a.empty());
    EXPECT_EQ(a, b);
    ASSERT_EQ(a.size(), c.size());
    EXPECT_NE(a, c);
  }
}

TEST(SynthWeights, WrittenFileEqualsInMemoryImage) {
  const ModelPlan plan = plan_or_die(Arch::Llama, "tiny", SynthType::Q6_K);
  TempFile out("llama-q6_k.gguf");
  ASSERT_TRUE(write_model(plan, out.path(), {.seed = 5, .n_threads = 2, .progress = {}}).ok());
  auto file = GgufFile::open(out.path());
  ASSERT_TRUE(file.ok()) << file.status().to_string();
  const auto image = bytes_of(plan, 5, 4);
  ASSERT_EQ(file->file_size(), image.size());
  auto parsed = GgufFile::parse(image);
  ASSERT_TRUE(parsed.ok());
  for (const auto& t : file->tensors()) {
    const auto a = file->view(t).data;
    const auto b = parsed->view(*parsed->find_tensor(t.name)).data;
    EXPECT_TRUE(std::equal(a.begin(), a.end(), b.begin(), b.end())) << t.name;
  }
}

// The quantized tensors hold the same F32 master as the F32 file (within quantization error).
TEST(SynthWeights, QuantizedTensorsEncodeTheMaster) {
  const ModelPlan plan = plan_or_die(Arch::Qwen3, "tiny", SynthType::Q8_0);
  const RopeFreqParams rope = rope_freq_params(plan.shape);
  const auto image = bytes_of(plan, 9, 2);
  auto file = GgufFile::parse(image);
  ASSERT_TRUE(file.ok());
  const PlannedTensor* t = find(plan, "blk.1.ffn_up.weight");
  ASSERT_NE(t, nullptr);
  ASSERT_EQ(t->type, GgmlType::Q8_0);
  const TensorView view = file->view(*file->find_tensor(t->name));
  const int64_t n = t->shape.ne[0];
  std::vector<float> master(static_cast<size_t>(n)), decoded(static_cast<size_t>(n));
  for (int64_t r : {int64_t{0}, int64_t{17}, t->shape.rows() - 1}) {
    master_row(*t, rope, 9, r, master.data());
    dequantize_row(GgmlType::Q8_0, view.row(r).data(), decoded.data(), n);
    for (int64_t i = 0; i < n; ++i) EXPECT_NEAR(decoded[static_cast<size_t>(i)], master[static_cast<size_t>(i)], 0.01f);
  }
}

struct Stats {
  double mean = 0, std = 0, min = 1e30, max = -1e30;
};

Stats stats_of(const PlannedTensor& t, const RopeFreqParams& rope, uint64_t seed) {
  const int64_t n = t.shape.ne[0];
  std::vector<float> row(static_cast<size_t>(n));
  double sum = 0, sum2 = 0;
  Stats s;
  for (int64_t r = 0; r < t.shape.rows(); ++r) {
    master_row(t, rope, seed, r, row.data());
    for (float v : row) {
      sum += v, sum2 += static_cast<double>(v) * v;
      s.min = std::min(s.min, static_cast<double>(v)), s.max = std::max(s.max, static_cast<double>(v));
    }
  }
  const double count = static_cast<double>(t.shape.elements());
  s.mean = sum / count;
  s.std = std::sqrt(std::max(0.0, sum2 / count - s.mean * s.mean));
  return s;
}

TEST(SynthWeights, ScalesFollowTheTestdataRecipe) {
  const ModelPlan plan = plan_or_die(Arch::Qwen35, "tiny", SynthType::F32);
  const RopeFreqParams rope = rope_freq_params(plan.shape);
  auto check = [&](const std::string& name, double mean, double std, double tol) {
    const PlannedTensor* t = find(plan, name);
    ASSERT_NE(t, nullptr) << name;
    const Stats s = stats_of(*t, rope, 3);
    EXPECT_NEAR(s.mean, mean, tol) << name;
    EXPECT_NEAR(s.std, std, tol + 0.05 * std) << name;
  };
  check("token_embd.weight", 0.0, 1.0, 0.01);              // emb_std 1
  check("output.weight", 0.0, 0.5, 0.01);                  // out_std 0.5
  check("blk.0.attn_qkv.weight", 0.0, 1.0 / 16.0, 0.003);  // 1/sqrt(256)
  check("blk.0.ssm_alpha.weight", 0.0, 0.5 / 16.0, 0.01);  // gain 0.5
  check("blk.0.ffn_down.weight", 0.0, 1.0 / std::sqrt(512.0), 0.003);
  check("blk.0.attn_norm.weight", 1.0, 0.1, 0.03);  // 1 + 0.1 N(0,1)
  check("blk.0.ssm_conv1d.weight", 0.0, 0.35, 0.03);
  const Stats a = stats_of(*find(plan, "blk.0.ssm_a"), rope, 3);
  EXPECT_GE(a.min, -2.0);
  EXPECT_LE(a.max, -0.1);
  const Stats dt = stats_of(*find(plan, "blk.1.ssm_dt.bias"), rope, 3);
  EXPECT_GE(dt.min, -1.0);
  EXPECT_LE(dt.max, 1.0);
}

TEST(SynthWeights, Llama3RopeFreqsAreTheConverterFactors) {
  const ModelPlan plan = plan_or_die(Arch::Llama, "llama-3.2-1b", SynthType::F32);
  const PlannedTensor* t = find(plan, "rope_freqs.weight");
  ASSERT_NE(t, nullptr);
  std::vector<float> f(32);
  master_row(*t, rope_freq_params(plan.shape), 1, 0, f.data());
  EXPECT_EQ(f.front(), 1.0f);  // high frequencies are not scaled
  EXPECT_EQ(f.back(), 32.0f);  // low frequencies are scaled by `factor`
  for (size_t i = 1; i < f.size(); ++i) EXPECT_GE(f[i], f[i - 1]);
}

}  // namespace
}  // namespace cellserve::engine::synth
