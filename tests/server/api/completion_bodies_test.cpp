// Response JSON: whole completions, stream chunks, logprobs objects, usage, UTF-8 sanitising.
#include "server/api/completion_bodies.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

namespace cellserve::server {
namespace {

namespace json = boost::json;

ResponseMeta meta() { return ResponseMeta{"chatcmpl-abc", 1700000000, "tiny"}; }

GeneratedToken token(std::string text, float lp, std::vector<TokenLogprob> top = {}) {
  GeneratedToken t;
  t.chosen = TokenLogprob{1, std::move(text), lp};
  t.top = std::move(top);
  return t;
}

TEST(Utf8, SanitizeReplacesIllFormedSequences) {
  EXPECT_EQ(sanitize_utf8("plain"), "plain");
  EXPECT_EQ(sanitize_utf8("h\xC3\xA9llo \xE2\x82\xAC \xF0\x9F\x98\x80"), "h\xC3\xA9llo \xE2\x82\xAC \xF0\x9F\x98\x80");
  // A truncated 3-byte sequence is one U+FFFD (its maximal subpart).
  EXPECT_EQ(sanitize_utf8("a\xE2\x82"), "a\xEF\xBF\xBD");
  // A lone continuation byte, an overlong lead, a surrogate and a code point past U+10FFFF.
  EXPECT_EQ(sanitize_utf8("\x80"), "\xEF\xBF\xBD");
  EXPECT_EQ(sanitize_utf8("\xC0\xAF"), "\xEF\xBF\xBD\xEF\xBF\xBD");
  EXPECT_EQ(sanitize_utf8("\xED\xA0\x80"), "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");
  EXPECT_EQ(sanitize_utf8("\xF4\x90\x80\x80"), "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");
  // The first byte of a 4-byte emoji, then ASCII.
  EXPECT_EQ(sanitize_utf8("\xF0\x9F"
                          "x"),
            "\xEF\xBF\xBDx");
  EXPECT_TRUE(is_valid_utf8("h\xC3\xA9"));
  EXPECT_FALSE(is_valid_utf8("\xC3"));
}

TEST(Ids, HaveThePrefixAndAreUnique) {
  const std::string a = make_response_id("chatcmpl-"), b = make_response_id("chatcmpl-");
  EXPECT_EQ(a.rfind("chatcmpl-", 0), 0u);
  EXPECT_EQ(a.size(), 9u + 24u);
  EXPECT_NE(a, b);
}

TEST(Usage, HasTotalsAndCachedTokens) {
  Usage u{10, 5, 3};
  EXPECT_EQ(json::serialize(usage_json(u)), R"({"prompt_tokens":10,"completion_tokens":5,"total_tokens":15,)"
                                            R"("prompt_tokens_details":{"cached_tokens":3}})");
}

TEST(ChatLogprobs, TokenTextIsSanitizedAndBytesAreRaw) {
  std::vector<GeneratedToken> tokens = {token("\xE2\x82", -0.5f, {{1, "\xE2\x82", -0.5f}, {2, "b", -1.0f}}),
                                        token("x", -std::numeric_limits<float>::infinity())};
  const json::object lp = chat_logprobs_json(tokens);
  EXPECT_EQ(json::serialize(lp),
            "{\"content\":[{\"token\":\"\xEF\xBF\xBD\",\"logprob\":-5E-1,\"bytes\":[226,130],\"top_logprobs\":["
            "{\"token\":\"\xEF\xBF\xBD\",\"logprob\":-5E-1,\"bytes\":[226,130]},"
            R"({"token":"b","logprob":-1E0,"bytes":[98]}]},)"
            R"({"token":"x","logprob":-9.999E3,"bytes":[120],"top_logprobs":[]}]})");
}

TEST(LlamaProbabilities, CarryIdsTokensBytesAndTheAlternatives) {
  std::vector<GeneratedToken> tokens = {token("\xE2\x82", -0.5f, {{1, "\xE2\x82", -0.5f}, {2, "b", -1.0f}})};
  EXPECT_EQ(json::serialize(llama_probabilities_json(tokens)),
            "[{\"id\":1,\"token\":\"\xEF\xBF\xBD\",\"bytes\":[226,130],\"logprob\":-5E-1,\"top_logprobs\":["
            "{\"id\":1,\"token\":\"\xEF\xBF\xBD\",\"bytes\":[226,130],\"logprob\":-5E-1},"
            R"({"id":2,"token":"b","bytes":[98],"logprob":-1E0}]}])");
}

TEST(LegacyLogprobs, OffsetsContinueAcrossCalls) {
  std::vector<GeneratedToken> first = {token("Hello", -0.1f, {{1, "Hello", -0.1f}, {2, "Hi", -2.5f}})};
  std::vector<GeneratedToken> second = {token(" world", -0.25f)};
  int64_t offset = 3;  // after an echoed prompt of 3 bytes
  const json::object a = legacy_logprobs_json(first, &offset);
  const json::object b = legacy_logprobs_json(second, &offset);
  EXPECT_EQ(a.at("tokens").as_array(), (json::array{"Hello"}));
  EXPECT_DOUBLE_EQ(a.at("token_logprobs").as_array()[0].as_double(), static_cast<double>(-0.1f));
  EXPECT_EQ(a.at("top_logprobs").as_array()[0].as_object().size(), 2u);
  EXPECT_EQ(a.at("text_offset").as_array(), (json::array{3}));
  EXPECT_EQ(b.at("text_offset").as_array(), (json::array{8}));
  EXPECT_EQ(offset, 14);
}

TEST(ChatCompletionBody, Shape) {
  const json::value v =
      json::parse(chat_completion_body(meta(), plain_message("Hi\xF0"), "length", nullptr, {7, 2, 0}));
  const json::object& o = v.as_object();
  EXPECT_EQ(o.at("id"), "chatcmpl-abc");
  EXPECT_EQ(o.at("object"), "chat.completion");
  EXPECT_EQ(o.at("created"), 1700000000);
  EXPECT_EQ(o.at("model"), "tiny");
  EXPECT_EQ(o.at("system_fingerprint"), "cellserve");
  const json::object& choice = o.at("choices").as_array().at(0).as_object();
  EXPECT_EQ(choice.at("index"), 0);
  EXPECT_EQ(json::serialize(choice.at("message")), "{\"role\":\"assistant\",\"content\":\"Hi\xEF\xBF\xBD\"}");
  EXPECT_TRUE(choice.at("logprobs").is_null());
  EXPECT_EQ(choice.at("finish_reason"), "length");
  EXPECT_EQ(o.at("usage").at("total_tokens"), 9);
}

TEST(TextCompletionBody, Shape) {
  json::value lp = json::object{{"tokens", json::array{}}};
  const json::value v = json::parse(text_completion_body(meta(), "abc", FinishReason::Stop, lp, {1, 1, 0}));
  EXPECT_EQ(v.at("object"), "text_completion");
  const json::object& choice = v.at("choices").as_array().at(0).as_object();
  EXPECT_EQ(choice.at("text"), "abc");
  EXPECT_EQ(choice.at("finish_reason"), "stop");
  EXPECT_TRUE(choice.at("logprobs").is_object());
}

TEST(Chunks, ChatChunkCarriesUsageNullOnlyWhenAsked) {
  json::object with = chat_chunk(meta(), json::object{{"content", "x"}}, nullptr, nullptr, true);
  json::object without = chat_chunk(meta(), json::object{{"content", "x"}}, nullptr, nullptr, false);
  EXPECT_EQ(with.at("object"), "chat.completion.chunk");
  EXPECT_TRUE(with.at("usage").is_null());
  EXPECT_FALSE(without.contains("usage"));
  EXPECT_EQ(json::serialize(without.at("choices")),
            R"([{"index":0,"delta":{"content":"x"},"logprobs":null,"finish_reason":null}])");
}

TEST(Chunks, UsageChunkHasNoChoices) {
  json::object u = usage_chunk(meta(), "chat.completion.chunk", {4, 2, 1});
  EXPECT_TRUE(u.at("choices").as_array().empty());
  EXPECT_EQ(u.at("usage").at("total_tokens"), 6);
}

TEST(Chunks, TextCompletionChunkAndSse) {
  json::object c = text_completion_chunk(meta(), "tok", nullptr, "stop", false);
  EXPECT_EQ(json::serialize(c.at("choices")), R"([{"text":"tok","index":0,"logprobs":null,"finish_reason":"stop"}])");
  EXPECT_EQ(sse_data(json::object{{"a", 1}}), "data: {\"a\":1}\n\n");
  EXPECT_EQ(kSseDone, "data: [DONE]\n\n");
}

}  // namespace
}  // namespace cellserve::server
