// Helpers for the lora merge tests: temporary directories, tensor values, adapter files, and the
// golden comparison protocol of shared/testdata/README.md §4 (as tests/engine/models/golden_test.cpp).
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "engine/gguf/gguf_file.h"
#include "engine/gguf/gguf_writer.h"
#include "engine/models/model.h"
#include "engine/quant/quantize.h"
#include "engine/runtime/context.h"
#include "tests/engine/models/golden.h"

namespace cellserve::testing {

// A fresh directory named after the running test, removed with its contents at destruction.
class TempDir {
 public:
  TempDir() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    std::string name =
        std::string("cs_lora_merge_") + std::to_string(::getpid()) + "_" + info->test_suite_name() + "_" + info->name();
    std::replace(name.begin(), name.end(), '/', '_');
    path_ = std::filesystem::temp_directory_path() / name;
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  std::string file(const std::string& name) const { return (path_ / name).string(); }
  // The names of the files in the directory, sorted.
  std::vector<std::string> files() const {
    std::vector<std::string> out;
    for (const auto& e : std::filesystem::directory_iterator(path_)) out.push_back(e.path().filename().string());
    std::sort(out.begin(), out.end());
    return out;
  }

 private:
  std::filesystem::path path_;
};

inline engine::GgufFile open_gguf(const std::string& path) {
  auto f = engine::GgufFile::open(path);
  EXPECT_TRUE(f.ok()) << f.status().to_string();
  return std::move(f).value();
}

// Every value of tensor `name` of `f` as F32 (empty when absent).
inline std::vector<float> tensor_values(const engine::GgufFile& f, const std::string& name) {
  const engine::GgufTensorInfo* info = f.find_tensor(name);
  if (info == nullptr) return {};
  const engine::TensorView v = f.view(*info);
  const int64_t n = v.shape.ne[0];
  std::vector<float> out(static_cast<size_t>(v.shape.elements()));
  for (int64_t r = 0; r < v.shape.rows(); ++r) engine::dequantize_row(v.type, v.row(r).data(), &out[r * n], n);
  return out;
}

inline bool same_bytes(const engine::GgufFile& a, const engine::GgufFile& b, const std::string& name) {
  const auto* ia = a.find_tensor(name);
  const auto* ib = b.find_tensor(name);
  if (ia == nullptr || ib == nullptr) return false;
  const auto da = a.view(*ia).data;
  const auto db = b.view(*ib).data;
  return ia->type == ib->type && ia->shape == ib->shape && std::equal(da.begin(), da.end(), db.begin(), db.end());
}

// One factor tensor of an adapter file.
struct FactorSpec {
  std::string name;  // "blk.0.attn_q.weight.lora_a"
  engine::Shape shape;
  std::vector<float> values;  // empty: a deterministic pattern
};

// Writes a LoRA adapter file in llama.cpp's layout with F32 factors.
inline void write_adapter(const std::string& path, const std::string& arch, float alpha,
                          const std::vector<FactorSpec>& tensors) {
  engine::GgufWriter w;
  w.set("general.architecture", engine::GgufValue::string(arch));
  w.set("general.type", engine::GgufValue::string("adapter"));
  w.set("adapter.type", engine::GgufValue::string("lora"));
  w.set("adapter.lora.alpha", engine::GgufValue::f32(alpha));
  for (const FactorSpec& t : tensors) {
    std::vector<float> values = t.values;
    if (values.empty()) {
      values.resize(static_cast<size_t>(t.shape.elements()));
      for (size_t i = 0; i < values.size(); ++i) values[i] = 0.01f * static_cast<float>(static_cast<int>(i % 7) - 3);
    }
    ASSERT_TRUE(w.add_tensor(t.name, engine::GgmlType::F32, t.shape, std::as_bytes(std::span(values))).ok());
  }
  ASSERT_TRUE(w.write(path).ok());
}

// ---- The golden comparison protocol ----

struct GoldenDelta {
  float max_abs = 0.0f;  // over the reference top-10 at every position and the full last-prompt logits
  double rms_rel = 0.0;  // rms of Δ over the full last-prompt logits / their std
  int argmax_checked = 0;
  int argmax_mismatch = 0;  // where the reference margin exceeds 2 × `tol`
};

inline void compare_top(const GoldenTop& ref, std::span<const float> ours, float tol, GoldenDelta* d) {
  for (size_t j = 0; j < ref.ids.size(); ++j) {
    d->max_abs = std::max(d->max_abs, std::fabs(ours[static_cast<size_t>(ref.ids[j])] - ref.logits[j]));
  }
  if (ref.logits.size() >= 2 && ref.logits[0] - ref.logits[1] > 2 * tol) {
    ++d->argmax_checked;
    if (std::max_element(ours.begin(), ours.end()) - ours.begin() != ref.ids[0]) ++d->argmax_mismatch;
  }
}

inline std::unique_ptr<engine::Context> golden_context(const std::string& model_path) {
  auto model = engine::load_model(model_path);
  EXPECT_TRUE(model.ok()) << model.status().to_string();
  if (!model.ok()) return nullptr;
  engine::ContextParams params;
  params.n_ctx = 256;
  params.n_threads = 2;
  params.kv_type = engine::GgmlType::F32;  // the goldens' setting
  auto ctx = engine::Context::create(*model, params);
  EXPECT_TRUE(ctx.ok()) << ctx.status().to_string();
  return ctx.ok() ? std::move(ctx).value() : nullptr;
}

// Teacher forcing: the prompt in one batch, then the golden greedy tokens one at a time.
inline GoldenDelta teacher_forced_delta(const Golden& g, const std::string& model_path, float tol) {
  GoldenDelta d;
  auto ctx = golden_context(model_path);
  if (ctx == nullptr) return {1e30f, 0.0, 0, 0};
  engine::Batch batch;
  for (size_t i = 0; i < g.prompt_tokens.size(); ++i) batch.add(g.prompt_tokens[i], static_cast<int32_t>(i), 0, true);
  EXPECT_TRUE(ctx->decode(batch).ok());
  for (size_t i = 0; i < g.prompt_top.size(); ++i) compare_top(g.prompt_top[i], ctx->logits(int64_t(i)), tol, &d);
  const auto last = ctx->logits(static_cast<int64_t>(g.prompt_tokens.size()) - 1);
  double sum_d2 = 0.0, sum = 0.0, sum2 = 0.0;
  for (size_t v = 0; v < g.last_prompt_logits.size(); ++v) {
    const double delta = last[v] - g.last_prompt_logits[v];
    d.max_abs = std::max(d.max_abs, static_cast<float>(std::fabs(delta)));
    sum_d2 += delta * delta;
    sum += g.last_prompt_logits[v];
    sum2 += double(g.last_prompt_logits[v]) * g.last_prompt_logits[v];
  }
  const double n = static_cast<double>(g.last_prompt_logits.size());
  d.rms_rel = std::sqrt(sum_d2 / n) / std::sqrt(std::max(1e-30, sum2 / n - (sum / n) * (sum / n)));
  for (size_t i = 0; i + 1 < g.greedy_tokens.size(); ++i) {
    engine::Batch step;
    step.add(g.greedy_tokens[i], static_cast<int32_t>(g.prompt_tokens.size() + i), 0, true);
    EXPECT_TRUE(ctx->decode(step).ok());
    compare_top(g.step_top[i], ctx->logits(0), tol, &d);
  }
  return d;
}

// Free-running greedy continuation of the golden prompt, as many tokens as the golden has.
inline std::vector<int32_t> greedy_tokens(const Golden& g, const std::string& model_path) {
  std::vector<int32_t> out;
  auto ctx = golden_context(model_path);
  if (ctx == nullptr) return out;
  engine::Batch batch;
  for (size_t i = 0; i < g.prompt_tokens.size(); ++i) {
    batch.add(g.prompt_tokens[i], static_cast<int32_t>(i), 0, i + 1 == g.prompt_tokens.size());
  }
  EXPECT_TRUE(ctx->decode(batch).ok());
  for (size_t i = 0; i < g.greedy_tokens.size(); ++i) {
    const auto logits = ctx->logits(0);
    const auto next = static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
    out.push_back(next);
    engine::Batch step;
    step.add(next, static_cast<int32_t>(g.prompt_tokens.size() + i), 0, true);
    EXPECT_TRUE(ctx->decode(step).ok());
  }
  return out;
}

}  // namespace cellserve::testing
