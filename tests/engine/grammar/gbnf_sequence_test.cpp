// GBNF grammars through ConstrainedSequence over a synthetic vocabulary: masks, end tokens exactly
// at completion, budget closing, external JSON values, and the mask-time limits.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "engine/grammar/output_constraint.h"
#include "engine/grammar/schema.h"
#include "grammar_test_util.h"
#include "tests/engine/tokenizer/synthetic_vocab.h"

namespace cellserve::engine::grammar {
namespace {

using tokenizer::Tokenizer;

// Every byte (ids 0-255), some merged pieces and special tokens.
const Tokenizer& gbnf_tokenizer() {
  static const Tokenizer tok = [] {
    auto v = tokenizer::testing::byte_level_vocab();
    for (const char* text : {"RISK", "_LEVEL", ": ", "12", "<call>", "</call>", "{\"a\":", "- ", "\n- ", "O-O", "e4",
                             "\xE2\x82", "((", "))"}) {
      std::string encoded;
      for (unsigned char ch : std::string(text)) encoded += tokenizer::byte_to_utf8(ch);
      v.add(encoded);
    }
    v.add("<|endoftext|>", 3);
    v.add("<|im_start|>", 3);
    v.add("<|im_end|>", 3);
    return tokenizer::testing::build_tokenizer(v).value();
  }();
  return tok;
}

int32_t token(const std::string& text) {
  std::string encoded;
  for (unsigned char ch : text) encoded += tokenizer::byte_to_utf8(ch);
  const int32_t id = gbnf_tokenizer().vocab().find(encoded);
  EXPECT_GE(id, 0) << text;
  return id;
}

std::shared_ptr<const OutputConstraint> gbnf(
    const std::string& text, const GrammarLimits& limits = {},
    const std::map<std::string, std::shared_ptr<const OutputConstraint>>& externals = {}) {
  auto c = OutputConstraint::from_gbnf(text, limits, externals);
  EXPECT_TRUE(c.ok()) << text << "\n" << c.status().to_string();
  return c.ok() ? *c : nullptr;
}

std::vector<int32_t> allowed(const ConstrainedSequence& seq, int64_t remaining) {
  const int32_t n = gbnf_tokenizer().n_vocab();
  std::vector<float> logits(static_cast<size_t>(n), 0.0f);
  const Status s = seq.mask_logits(logits, remaining);
  EXPECT_TRUE(s.ok()) << s.to_string();
  std::vector<int32_t> out;
  for (int32_t i = 0; i < n; ++i)
    if (std::isfinite(logits[static_cast<size_t>(i)])) out.push_back(i);
  return out;
}

bool all_eog(const std::vector<int32_t>& ids) {
  for (int32_t id : ids)
    if (!gbnf_tokenizer().is_eog(id)) return false;
  return !ids.empty();
}

TEST(GbnfSequence, MaskFollowsTheGrammar) {
  const Tokenizer& tok = gbnf_tokenizer();
  ConstrainedSequence seq(gbnf(R"(root ::= "RISK_LEVEL: " [1-9])"), build_token_index(tok));
  EXPECT_EQ(allowed(seq, 100), (std::vector<int32_t>{'R', token("RISK")}));
  EXPECT_EQ(seq.accept(tok.vocab().find("<|im_end|>")).code(), StatusCode::InvalidArgument);  // not complete
  EXPECT_EQ(seq.accept(tok.vocab().find("<|im_start|>")).code(), StatusCode::InvalidArgument);
  EXPECT_EQ(seq.accept('r').code(), StatusCode::InvalidArgument);
  ASSERT_TRUE(seq.accept(token("RISK")).ok());
  EXPECT_EQ(allowed(seq, 100), (std::vector<int32_t>{'_', token("_LEVEL")}));
  ASSERT_TRUE(seq.accept(token("_LEVEL")).ok());
  ASSERT_TRUE(seq.accept(token(": ")).ok());
  std::vector<int32_t> digits;
  for (int32_t d = '1'; d <= '9'; ++d) digits.push_back(d);
  EXPECT_EQ(allowed(seq, 100), digits);  // not "12": one digit only
  EXPECT_FALSE(seq.complete());
  ASSERT_TRUE(seq.accept('7').ok());
  EXPECT_TRUE(seq.complete());
  EXPECT_TRUE(all_eog(allowed(seq, 100)));
  EXPECT_TRUE(seq.accept(tok.vocab().find("<|im_end|>")).ok());
}

TEST(GbnfSequence, CompleteButGrowing) {
  const Tokenizer& tok = gbnf_tokenizer();
  ConstrainedSequence seq(gbnf("root ::= [0-9]+"), build_token_index(tok));
  ASSERT_TRUE(seq.accept('1').ok());
  EXPECT_TRUE(seq.complete());
  const auto next = allowed(seq, 100);
  size_t eog = 0, digits = 0;
  for (int32_t id : next) {
    eog += tok.is_eog(id);
    digits += id >= '0' && id <= '9';
  }
  EXPECT_GT(eog, 0u);
  EXPECT_EQ(digits, 10u);
  EXPECT_EQ(next.size(), eog + digits + 1);  // and "12"
}

TEST(GbnfSequence, BudgetForcesClosing) {
  const Tokenizer& tok = gbnf_tokenizer();
  ConstrainedSequence seq(gbnf("root ::= \"(\" root \")\" | [0-9] (\"+\" root)?"), build_token_index(tok));
  for (char ch : std::string("((1+")) ASSERT_TRUE(seq.accept(static_cast<uint8_t>(ch)).ok());
  // Shortest completion "1))" (3 bytes) + the end token: with 4 tokens left only a digit fits ("12"
  // does not continue the grammar).
  auto next = allowed(seq, 4);
  std::vector<int32_t> digits;
  for (int32_t d = '0'; d <= '9'; ++d) digits.push_back(d);
  EXPECT_EQ(next, digits);
  // "(" leaves "1)))": with 6 tokens left it fits, "((" does not.
  next = allowed(seq, 6);
  EXPECT_NE(std::find(next.begin(), next.end(), '('), next.end());
  EXPECT_EQ(std::find(next.begin(), next.end(), token("((")), next.end());
  ASSERT_TRUE(seq.accept('1').ok());
  EXPECT_EQ(allowed(seq, 3), (std::vector<int32_t>{')', token("))")}));
  EXPECT_EQ(allowed(seq, 2), (std::vector<int32_t>{token("))")}));
  // No room for the end token after it: the token that shortens the completion most still goes.
  EXPECT_EQ(allowed(seq, 1), (std::vector<int32_t>{token("))")}));
  ASSERT_TRUE(seq.accept(token("))")).ok());
  EXPECT_TRUE(seq.complete());
}

// The budget counts bytes, tokens carry several: 13 bytes of "RISK_LEVEL: 5" in 5 tokens, the
// end token included, where a byte-count budget alone would allow nothing.
TEST(GbnfSequence, ABudgetBelowTheBytesStillWritesTheAnswer) {
  const Tokenizer& tok = gbnf_tokenizer();
  ConstrainedSequence seq(gbnf(R"(root ::= "RISK_LEVEL: " [1-9])"), build_token_index(tok));
  EXPECT_EQ(allowed(seq, 5), (std::vector<int32_t>{token("RISK")}));
  ASSERT_TRUE(seq.accept(token("RISK")).ok());
  EXPECT_EQ(allowed(seq, 4), (std::vector<int32_t>{token("_LEVEL")}));
  ASSERT_TRUE(seq.accept(token("_LEVEL")).ok());
  EXPECT_EQ(allowed(seq, 3), (std::vector<int32_t>{token(": ")}));  // fits: 1 byte and the end token
  ASSERT_TRUE(seq.accept(token(": ")).ok());
  ASSERT_TRUE(seq.accept('5').ok());
  EXPECT_TRUE(seq.complete());
  EXPECT_TRUE(all_eog(allowed(seq, 1)));
  // With 2 tokens, as much of it as fits: the longest steps.
  ConstrainedSequence cut(gbnf(R"(root ::= "RISK_LEVEL: " [1-9])"), build_token_index(tok));
  EXPECT_EQ(allowed(cut, 2), (std::vector<int32_t>{token("RISK")}));
}

// A vocabulary without a byte the grammar needs: no token shortens the completion, so the end
// tokens stay allowed (and accepted) rather than nothing.
TEST(GbnfSequence, AMissingByteLeavesTheEndTokens) {
  auto v = tokenizer::testing::byte_level_vocab();
  v.tokens['Z'] = tokenizer::byte_to_utf8(0xFF) + tokenizer::byte_to_utf8(0xFE);  // 'Z' is gone
  const int32_t eot = v.add("<|endoftext|>", 3);
  const Tokenizer tok = tokenizer::testing::build_tokenizer(v).value();
  ConstrainedSequence seq(gbnf(R"(root ::= "aZ")"), build_token_index(tok));
  ASSERT_TRUE(seq.accept('a').ok());
  std::vector<float> logits(static_cast<size_t>(tok.n_vocab()), 0.0f);
  ASSERT_TRUE(seq.mask_logits(logits, 100).ok());
  ASSERT_TRUE(tok.is_eog(eot));
  for (int32_t i = 0; i < tok.n_vocab(); ++i) {
    EXPECT_EQ(std::isfinite(logits[static_cast<size_t>(i)]), tok.is_eog(i)) << i;
  }
  EXPECT_TRUE(seq.accept(eot).ok());
  EXPECT_FALSE(seq.complete());
}

TEST(GbnfSequence, ExternalJsonValueInTheMask) {
  const Tokenizer& tok = gbnf_tokenizer();
  auto obj = testing::compile(R"({"type":"object","properties":{"a":{"type":"integer"}},"required":["a"]})");
  ConstrainedSequence seq(gbnf("root ::= \"<call>\" call \"</call>\"", {}, {{"call", obj}}), build_token_index(tok));
  EXPECT_EQ(allowed(seq, 100), (std::vector<int32_t>{'<', token("<call>")}));
  ASSERT_TRUE(seq.accept(token("<call>")).ok());
  EXPECT_EQ(allowed(seq, 100), (std::vector<int32_t>{'{', token("{\"a\":")}));
  ASSERT_TRUE(seq.accept(token("{\"a\":")).ok());
  ASSERT_TRUE(seq.accept('4').ok());
  auto next = allowed(seq, 100);  // digits, "12", whitespace, '}'
  EXPECT_NE(std::find(next.begin(), next.end(), '}'), next.end());
  EXPECT_NE(std::find(next.begin(), next.end(), token("12")), next.end());
  EXPECT_EQ(std::find(next.begin(), next.end(), '<'), next.end());
  // The budget counts bytes: "}</call>" is 8, plus the end token: with 9 tokens left only '}' fits.
  EXPECT_EQ(allowed(seq, 9), (std::vector<int32_t>{'}'}));
  ASSERT_TRUE(seq.accept('}').ok());
  EXPECT_EQ(allowed(seq, 2), (std::vector<int32_t>{token("</call>")}));
  ASSERT_TRUE(seq.accept(token("</call>")).ok());
  EXPECT_TRUE(seq.complete());
  EXPECT_TRUE(all_eog(allowed(seq, 100)));
}

// Generates with random logits until an end token; the text, which must be complete.
std::string generate(const std::shared_ptr<const OutputConstraint>& c, int64_t budget, uint32_t seed) {
  const Tokenizer& tok = gbnf_tokenizer();
  static const auto index = build_token_index(tok);
  ConstrainedSequence seq(c, index);
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist;
  std::vector<float> logits(static_cast<size_t>(tok.n_vocab()));
  std::string text;
  for (int64_t used = 0; used < budget; ++used) {
    for (float& l : logits) l = dist(rng);
    const Status masked = seq.mask_logits(logits, budget - used);
    EXPECT_TRUE(masked.ok()) << masked.to_string();
    if (!masked.ok()) return text;
    size_t best = 0;
    for (size_t i = 1; i < logits.size(); ++i)
      if (logits[i] > logits[best]) best = i;
    const auto id = static_cast<int32_t>(best);
    if (tok.is_eog(id)) {
      EXPECT_TRUE(seq.complete()) << "ended early: " << text;
      EXPECT_TRUE(seq.accept(id).ok());
      return text;
    }
    EXPECT_TRUE(seq.accept(id).ok()) << text;
    text += tok.token_to_piece(id, true);
  }
  ADD_FAILURE() << "no end token within " << budget << " tokens: " << text;
  return text;
}

TEST(GbnfSequence, RandomGenerationClosesWithinTheBudget) {
  auto obj = testing::compile(R"({"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"string"}},
                                  "required":["a"]})");
  const std::vector<std::shared_ptr<const OutputConstraint>> grammars = {
      gbnf("root ::= expr\nexpr ::= term ((\"+\" | \"-\") term)*\nterm ::= [0-9]+ | \"(\" expr \")\""),
      gbnf("root ::= item+\nitem ::= \"- \" [^\\n]+ \"\\n\""),
      gbnf("root ::= \"RISK_LEVEL: \" [1-9]"),
      gbnf("root ::= \"<call>\" call \"</call>\" (\"\\n<call>\" call \"</call>\")*", {}, {{"call", obj}}),
      gbnf("root ::= [\\u03b1-\\u03c9\\u4e00-\\u9fff]{2,} \"\\n\""),
      gbnf("root ::= (\"a\" | \"ab\" | \"abc\")* \"!\" | .{3,}"),
  };
  int generated = 0;
  for (const auto& c : grammars) {
    ASSERT_NE(c, nullptr);
    const int64_t min_budget = c->root().min_cost + 1;
    for (int64_t budget : {min_budget, min_budget + 3, min_budget + 12, int64_t{60}}) {
      for (uint32_t seed = 1; seed <= 4; ++seed) {
        const std::string text = generate(c, budget, seed * 7919 + static_cast<uint32_t>(budget));
        EXPECT_TRUE(testing::accepts(*c, text)) << text;
        ++generated;
      }
    }
  }
  EXPECT_EQ(generated, 96);
}

