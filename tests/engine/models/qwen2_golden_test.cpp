// Conformance of the qwen2 forward pass with llama.cpp (issue 49, item 5). The tiny qwen2 model
// `cellserve synth` writes (F32, seed 1004) is made again here. Fed the golden's prompt and then
// its greedy tokens, our engine must pick llama-server's greedy token at every step and give the
// log-probabilities llama-server gave for its top 10 tokens there, within the F32 tolerance of
// the other goldens. The golden (tests/engine/models/golden/qwen2-tiny-f32.server.json) was made
// by tools/qwen2_golden.py with the shipped llama-server; it needs no testdata.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <boost/json.hpp>

#include "engine/runtime/context.h"
#include "engine/synth/synth.h"

namespace cellserve::engine {
namespace {

// Max |Δ log-probability| (F32: exact math up to summation order, as the logit goldens' 1e-3).
constexpr double kTolerance = 1e-3;

struct Step {
  int32_t token = 0;
  std::vector<std::pair<int32_t, double>> top;  // (id, logprob), most likely first
};

struct ServerGolden {
  int64_t model_bytes = 0;
  std::vector<int32_t> prompt;
  std::vector<Step> steps;
};

ServerGolden read_server_golden(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  const boost::json::object root = boost::json::parse(text.str()).as_object();
  ServerGolden g;
  g.model_bytes = root.at("model").at("bytes").to_number<int64_t>();
  for (const auto& id : root.at("prompt_tokens").as_array())
    g.prompt.push_back(static_cast<int32_t>(id.to_number<int64_t>()));
  for (const auto& s : root.at("steps").as_array()) {
    Step step;
    step.token = static_cast<int32_t>(s.at("token").to_number<int64_t>());
    for (const auto& t : s.at("top").as_array()) {
      step.top.emplace_back(static_cast<int32_t>(t.at("id").to_number<int64_t>()), t.at("logprob").to_number<double>());
    }
    g.steps.push_back(std::move(step));
  }
  return g;
}

// log softmax(logits)[id], summed in double.
double log_prob(std::span<const float> logits, int32_t id) {
  const float top = *std::max_element(logits.begin(), logits.end());
  double sum = 0;
  for (const float l : logits) sum += std::exp(static_cast<double>(l - top));
  return static_cast<double>(logits[static_cast<size_t>(id)] - top) - std::log(sum);
}

TEST(Qwen2Golden, GreedyTokensAndTopLogprobsMatchLlamaServer) {
  const ServerGolden g = read_server_golden(CELLSERVE_QWEN2_GOLDEN);
  ASSERT_EQ(g.steps.size(), 32u);
  const auto path =
      std::filesystem::temp_directory_path() / ("cs_qwen2_golden_" + std::to_string(::getpid()) + ".gguf");
  auto plan = synth::plan_model({synth::Arch::Qwen2, "tiny", synth::SynthType::F32});
  ASSERT_TRUE(plan.ok()) << plan.status().to_string();
  synth::WriteOptions options;
  options.seed = 1004;
  options.n_threads = 2;
  ASSERT_TRUE(synth::write_model(*plan, path.string(), options).ok());
  EXPECT_EQ(static_cast<int64_t>(std::filesystem::file_size(path)), g.model_bytes) << "synth writes another model";
  auto model = load_model(path.string());
  std::filesystem::remove(path);
  ASSERT_TRUE(model.ok()) << model.status().to_string();
  ContextParams params;
  params.n_ctx = 256;
  params.n_threads = 2;
  params.kv_type = GgmlType::F32;  // llama-server ran with -ctk f32 -ctv f32
  auto ctx = Context::create(*model, params);
  ASSERT_TRUE(ctx.ok()) << ctx.status().to_string();

  Batch prompt;  // in one batch, as llama-server read it
  for (size_t i = 0; i < g.prompt.size(); ++i)
    prompt.add(g.prompt[i], static_cast<int32_t>(i), 0, i + 1 == g.prompt.size());
  ASSERT_TRUE((*ctx)->decode(prompt).ok());
  double max_delta = 0;
  std::vector<int32_t> ours;
  for (size_t i = 0; i < g.steps.size(); ++i) {
    const auto logits = (*ctx)->logits(0);
    ours.push_back(static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin()));
    for (const auto& [id, logprob] : g.steps[i].top)
      max_delta = std::max(max_delta, std::fabs(log_prob(logits, id) - logprob));
    Batch step;  // the golden's token, so that one difference does not hide the later ones
    step.add(g.steps[i].token, static_cast<int32_t>(g.prompt.size() + i), 0, true);
    ASSERT_TRUE((*ctx)->decode(step).ok());
  }
  std::vector<int32_t> theirs;
  for (const Step& s : g.steps) theirs.push_back(s.token);
  EXPECT_EQ(ours, theirs) << "greedy tokens";
  EXPECT_LE(max_delta, kTolerance) << "top-10 log-probabilities over " << g.steps.size() << " steps";
  std::printf("[ golden   ] qwen2-tiny-f32 (llama-server): max|Δ logprob| %.3g over %zu steps (tolerance %.3g)\n",
              max_delta, g.steps.size(), kTolerance);
}

}  // namespace
}  // namespace cellserve::engine
