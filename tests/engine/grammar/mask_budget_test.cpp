// GrammarLimits at mask time: the matcher work of one mask is counted, identical anyOf branches
// cost what one does, and a mask that would pass max_mask_work or max_live_threads stops there
// and fails instead of running on. Counts, never times.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include <boost/json.hpp>

#include "engine/grammar/matcher.h"
#include "engine/grammar/output_constraint.h"
#include "tests/engine/tokenizer/synthetic_vocab.h"

namespace cellserve::engine::grammar {
namespace {

namespace json = boost::json;
using tokenizer::Tokenizer;

// Every byte, a few merged pieces (so the vocabulary has a trie to walk) and an end token.
const Tokenizer& byte_tokenizer() {
  static const Tokenizer tok = [] {
    auto v = tokenizer::testing::byte_level_vocab();
    for (const char* text : {"ab", "abc", "hello", "{\"", "\":", "\",", "  "}) {
      std::string encoded;
      for (unsigned char ch : std::string(text)) encoded += tokenizer::byte_to_utf8(ch);
      v.add(encoded);
    }
    v.add("<|endoftext|>", 3);
    return tokenizer::testing::build_tokenizer(v).value();
  }();
  return tok;
}

std::string alternatives(size_t n, const std::function<std::string(size_t)>& branch) {
  std::string s = R"({"anyOf":[)";
  for (size_t i = 0; i < n; ++i) s += (i > 0 ? "," : "") + branch(i);
  return s + "]}";
}
std::string plain_string(size_t) { return R"({"type":"string"})"; }
std::string string_up_to(size_t i) { return R"({"type":"string","maxLength":)" + std::to_string(1000 + i) + "}"; }

// A sequence over byte_tokenizer() that has accepted `prefix` byte by byte.
ConstrainedSequence sequence_after(const std::string& schema, const std::string& prefix,
                                   const GrammarLimits& limits = {}) {
  auto c = OutputConstraint::from_schema(json::parse(schema), limits);
  EXPECT_TRUE(c.ok()) << c.status().to_string();
  ConstrainedSequence seq(*c, build_token_index(byte_tokenizer()));
  for (unsigned char ch : prefix) EXPECT_TRUE(seq.accept(ch).ok()) << prefix;
  return seq;
}

// The work of one mask (with a budget check, so completion costs are counted too).
int64_t mask_work(const ConstrainedSequence& seq, Status* status = nullptr) {
  std::vector<float> logits(static_cast<size_t>(byte_tokenizer().n_vocab()), 0.0f);
  const Status s = seq.mask_logits(logits, 40);
  if (status != nullptr) *status = s;
  EXPECT_TRUE(status != nullptr || s.ok()) << s.to_string();
  return seq.last_mask_work();
}

// Regression (issue 19): with 400 identical branches every byte of the mask stepped 400 threads.
TEST(MaskBudget, IdenticalBranchesCostOneBranch) {
  for (const std::string prefix : {"", "\"", "\"ab"}) {
    const int64_t one = mask_work(sequence_after(alternatives(1, plain_string), prefix));
    const int64_t many = mask_work(sequence_after(alternatives(400, plain_string), prefix));
    EXPECT_GT(one, 0);
    EXPECT_EQ(many, one) << "after '" << prefix << "'";
  }
}

TEST(MaskBudget, DistinctBranchesCostPerLiveThread) {
  const int64_t one = mask_work(sequence_after(string_up_to(0), "\"ab"));
  const int64_t sixteen = mask_work(sequence_after(alternatives(16, string_up_to), "\"ab"));
  EXPECT_GT(sixteen, 8 * one);  // 16 threads step every byte of the walk
  EXPECT_LE(sixteen, GrammarLimits{}.max_mask_work);
}

TEST(MaskBudget, MaskStopsAtTheWorkLimit) {
  GrammarLimits limits;
  limits.max_mask_work = 20'000;
  auto seq = sequence_after(alternatives(64, string_up_to), "\"", limits);
  std::vector<float> logits(static_cast<size_t>(byte_tokenizer().n_vocab()), 0.0f);
  const Status s = seq.mask_logits(logits, 40);
  EXPECT_EQ(s.code(), StatusCode::InvalidArgument);
  EXPECT_NE(s.message().find("the limit (max_mask_work) of 20000"), std::string::npos) << s.message();
  // It stopped within one thread step of the limit (a stack here is 2 frames).
  EXPECT_GT(seq.last_mask_work(), limits.max_mask_work);
  EXPECT_LE(seq.last_mask_work(), limits.max_mask_work + static_cast<int64_t>(WorkMeter::kStepCost) + 2);
  for (float l : logits) EXPECT_FALSE(std::isfinite(l));
  // The sequence cannot go on.
  EXPECT_FALSE(seq.accept('a').ok());
  EXPECT_FALSE(seq.mask_logits(logits, 40).ok());
  // Under the default limit the same mask is fine.
  Status fine;
  mask_work(sequence_after(alternatives(64, string_up_to), "\""), &fine);
  EXPECT_TRUE(fine.ok()) << fine.to_string();
}

TEST(MaskBudget, MaskStopsAtTheLiveThreadLimit) {
  GrammarLimits limits;
  limits.max_live_threads = 16;
  // The opening quote forks one thread per branch.
  const auto seq = sequence_after(alternatives(64, string_up_to), "", limits);
  Status s;
  mask_work(seq, &s);
  EXPECT_EQ(s.code(), StatusCode::InvalidArgument);
  EXPECT_NE(s.message().find("the limit (max_live_threads) of 16"), std::string::npos) << s.message();
  // Later calls give the same reason.
  mask_work(seq, &s);
  EXPECT_NE(s.message().find("the limit (max_live_threads) of 16"), std::string::npos) << s.message();
}

TEST(MaskBudget, DeepDocumentsCostMoreAndStayBounded) {
  // Each open value is a frame every thread step copies: depth is work too.
  const int64_t shallow = mask_work(sequence_after("{}", "[\""));
  const int64_t deep = mask_work(sequence_after("{}", std::string(200, '[') + "\""));
  EXPECT_GT(deep, 5 * shallow);
  GrammarLimits limits;
  limits.max_mask_work = deep - 1;
  Status s;
  mask_work(sequence_after("{}", std::string(200, '[') + "\"", limits), &s);
  EXPECT_EQ(s.code(), StatusCode::InvalidArgument);
}

}  // namespace
}  // namespace cellserve::engine::grammar