// A grammar whose first byte can be read by any of 4096 leaves, each a different parse.
std::string exploding_grammar() {
  std::string g = "root ::= x0 \"z\"\n";
  for (int i = 0; i < 12; ++i)
    g += "x" + std::to_string(i) + " ::= x" + std::to_string(i + 1) + " x" + std::to_string(i + 1) + "\n";
  return g + "x12 ::= \"a\" | \"\"\n";
}

TEST(GbnfSequence, MaskStopsAtTheLiveThreadLimit) {
  auto c = gbnf(exploding_grammar());
  ConstrainedSequence seq(c, build_token_index(gbnf_tokenizer()));
  std::vector<float> logits(static_cast<size_t>(gbnf_tokenizer().n_vocab()), 0.0f);
  const Status s = seq.mask_logits(logits, 100);
  EXPECT_EQ(s.code(), StatusCode::InvalidArgument);
  EXPECT_NE(s.message().find("the limit (max_live_threads) of 1024"), std::string::npos) << s.to_string();
  EXPECT_LE(seq.last_mask_work(), GrammarLimits{}.max_mask_work);
  for (float l : logits) EXPECT_FALSE(std::isfinite(l));
  // With room for the parses the same mask works: "a" and "z" are allowed.
  GrammarLimits roomy;
  roomy.max_live_threads = 8192;
  ConstrainedSequence ok(gbnf(exploding_grammar(), roomy), build_token_index(gbnf_tokenizer()));
  EXPECT_EQ(allowed(ok, 100), (std::vector<int32_t>{'a', 'z'}));
}

TEST(GbnfSequence, MaskStopsAtTheWorkLimit) {
  GrammarLimits limits;
  limits.max_mask_work = 5'000;
  ConstrainedSequence seq(gbnf("root ::= [^x]* \"x\"", limits), build_token_index(gbnf_tokenizer()));
  std::vector<float> logits(static_cast<size_t>(gbnf_tokenizer().n_vocab()), 0.0f);
  const Status s = seq.mask_logits(logits, 100);
  EXPECT_EQ(s.code(), StatusCode::InvalidArgument);
  EXPECT_NE(s.message().find("the limit (max_mask_work) of 5000"), std::string::npos) << s.to_string();
  EXPECT_LE(seq.last_mask_work(), limits.max_mask_work + 64);
  EXPECT_FALSE(seq.accept('a').ok());
}

}  // namespace
}  // namespace cellserve::engine::grammar
