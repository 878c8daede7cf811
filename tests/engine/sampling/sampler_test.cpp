#include "engine/sampling/sampler.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>

namespace cellserve::engine {
namespace {

using namespace sampling;

std::vector<Candidate> make(std::vector<float> logits) {
  std::vector<Candidate> c;
  for (size_t i = 0; i < logits.size(); ++i) c.push_back({static_cast<int32_t>(i), logits[i]});
  return c;
}

std::vector<int32_t> ids(const std::vector<Candidate>& c) {
  std::vector<int32_t> out;
  for (const auto& x : c) out.push_back(x.id);
  return out;
}

TEST(Sampling, LogitBiasAddsAndBans) {
  auto c = make({1, 2, 3});
  apply_logit_bias(c, {{0, 5.0f}, {2, -INFINITY}});
  EXPECT_FLOAT_EQ(c[0].logit, 6.0f);
  EXPECT_TRUE(std::isinf(c[2].logit));
  EXPECT_EQ(argmax(c), 0);
}

TEST(Sampling, PenaltiesFollowLlamaCpp) {
  auto c = make({2.0f, -2.0f, 1.0f, 4.0f});
  const std::vector<int32_t> recent = {0, 0, 1, 3};
  apply_penalties(c, recent, 2.0f, 0.5f, 0.25f);
  EXPECT_FLOAT_EQ(c[0].logit, 2.0f / 2 - 2 * 0.5f - 0.25f);  // positive: divided
  EXPECT_FLOAT_EQ(c[1].logit, -2.0f * 2 - 0.5f - 0.25f);     // negative: multiplied
  EXPECT_FLOAT_EQ(c[2].logit, 1.0f);                         // not in the window
  EXPECT_FLOAT_EQ(c[3].logit, 4.0f / 2 - 0.5f - 0.25f);
}

TEST(Sampling, TopKKeepsTheKLargest) {
  auto c = make({0.1f, 5.0f, 3.0f, 4.0f});
  top_k(c, 2);
  EXPECT_EQ(ids(c), (std::vector<int32_t>{1, 3}));
  auto all = make({1, 3, 2});
  top_k(all, 0);
  EXPECT_EQ(ids(all), (std::vector<int32_t>{1, 2, 0}));
}

TEST(Sampling, SoftmaxSumsToOne) {
  auto c = make({1, 2, 3});
  softmax(c);
  EXPECT_NEAR(c[0].p + c[1].p + c[2].p, 1.0f, 1e-6);
  EXPECT_GT(c[0].p, c[1].p);
  EXPECT_NEAR(c[0].p, std::exp(3.0) / (std::exp(1.0) + std::exp(2.0) + std::exp(3.0)), 1e-6);
}

TEST(Sampling, TopPKeepsTheSmallestPrefixReachingP) {
  // probabilities 0.5, 0.3, 0.2 (logits are their logs)
  auto c = make({std::log(0.5f), std::log(0.3f), std::log(0.2f)});
  top_p(c, 0.7f);
  EXPECT_EQ(ids(c), (std::vector<int32_t>{0, 1}));
  auto d = make({std::log(0.5f), std::log(0.3f), std::log(0.2f)});
  top_p(d, 0.4f);
  EXPECT_EQ(ids(d), (std::vector<int32_t>{0}));
}

TEST(Sampling, MinPDropsTokensBelowAFractionOfTheBest) {
  auto c = make({std::log(0.5f), std::log(0.3f), std::log(0.04f)});
  min_p(c, 0.1f);  // threshold 0.05
  EXPECT_EQ(ids(c), (std::vector<int32_t>{0, 1}));
}

TEST(Sampling, TemperatureScalesLogits) {
  auto c = make({2.0f, 4.0f});
  temperature(c, 2.0f);
  EXPECT_FLOAT_EQ(c[0].logit, 1.0f);
  EXPECT_FLOAT_EQ(c[1].logit, 2.0f);
}

TEST(Sampler, GreedyIsArgmaxAfterBiasAndPenalties) {
  SamplingParams p;
  p.temperature = 0.0f;
  Sampler s(p);
  EXPECT_EQ(s.sample(std::vector<float>{1, 3, 2}), 1);
  p.logit_bias = {{2, 5.0f}};
  Sampler biased(p);
  EXPECT_EQ(biased.sample(std::vector<float>{1, 3, 2}), 2);
  p.logit_bias.clear();
  p.repeat_penalty = 10.0f;
  Sampler penalised(p);
  penalised.accept(1);
  EXPECT_EQ(penalised.sample(std::vector<float>{1, 3, 2}), 2);
}

TEST(Sampler, SameSeedSameDrawsAndDistributionFollowsProbabilities) {
  SamplingParams p;
  p.temperature = 1.0f;
  p.top_k = 0;
  p.top_p = 1.0f;
  p.min_p = 0.0f;
  p.seed = 1234;
  const std::vector<float> logits = {std::log(0.6f), std::log(0.3f), std::log(0.1f)};
  Sampler a(p), b(p);
  std::map<int32_t, int> counts;
  for (int i = 0; i < 20000; ++i) {
    const int32_t x = a.sample(logits);
    EXPECT_EQ(x, b.sample(logits));
    ++counts[x];
  }
  EXPECT_NEAR(counts[0] / 20000.0, 0.6, 0.02);
  EXPECT_NEAR(counts[1] / 20000.0, 0.3, 0.02);
  EXPECT_NEAR(counts[2] / 20000.0, 0.1, 0.02);
  a.reset();
  Sampler c(p);
  for (int i = 0; i < 50; ++i) EXPECT_EQ(a.sample(logits), c.sample(logits));
}

TEST(Sampler, NeverPicksABannedTokenAndReportsWhenAllAre) {
  SamplingParams p;
  p.top_k = 0;
  p.top_p = 1.0f;
  p.min_p = 0.0f;
  p.presence_penalty = 1.0f;
  const std::vector<float> logits = {1, 2, 3, 4};
  for (const float temperature : {0.0f, 1.0f}) {
    p.temperature = temperature;
    p.logit_bias = {{0, -INFINITY}, {1, -INFINITY}, {2, -INFINITY}, {3, -INFINITY}};
    Sampler all(p);
    all.accept(3);                                // penalties keep a banned token banned
    EXPECT_EQ(all.sample(logits), kNoCandidate);  // greedy used to answer 0
    EXPECT_EQ(all.sample(std::vector<float>{NAN, NAN, NAN, NAN}), kNoCandidate);
    p.logit_bias.pop_back();  // 3 is allowed
    Sampler some(p);
    for (int i = 0; i < 1000; ++i) ASSERT_EQ(some.sample(logits), 3);
  }
}

TEST(Sampler, PenaltyWindowForgetsOldTokens) {
  SamplingParams p;
  p.temperature = 0.0f;
  p.repeat_penalty = 100.0f;
  p.penalty_last_n = 2;
  Sampler s(p);
  s.accept(1);
  s.accept(0);
  s.accept(0);  // token 1 has left the window
  EXPECT_EQ(s.sample(std::vector<float>{1, 3, 2}), 1);
}

TEST(SamplingParams, ValidateRejectsAbsurdValues) {
  SamplingParams p;
  EXPECT_TRUE(p.validate(10).ok());
  p.temperature = NAN;
  EXPECT_FALSE(p.validate(10).ok());
  p = {};
  p.top_p = 0.0f;
  EXPECT_FALSE(p.validate(10).ok());
  p = {};
  p.logit_bias = {{10, 1.0f}};
  EXPECT_NE(p.validate(10).message().find("logit_bias token 10"), std::string::npos);
  p = {};
  p.repeat_penalty = -1.0f;
  EXPECT_FALSE(p.validate(10).ok());
}

}  // namespace
}  // namespace cellserve::engine
