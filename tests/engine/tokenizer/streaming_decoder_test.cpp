#include "engine/tokenizer/streaming_decoder.h"

#include <gtest/gtest.h>

#include "tests/engine/tokenizer/synthetic_vocab.h"
#include "tests/engine/tokenizer/tokenizer_test_util.h"

namespace cellserve::engine::tokenizer {
namespace {

using testing::build_tokenizer;
using testing::spm_vocab;

constexpr int32_t byte_token(uint8_t b) { return 3 + b; }  // spm_vocab(): <0xXX> at 3 + XX

Tokenizer spm_tokenizer() {
  auto v = spm_vocab();
  v.add(
      "\xE2\x96\x81"
      "a",
      1, -1.0f);           // id 259
  v.add("<|im_end|>", 3);  // id 260
  auto tok = build_tokenizer(v);
  EXPECT_TRUE(tok.ok()) << tok.status().to_string();
  return std::move(tok).value();
}

TEST(StreamingDecoder, HoldsBackCharactersSplitOverByteTokens) {
  const Tokenizer tok = spm_tokenizer();
  StreamingDecoder d(tok);
  // "€" = E2 82 AC, one byte token at a time.
  EXPECT_EQ(d.push(byte_token(0xE2)), "");
  EXPECT_EQ(d.pending_bytes(), 1u);
  EXPECT_EQ(d.push(byte_token(0x82)), "");
  EXPECT_EQ(d.push(byte_token(0xAC)), "\xE2\x82\xAC");
  EXPECT_EQ(d.pending_bytes(), 0u);
  // A 4-byte emoji (U+1F999) after text: the text comes out at once, the emoji when complete.
  EXPECT_EQ(d.push(259), " a");
  EXPECT_EQ(d.push(byte_token(0xF0)), "");
  EXPECT_EQ(d.push(byte_token(0x9F)), "");
  EXPECT_EQ(d.push(byte_token(0xA6)), "");
  EXPECT_EQ(d.push(byte_token(0x99)), "\xF0\x9F\xA6\x99");
  EXPECT_EQ(d.flush(), "");
}

TEST(StreamingDecoder, ReplacesBytesThatCanNeverFormACharacter) {
  const Tokenizer tok = spm_tokenizer();
  StreamingDecoder d(tok);
  // A lead byte followed by ASCII: the lead byte is invalid, the ASCII passes.
  EXPECT_EQ(d.push(byte_token(0xE2)), "");
  EXPECT_EQ(d.push(byte_token('x')), "\xEF\xBF\xBDx");
  // A stray continuation byte, an overlong lead (C0) and a surrogate (ED A0 80).
  EXPECT_EQ(d.push(byte_token(0x80)), "\xEF\xBF\xBD");
  EXPECT_EQ(d.push(byte_token(0xC0)), "\xEF\xBF\xBD");
  EXPECT_EQ(d.push_bytes("\xED\xA0\x80"), "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");
  // Incomplete at the end of the stream.
  EXPECT_EQ(d.push(byte_token(0xF0)), "");
  EXPECT_EQ(d.push(byte_token(0x9F)), "");
  EXPECT_EQ(d.flush(), "\xEF\xBF\xBD\xEF\xBF\xBD");
  EXPECT_EQ(d.pending_bytes(), 0u);
}

TEST(StreamingDecoder, RendersControlTokensOnlyWhenAsked) {
  const Tokenizer tok = spm_tokenizer();
  StreamingDecoder plain(tok);
  StreamingDecoder special(tok, /*special=*/true);
  EXPECT_EQ(plain.push(260), "");
  EXPECT_EQ(special.push(260), "<|im_end|>");
}

// Byte-level BPE: "é" (C3 A9) and "😁" (F0 9F 98 81) as single-byte tokens, and the stream of a
// whole tokenized text decoded token by token equals the text.
TEST(StreamingDecoder, ByteLevelBpeStreamsEqualTheText) {
  CS_REQUIRE_TESTDATA();
  const Tokenizer* tok = testing::testdata_tokenizer("tokenizer/ggml-vocab-qwen2.gguf");
  ASSERT_NE(tok, nullptr);
  const Vocabulary& v = tok->vocab();
  StreamingDecoder d(*tok);
  EXPECT_EQ(d.push(v.byte_level_token(0xC3)), "");
  EXPECT_EQ(d.push(v.byte_level_token(0xA9)), "\xC3\xA9");

  const std::string text =
      "caf\xC3\xA9 \xF0\x9F\x98\x81\xF0\x9F\x98\x81 \xE6\x88\x91\xE6\x83\xB3\xE5\x9C\xA8 \xE1\x9E\x80\xE1\x9E\xB6";
  std::string streamed;
  for (int32_t id : tok->tokenize(text, false, false)) {
    const std::string out = d.push(id);
    streamed += out;
  }
  streamed += d.flush();
  EXPECT_EQ(streamed, text);
}

}  // namespace
}  // namespace cellserve::engine::tokenizer
