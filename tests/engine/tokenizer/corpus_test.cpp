// llama.cpp's tokenizer conformance corpora (shared/testdata/tokenizer): every line must give exactly
// the ids in the .out file, tokenized as test-tokenizer-0 does (add_special = false, parse_special = false).
#include <gtest/gtest.h>

#include <iostream>

#include "tests/engine/tokenizer/tokenizer_test_util.h"

namespace cellserve::engine::tokenizer {
namespace {

using testing::CorpusCase;
using testing::read_corpus;
using testing::testdata_tokenizer;

struct CorpusSpec {
  const char* name;
  const char* vocab;         // testdata-relative GGUF
  const char* pre_override;  // "" = the file's own
  const char* corpus;        // testdata-relative .inp/.out base
  bool round_trips;          // detokenize(tokenize(x)) == x for every line
};

// qwen35: README §3 — the qwen2 vocabulary (same tokens and merges) with pre = qwen35 reproduces
// all 50 lines (the real 248k-token Qwen3.5 vocabulary is not in testdata; every id there is < 151643).
const CorpusSpec kCorpora[] = {
    {"qwen2", "tokenizer/ggml-vocab-qwen2.gguf", "", "tokenizer/ggml-vocab-qwen2.gguf", true},
    {"qwen35", "tokenizer/ggml-vocab-qwen2.gguf", "qwen35", "tokenizer/ggml-vocab-qwen35.gguf", true},
    {"llama_spm", "tokenizer/ggml-vocab-llama-spm.gguf", "", "tokenizer/ggml-vocab-llama-spm.gguf", true},
};

std::string show(const std::vector<int32_t>& ids) {
  std::string s;
  for (int32_t id : ids) s += " " + std::to_string(id);
  return s;
}

class TokenizerCorpus : public ::testing::TestWithParam<CorpusSpec> {};

TEST_P(TokenizerCorpus, MatchesLlamaCppOnEveryLine) {
  CS_REQUIRE_TESTDATA();
  const CorpusSpec& spec = GetParam();
  const Tokenizer* tok = testdata_tokenizer(spec.vocab, spec.pre_override);
  ASSERT_NE(tok, nullptr);
  const std::vector<CorpusCase> cases = read_corpus(cellserve::testing::testdata_path(spec.corpus));
  ASSERT_FALSE(cases.empty());

  size_t matched = 0;
  for (size_t i = 0; i < cases.size(); ++i) {
    const std::vector<int32_t> got = tok->tokenize(cases[i].text, /*add_special=*/false, /*parse_special=*/false);
    if (got == cases[i].ids) {
      ++matched;
    } else {
      ADD_FAILURE() << spec.name << " line " << i << " '" << cases[i].text << "'\n  expected" << show(cases[i].ids)
                    << "\n  got     " << show(got);
    }
  }
  std::cout << "[ corpus   ] " << spec.name << ": " << matched << "/" << cases.size() << " lines match\n";
  EXPECT_EQ(matched, cases.size());
}

TEST_P(TokenizerCorpus, DetokenizeRoundTrips) {
  CS_REQUIRE_TESTDATA();
  const CorpusSpec& spec = GetParam();
  if (!spec.round_trips) GTEST_SKIP() << spec.name << " is not lossless";
  const Tokenizer* tok = testdata_tokenizer(spec.vocab, spec.pre_override);
  ASSERT_NE(tok, nullptr);
  for (const CorpusCase& c : read_corpus(cellserve::testing::testdata_path(spec.corpus))) {
    EXPECT_EQ(tok->detokenize(c.ids, false, false), c.text) << spec.name;
    EXPECT_EQ(tok->detokenize(tok->tokenize(c.text, false, false), false, false), c.text) << spec.name;
  }
}

INSTANTIATE_TEST_SUITE_P(Corpora, TokenizerCorpus, ::testing::ValuesIn(kCorpora),
                         [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace cellserve::engine::tokenizer
