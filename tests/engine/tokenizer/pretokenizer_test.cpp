// Pre-tokenizer splits, checked by hand against the regexes (docs/tokenizer.md) and llama.cpp's
// scanners. llama-bpe has no vocabulary in testdata, so its splitting is tested here on its own.
#include "engine/tokenizer/pretokenizer.h"

#include <gtest/gtest.h>

namespace cellserve::engine::tokenizer {
namespace {

using Words = std::vector<std::string>;

Words split(PreTokenizerKind kind, std::string_view text) { return pre_tokenize_text(kind, text); }

TEST(Llama3PreTokenizer, ContractionsAreCaseInsensitiveWords) {
  EXPECT_EQ(split(PreTokenizerKind::Llama3, "I'm"), (Words{"I", "'m"}));
  EXPECT_EQ(split(PreTokenizerKind::Llama3, "I'M"), (Words{"I", "'M"}));
  EXPECT_EQ(split(PreTokenizerKind::Llama3, "they'll've"), (Words{"they", "'ll", "'ve"}));
  EXPECT_EQ(split(PreTokenizerKind::Llama3, "WE'RE"), (Words{"WE", "'RE"}));
  EXPECT_EQ(split(PreTokenizerKind::Llama3, "it'd's"), (Words{"it", "'d", "'s"}));
  // Not a contraction: the apostrophe leads the letter run instead.
  EXPECT_EQ(split(PreTokenizerKind::Llama3, "y'all"), (Words{"y", "'all"}));
  // Contractions win over the letter rule even when letters follow ('s + a).
  EXPECT_EQ(split(PreTokenizerKind::Llama3, "'sa"), (Words{"'s", "a"}));
  EXPECT_EQ(split(PreTokenizerKind::Llama3, "'"), (Words{"'"}));
}

TEST(Llama3PreTokenizer, DigitsGroupInThreesFromTheLeft) {
  EXPECT_EQ(split(PreTokenizerKind::Llama3, "3"), (Words{"3"}));
  EXPECT_EQ(split(PreTokenizerKind::Llama3, "33"), (Words{"33"}));
  EXPECT_EQ(split(PreTokenizerKind::Llama3, "333"), (Words{"333"}));
  EXPECT_EQ(split(PreTokenizerKind::Llama3, "3333"), (Words{"333", "3"}));
  EXPECT_EQ(split(PreTokenizerKind::Llama3, "1234567"), (Words{"123", "456", "7"}));
  EXPECT_EQ(split(PreTokenizerKind::Llama3, "w048 7tuijk"), (Words{"w", "048", " ", "7", "tuijk"}));
  EXPECT_EQ(split(PreTokenizerKind::Llama3, "$100"), (Words{"$", "100"}));
  // Other \p{N} count too: Arabic-Indic digits and superscripts.
  EXPECT_EQ(split(PreTokenizerKind::Llama3, "\xD9\xA1\xD9\xA2\xD9\xA3\xD9\xA4"),
            (Words{"\xD9\xA1\xD9\xA2\xD9\xA3", "\xD9\xA4"}));
}

TEST(Llama3PreTokenizer, LettersTakeOneLeadingNonLetter) {
  EXPECT_EQ(split(PreTokenizerKind::Llama3, "Hello world"), (Words{"Hello", " world"}));
  EXPECT_EQ(split(PreTokenizerKind::Llama3, "Hello, world!"), (Words{"Hello", ",", " world", "!"}));
  EXPECT_EQ(split(PreTokenizerKind::Llama3, "\tword"), (Words{"\tword"}));
  EXPECT_EQ(split(PreTokenizerKind::Llama3, "(word)"), (Words{"(word", ")"}));
  EXPECT_EQ(split(PreTokenizerKind::Llama3, "\nword"), (Words{"\n", "word"}));  // never CR/LF
  EXPECT_EQ(split(PreTokenizerKind::Llama3, "9word"), (Words{"9", "word"}));    // never a digit
  EXPECT_EQ(split(PreTokenizerKind::Llama3, "\xD0\xBD\xD0\xB5\xD1\x89\xD0\xBE \xD0\xBD\xD0\xB0"),
            (Words{"\xD0\xBD\xD0\xB5\xD1\x89\xD0\xBE", " \xD0\xBD\xD0\xB0"}));  // Cyrillic letters
}

TEST(Llama3PreTokenizer, PunctuationRunsKeepOneSpaceAndTrailingNewlines) {
  EXPECT_EQ(split(PreTokenizerKind::Llama3, " ("), (Words{" ("}));
  EXPECT_EQ(split(PreTokenizerKind::Llama3, "hello!!!\n\nworld"), (Words{"hello", "!!!\n\n", "world"}));
  EXPECT_EQ(split(PreTokenizerKind::Llama3, "\n ="), (Words{"\n", " ="}));
  EXPECT_EQ(split(PreTokenizerKind::Llama3, "\xF0\x9F\xA6\x99.cpp"), (Words{"\xF0\x9F\xA6\x99.", "cpp"}));
  EXPECT_EQ(split(PreTokenizerKind::Llama3, "a  ..."), (Words{"a", " ", " ..."}));
}

TEST(Llama3PreTokenizer, WhitespaceRules) {
  EXPECT_EQ(split(PreTokenizerKind::Llama3, " "), (Words{" "}));
  EXPECT_EQ(split(PreTokenizerKind::Llama3, "   "), (Words{"   "}));  // \s+ at the end keeps all
  // \s+(?!\S): a run before a word leaves its last space to the word.
  EXPECT_EQ(split(PreTokenizerKind::Llama3, "   Hello"), (Words{"  ", " Hello"}));
  EXPECT_EQ(split(PreTokenizerKind::Llama3, "a  b"), (Words{"a", " ", " b"}));
  EXPECT_EQ(split(PreTokenizerKind::Llama3, "a  "), (Words{"a", "  "}));
  // \s*[\r\n]+: through the last CR/LF of the run; spaces after it start the next word.
  EXPECT_EQ(split(PreTokenizerKind::Llama3, "\n\n"), (Words{"\n\n"}));
  EXPECT_EQ(split(PreTokenizerKind::Llama3, " \n x"), (Words{" \n", " x"}));
  EXPECT_EQ(split(PreTokenizerKind::Llama3, "\t\n"), (Words{"\t\n"}));
  EXPECT_EQ(split(PreTokenizerKind::Llama3, "    Hello\n    Hello"), (Words{"   ", " Hello", "\n", "   ", " Hello"}));
  // Non-ASCII White_Space (U+3000 ideographic space) counts as \s.
  EXPECT_EQ(split(PreTokenizerKind::Llama3,
                  "a\xE3\x80\x80\xE3\x80\x80"
                  "b"),
            (Words{"a", "\xE3\x80\x80",
                   "\xE3\x80\x80"
                   "b"}));
}

TEST(Llama3PreTokenizer, WordsConcatenateToTheInput) {
  const std::string text =
      "Hello, y'all! How are you \xF0\x9F\x98\x81 ?\xE6\x88\x91\xE6\x83\xB3 1314151\xE5\xA4\xA9\xEF\xBD\x9E\r\n\r\n  x";
  std::string joined;
  for (const auto& w : split(PreTokenizerKind::Llama3, text)) joined += w;
  EXPECT_EQ(joined, text);
}

TEST(Qwen2PreTokenizer, OneDigitPerWord) {
  EXPECT_EQ(split(PreTokenizerKind::Qwen2, "3333"), (Words{"3", "3", "3", "3"}));
  EXPECT_EQ(split(PreTokenizerKind::Qwen2, "ied 4 \xC2\xBD months"),
            (Words{"ied", " ", "4", " ", "\xC2\xBD", " months"}));
  EXPECT_EQ(split(PreTokenizerKind::Qwen2, "I'M"), (Words{"I", "'M"}));
}

TEST(Qwen35PreTokenizer, CombiningMarksStayWithTheirLetters) {
  // "नमस्ते": Devanagari letters with vowel signs and a virama (\p{M}).
  const std::string namaste = "\xE0\xA4\xA8\xE0\xA4\xAE\xE0\xA4\xB8\xE0\xA5\x8D\xE0\xA4\xA4\xE0\xA5\x87";
  EXPECT_EQ(split(PreTokenizerKind::Qwen35, namaste), (Words{namaste}));
  // Qwen2 breaks the run at each mark, which then joins the next letter as its leading character.
  EXPECT_EQ(split(PreTokenizerKind::Qwen2, namaste),
            (Words{"\xE0\xA4\xA8\xE0\xA4\xAE\xE0\xA4\xB8", "\xE0\xA5\x8D\xE0\xA4\xA4", "\xE0\xA5\x87"}));
  // A lone combining mark after a space.
  EXPECT_EQ(split(PreTokenizerKind::Qwen35, "a \xCC\x81"), (Words{"a", " \xCC\x81"}));
}

TEST(Gpt2PreTokenizer, ClassicRules) {
  EXPECT_EQ(split(PreTokenizerKind::Gpt2, "Hello world"), (Words{"Hello", " world"}));
  EXPECT_EQ(split(PreTokenizerKind::Gpt2, "I'M 1234"), (Words{"I", "'", "M", " 1234"}));  // case-sensitive
  EXPECT_EQ(split(PreTokenizerKind::Gpt2, "a\n\nb"), (Words{"a", "\n", "\n", "b"}));
}

TEST(PreTokenizerNames, MapLlamaCppNames) {
  EXPECT_EQ(find_pre_tokenizer("qwen2")->kind, PreTokenizerKind::Qwen2);
  EXPECT_EQ(find_pre_tokenizer("qwen35")->kind, PreTokenizerKind::Qwen35);
  const auto llama = find_pre_tokenizer("llama-bpe");
  ASSERT_TRUE(llama.has_value());
  EXPECT_EQ(llama->kind, PreTokenizerKind::Llama3);
  EXPECT_TRUE(llama->ignore_merges);
  EXPECT_TRUE(llama->add_bos);
  EXPECT_TRUE(llama->clean_spaces);
  EXPECT_FALSE(find_pre_tokenizer("qwen2")->clean_spaces);
  EXPECT_FALSE(find_pre_tokenizer("deepseek-llm").has_value());
  EXPECT_FALSE(find_pre_tokenizer("").has_value());
}

}  // namespace
}  // namespace cellserve::engine::tokenizer
