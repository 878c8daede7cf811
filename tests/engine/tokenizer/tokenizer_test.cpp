// Tokenizer behaviour on small synthetic vocabularies (no testdata needed): merge order, byte
// fallback, special tokens, pieces, detokenization and load errors.
#include "engine/tokenizer/tokenizer.h"

#include <gtest/gtest.h>

#include "tests/engine/tokenizer/synthetic_vocab.h"

namespace cellserve::engine::tokenizer {
namespace {

using testing::build_tokenizer;
using testing::byte_level_vocab;
using testing::spm_vocab;
using testing::SyntheticVocab;
using Ids = std::vector<int32_t>;

// Bytes 0..255 at ids 0..255, then merged tokens.
struct BpeFixture {
  SyntheticVocab v = byte_level_vocab();
  int32_t he = v.add("he"), ll = v.add("ll"), hell = v.add("hell"), hello = v.add("hello");
  int32_t xyz = v.add("xyz");
  int32_t ctl = v.add("<|ctl|>", 3), user = v.add("<u>", 4), im_end = v.add("<|im_end|>", 3);
  int32_t unused = v.add("[PAD1]", 5);
  BpeFixture() {
    // "y z" makes "yz", which is not a token; "x yz" then needs the by-text merge table.
    v.merges = {"h e", "l l", "he ll", "hell o", "y z", "x yz"};
    v.extra.emplace_back("tokenizer.ggml.eos_token_id", GgufValue::u32(static_cast<uint32_t>(ctl)));
    v.extra.emplace_back("tokenizer.ggml.add_bos_token", GgufValue::boolean(false));
  }
};

TEST(BpeTokenizer, AppliesMergesByRank) {
  BpeFixture f;
  auto tok = build_tokenizer(f.v);
  ASSERT_TRUE(tok.ok()) << tok.status().to_string();
  EXPECT_EQ(tok->tokenize("hello", false, false), (Ids{f.hello}));
  EXPECT_EQ(tok->tokenize("hell", false, false), (Ids{f.hell}));
  EXPECT_EQ(tok->tokenize("hello world", false, false), (Ids{f.hello, ' ', 'w', 'o', 'r', 'l', 'd'}));
  // Equal ranks: the leftmost pair merges first.
  EXPECT_EQ(tok->tokenize("lll", false, false), (Ids{f.ll, 'l'}));
  EXPECT_EQ(tok->tokenize("llll", false, false), (Ids{f.ll, f.ll}));
  EXPECT_EQ(tok->tokenize("", true, true), Ids{});
}

TEST(BpeTokenizer, MergesThroughSymbolsThatAreNotTokens) {
  BpeFixture f;
  auto tok = build_tokenizer(f.v);
  ASSERT_TRUE(tok.ok());
  EXPECT_EQ(tok->tokenize("xyz", false, false), (Ids{f.xyz}));
  // "yz" stays a symbol that is no token: llama.cpp emits its bytes' one-character tokens.
  EXPECT_EQ(tok->tokenize("yz", false, false), (Ids{'y', 'z'}));
}

TEST(BpeTokenizer, SpecialTokensNeedParseSpecialButUserDefinedDoNot) {
  BpeFixture f;
  auto tok = build_tokenizer(f.v);
  ASSERT_TRUE(tok.ok());
  EXPECT_EQ(tok->tokenize("he<|ctl|>he", false, true), (Ids{f.he, f.ctl, f.he}));
  const Ids plain = tok->tokenize("he<|ctl|>he", false, false);
  EXPECT_EQ(std::count(plain.begin(), plain.end(), f.ctl), 0);
  EXPECT_EQ(tok->detokenize(plain, false, false), "he<|ctl|>he");
  // llama.cpp's tokenizer_st_partition: user-defined tokens are matched even without parse_special.
  EXPECT_EQ(tok->tokenize("he<u>he", false, false), (Ids{f.he, f.user, f.he}));
  EXPECT_EQ(tok->tokenize("<u><u>", false, false), (Ids{f.user, f.user}));
}

// "<|ctl|>" from the template is a control token; the same text inside a plain span (from the
// request's data) is tokenized as text, and the text around the span edges stays one run.
TEST(BpeTokenizer, PlainSpansKeepControlTokensAsText) {
  BpeFixture f;
  auto tok = build_tokenizer(f.v);
  ASSERT_TRUE(tok.ok());
  const std::string text = "<|ctl|>he<|ctl|>llo<|ctl|>";  // the middle "he<|ctl|>llo" is data
  const std::vector<TextSpan> data{{7, 19}};
  const Ids ids = tok->tokenize_prompt(text, false, data);
  Ids expected{f.ctl};
  const Ids middle = tok->tokenize("he<|ctl|>llo", false, false);
  expected.insert(expected.end(), middle.begin(), middle.end());
  expected.push_back(f.ctl);
  EXPECT_EQ(ids, expected);
  EXPECT_EQ(std::count(ids.begin(), ids.end(), f.ctl), 2);
  // No span: exactly tokenize(parse_special=true).
  EXPECT_EQ(tok->tokenize_prompt(text, false, {}), tok->tokenize(text, false, true));
  // A span edge inside a run does not split it: "hello" is one token, half of it data.
  EXPECT_EQ(tok->tokenize_prompt("hello", false, std::vector<TextSpan>{{2, 5}}), (Ids{f.hello}));
  // An occurrence that only touches the span with one byte is still text.
  const Ids straddling = tok->tokenize_prompt("<|ctl|>", false, std::vector<TextSpan>{{6, 7}});
  EXPECT_EQ(straddling, tok->tokenize("<|ctl|>", false, false));
  // After a skipped occurrence the search goes on: the next one, outside the span, is a token.
  EXPECT_EQ(tok->tokenize_prompt("<|ctl|><|ctl|>", false, std::vector<TextSpan>{{0, 1}}).back(), f.ctl);
  // User-defined tokens are matched inside spans too, as with parse_special=false.
  EXPECT_EQ(tok->tokenize_prompt("<u>", false, std::vector<TextSpan>{{0, 3}}), (Ids{f.user}));
}

TEST(BpeTokenizer, PiecesAndDetokenize) {
  BpeFixture f;
  auto tok = build_tokenizer(f.v);
  ASSERT_TRUE(tok.ok());
  EXPECT_EQ(tok->token_to_piece(' ', false), " ");  // byte-level U+0120 decodes to a space
  EXPECT_EQ(tok->token_to_piece(f.hello, false), "hello");
  EXPECT_EQ(tok->token_to_piece(f.ctl, false), "");
  EXPECT_EQ(tok->token_to_piece(f.ctl, true), "<|ctl|>");
  EXPECT_EQ(tok->token_to_piece(f.user, false), "<u>");
  EXPECT_EQ(tok->token_to_piece(f.unused, true), "");
  EXPECT_EQ(tok->token_to_piece(-1, true), "");
  EXPECT_EQ(tok->token_to_piece(tok->n_vocab(), true), "");
  const Ids ids = {f.hello, f.ctl, ' ', f.he};
  EXPECT_EQ(tok->detokenize(ids, false, false), "hello he");
  EXPECT_EQ(tok->detokenize(ids, false, true), "hello<|ctl|> he");
  // qwen2 does not clean spaces: " ." stays.
  EXPECT_EQ(tok->detokenize(tok->tokenize("a . b", false, false), false, false), "a . b");
}

TEST(BpeTokenizer, SpecialIdsAndEndOfGeneration) {
  BpeFixture f;
  auto tok = build_tokenizer(f.v);
  ASSERT_TRUE(tok.ok());
  EXPECT_EQ(tok->eos(), f.ctl);
  EXPECT_EQ(tok->eot(), f.im_end);  // found by its text
  EXPECT_TRUE(tok->is_eog(f.ctl));
  EXPECT_TRUE(tok->is_eog(f.im_end));
  EXPECT_FALSE(tok->is_eog(f.hello));
  EXPECT_EQ(tok->n_vocab(), static_cast<int32_t>(f.v.tokens.size()));
  // add_bos_token false: add_special adds nothing.
  EXPECT_EQ(tok->tokenize("he", true, false), (Ids{f.he}));
}

TEST(BpeTokenizer, PreTokenizerOverride) {
  BpeFixture f;
  auto qwen2 = build_tokenizer(f.v);
  auto llama = build_tokenizer(f.v, VocabularyOptions{std::string("llama-bpe")});
  ASSERT_TRUE(qwen2.ok());
  ASSERT_TRUE(llama.ok());
  EXPECT_EQ(qwen2->tokenize("123", false, false), (Ids{'1', '2', '3'}));
  EXPECT_EQ(llama->vocab().pre_name(), "llama-bpe");
  EXPECT_TRUE(llama->vocab().clean_spaces());
  EXPECT_EQ(llama->detokenize(llama->tokenize("a . b", false, false), false, false), "a. b");
}

// <unk> 0, <s> 1, </s> 2, bytes 3..258, then pieces.
struct SpmFixture {
  SyntheticVocab v = spm_vocab();
  int32_t space = v.add("\xE2\x96\x81", 1, -3.0f);
  int32_t a = v.add("a", 1, -4.0f), b = v.add("b", 1, -4.0f);
  int32_t space_a = v.add(
      "\xE2\x96\x81"
      "a",
      1, -1.0f);
  int32_t ab = v.add("ab", 1, -0.5f);
  int32_t space_ab = v.add(
      "\xE2\x96\x81"
      "ab",
      1, -2.0f);
};

TEST(SpmTokenizer, MergesByScoreWithLeadingSpace) {
  SpmFixture f;
  auto tok = build_tokenizer(f.v);
  ASSERT_TRUE(tok.ok()) << tok.status().to_string();
  // " ab": "ab" (-0.5) beats "▁a" (-1), then "▁" + "ab" makes "▁ab".
  EXPECT_EQ(tok->tokenize("ab", false, false), (Ids{f.space_ab}));
  EXPECT_EQ(tok->tokenize("ab", true, false), (Ids{1, f.space_ab}));  // SPM adds BOS by default
  EXPECT_EQ(tok->tokenize("a b", false, false), (Ids{f.space_a, f.space, f.b}));
  EXPECT_EQ(tok->detokenize(Ids{f.space_a, f.space, f.b}, false, false), "a b");
  EXPECT_EQ(tok->detokenize(Ids{1, f.space_ab}, false, true), "<s> ab");
  EXPECT_EQ(tok->detokenize(Ids{1, f.space_ab}, true, false), " ab");  // BOS removed: its space stays
}

TEST(SpmTokenizer, ByteFallbackAndSpecialTokens) {
  SpmFixture f;
  auto tok = build_tokenizer(f.v);
  ASSERT_TRUE(tok.ok());
  // "€" = E2 82 AC is not a piece: it becomes three byte tokens.
  EXPECT_EQ(tok->tokenize("\xE2\x82\xAC", false, false), (Ids{f.space, 3 + 0xE2, 3 + 0x82, 3 + 0xAC}));
  EXPECT_EQ(tok->detokenize(Ids{f.space, 3 + 0xE2, 3 + 0x82, 3 + 0xAC}, false, false), "\xE2\x82\xAC");
  EXPECT_EQ(tok->token_to_piece(3 + 'A', false), "A");
  // A control token in the text starts a new run, which gets its own leading space.
  EXPECT_EQ(tok->tokenize("ab</s>ab", false, true), (Ids{f.space_ab, 2, f.space_ab}));
  EXPECT_EQ(tok->tokenize("</s>", false, false).size(), 5u);  // "▁" + the 4 bytes of "</s>"
  EXPECT_TRUE(tok->is_eog(2));
  EXPECT_EQ(tok->bos(), 1);
  EXPECT_EQ(tok->unk(), 0);
}

TEST(VocabularyLoad, ReportsMissingOrUnsupportedTokenizers) {
  SyntheticVocab none = byte_level_vocab();
  none.model.clear();
  EXPECT_EQ(build_tokenizer(none).status().code(), StatusCode::NotFound);

  SyntheticVocab bert = byte_level_vocab();
  bert.model = "bert";
  EXPECT_EQ(build_tokenizer(bert).status().code(), StatusCode::Unimplemented);

  SyntheticVocab deepseek = byte_level_vocab();
  deepseek.pre = "deepseek-llm";
  EXPECT_EQ(build_tokenizer(deepseek).status().code(), StatusCode::Unimplemented);

  SyntheticVocab no_pre = byte_level_vocab();
  no_pre.pre.clear();
  EXPECT_EQ(build_tokenizer(no_pre).status().code(), StatusCode::Unimplemented);

  SyntheticVocab no_merges = byte_level_vocab();
  no_merges.write_merges = false;
  EXPECT_EQ(build_tokenizer(no_merges).status().code(), StatusCode::NotFound);
}

TEST(VocabularyLoad, RejectsMalformedArrays) {
  SyntheticVocab dup = byte_level_vocab();
  dup.add("a");
  EXPECT_EQ(build_tokenizer(dup).status().code(), StatusCode::DataLoss);

  SyntheticVocab short_types = byte_level_vocab();
  short_types.types.pop_back();
  EXPECT_EQ(build_tokenizer(short_types).status().code(), StatusCode::DataLoss);

  SyntheticVocab numbers = byte_level_vocab();
  numbers.extra.emplace_back("tokenizer.ggml.tokens", GgufValue::i32_array({1, 2, 3}));
  EXPECT_EQ(build_tokenizer(numbers).status().code(), StatusCode::DataLoss);

  SyntheticVocab spm = spm_vocab();
  spm.scores.pop_back();
  EXPECT_EQ(build_tokenizer(spm).status().code(), StatusCode::DataLoss);
}

TEST(VocabularyLoad, IgnoresSpecialIdsOutsideTheVocabulary) {
  SyntheticVocab v = spm_vocab();
  v.extra.emplace_back("tokenizer.ggml.seperator_token_id", GgufValue::u32(0xFFFFFFFF));
  v.extra.emplace_back("tokenizer.ggml.eos_token_id", GgufValue::u32(100000));
  auto tok = build_tokenizer(v);
  ASSERT_TRUE(tok.ok());
  EXPECT_EQ(tok->eos(), 2);
  EXPECT_EQ(tok->vocab().sep(), kNoToken);
}

}  // namespace
}  // namespace cellserve::engine::tokenizer
