// The real Qwen2/Qwen3 vocabulary (151,936 tokens, tokenizer/ggml-vocab-qwen2.gguf): special tokens,
// end-of-generation ids and pieces, as llama.cpp sets them up.
#include <gtest/gtest.h>

#include <chrono>
#include <iostream>

#include "tests/engine/tokenizer/tokenizer_test_util.h"

namespace cellserve::engine::tokenizer {
namespace {

using testing::testdata_tokenizer;
using Ids = std::vector<int32_t>;

constexpr int32_t kEndOfText = 151643;
constexpr int32_t kImStart = 151644;
constexpr int32_t kImEnd = 151645;

const Tokenizer* qwen() { return testdata_tokenizer("tokenizer/ggml-vocab-qwen2.gguf"); }

TEST(QwenVocab, LoadsWithLlamaCppSpecialIds) {
  CS_REQUIRE_TESTDATA();
  const auto t0 = std::chrono::steady_clock::now();
  auto file = GgufFile::open(cellserve::testing::testdata_path("tokenizer/ggml-vocab-qwen2.gguf"));
  ASSERT_TRUE(file.ok());
  const auto t1 = std::chrono::steady_clock::now();
  auto tok = Tokenizer::from_gguf(*file);
  ASSERT_TRUE(tok.ok()) << tok.status().to_string();
  const auto t2 = std::chrono::steady_clock::now();
  using ms = std::chrono::duration<double, std::milli>;
  std::cout << "[ load     ] qwen2 vocab: gguf open " << ms(t1 - t0).count() << " ms, tokenizer " << ms(t2 - t1).count()
            << " ms\n";

  EXPECT_EQ(tok->n_vocab(), 151936);
  EXPECT_EQ(tok->bos(), kEndOfText);
  EXPECT_EQ(tok->eos(), kImEnd);
  EXPECT_EQ(tok->pad(), kEndOfText);
  EXPECT_EQ(tok->eot(), kImEnd);
  EXPECT_FALSE(tok->vocab().add_bos());
  // "</s>" (128247) is ordinary text in Qwen's vocabulary, but llama.cpp's by-text list (added for
  // PaddleOCR) makes it end generation and forces it to CONTROL; we reproduce that.
  for (const char* text : {"<|endoftext|>", "<|im_end|>", "<|fim_pad|>", "<|repo_name|>", "<|file_sep|>", "</s>"}) {
    EXPECT_TRUE(tok->is_eog(tok->vocab().find(text))) << text;
  }
  EXPECT_EQ(tok->vocab().eog_ids().size(), 6u);
  EXPECT_NE(tok->vocab().attr(128247) & token_attr::kControl, 0u);
  EXPECT_FALSE(tok->is_eog(kImStart));
}

TEST(QwenVocab, ControlTokensParseOnlyWithParseSpecial) {
  CS_REQUIRE_TESTDATA();
  const Tokenizer* tok = qwen();
  ASSERT_NE(tok, nullptr);
  EXPECT_EQ(tok->tokenize("<|im_start|>user\n", false, true), (Ids{kImStart, 872, 198}));
  const Ids plain = tok->tokenize("<|im_start|>user\n", false, false);
  EXPECT_EQ(std::count(plain.begin(), plain.end(), kImStart), 0);
  EXPECT_EQ(tok->detokenize(plain, false, false), "<|im_start|>user\n");
  // add_special adds nothing for Qwen (no BOS, no EOS).
  EXPECT_EQ(tok->tokenize("<|im_start|>user\n", true, true), (Ids{kImStart, 872, 198}));
}

TEST(QwenVocab, UserDefinedTokensAreAlwaysMatched) {
  CS_REQUIRE_TESTDATA();
  const Tokenizer* tok = qwen();
  ASSERT_NE(tok, nullptr);
  const int32_t think = tok->vocab().find("<think>");
  ASSERT_NE(think, kNoToken);
  EXPECT_NE(tok->vocab().attr(think) & token_attr::kUserDefined, 0u);
  EXPECT_EQ(tok->tokenize("<think>\n", false, false), (Ids{think, 198}));
  EXPECT_EQ(tok->tokenize("<think>\n", false, true), (Ids{think, 198}));
  EXPECT_EQ(tok->token_to_piece(think, false), "<think>");
}

TEST(QwenVocab, Pieces) {
  CS_REQUIRE_TESTDATA();
  const Tokenizer* tok = qwen();
  ASSERT_NE(tok, nullptr);
  EXPECT_EQ(tok->token_to_piece(kImEnd, false), "");
  EXPECT_EQ(tok->token_to_piece(kImEnd, true), "<|im_end|>");
  EXPECT_EQ(tok->token_to_piece(198, false), "\n");
  EXPECT_EQ(tok->token_to_piece(tok->vocab().find("\xC4\xA0world"), false), " world");  // "Ġworld"
  EXPECT_EQ(tok->token_to_piece(151935, true), "");                                     // [PAD] entries are unused
  EXPECT_EQ(tok->detokenize(Ids{kImStart, 872, 198, kImEnd}, true, true), "<|im_start|>user\n<|im_end|>");
}

TEST(QwenVocab, MalformedUtf8BecomesReplacementCharacters) {
  CS_REQUIRE_TESTDATA();
  const Tokenizer* tok = qwen();
  ASSERT_NE(tok, nullptr);
  // As in llama.cpp, the BPE path decodes to code points first: each bad byte is U+FFFD.
  EXPECT_EQ(tok->tokenize("a\xFF"
                          "b",
                          false, false),
            tok->tokenize("a\xEF\xBF\xBD"
                          "b",
                          false, false));
}

}  // namespace
}  // namespace cellserve::engine::tokenizer
