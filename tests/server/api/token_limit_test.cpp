// The one reading of a request's completion limit (server/api/token_limit.h): each endpoint's
// fields, which one wins, and the failures that name the field as the client sent it.
#include "server/api/token_limit.h"

#include <gtest/gtest.h>

#include <boost/json/parse.hpp>

namespace cellserve::server {
namespace {

namespace json = boost::json;

Result<TokenLimit> limit_of(const std::string& body, TokenLimitFields fields) {
  return read_token_limit(json::parse(body).as_object(), fields);
}

std::optional<int64_t> tokens(const std::string& body, TokenLimitFields fields) {
  const Result<TokenLimit> r = limit_of(body, fields);
  EXPECT_TRUE(r.ok()) << body << ": " << r.status().to_string();
  return r.ok() ? r->tokens : std::nullopt;
}

TEST(TokenLimit, EndpointsPickTheirFields) {
  EXPECT_EQ(token_limit_fields("/v1/chat/completions"), TokenLimitFields::Chat);
  EXPECT_EQ(token_limit_fields("/completions"), TokenLimitFields::Chat);
  EXPECT_EQ(token_limit_fields("/v1/responses"), TokenLimitFields::Responses);
  EXPECT_EQ(token_limit_fields("/responses"), TokenLimitFields::Responses);
  EXPECT_EQ(token_limit_fields("/completion"), TokenLimitFields::Llama);
  EXPECT_EQ(token_limit_fields("/v1/embeddings"), TokenLimitFields::None);
  EXPECT_EQ(token_limit_fields("/tokenize"), TokenLimitFields::None);
  EXPECT_EQ(token_limit_fields("/v1/completion"), TokenLimitFields::None);  // not a route of the replica
}

TEST(TokenLimit, OtherEndpointsReadNothing) {
  EXPECT_EQ(tokens(R"({"max_tokens":"x","max_completion_tokens":0,"n_predict":[]})", TokenLimitFields::None),
            std::nullopt);
}

TEST(TokenLimit, NoneOrNullIsNotSet) {
  for (auto fields : {TokenLimitFields::Chat, TokenLimitFields::Responses, TokenLimitFields::Llama}) {
    EXPECT_EQ(tokens("{}", fields), std::nullopt);
    EXPECT_EQ(
        tokens(R"({"max_tokens":null,"max_completion_tokens":null,"max_output_tokens":null,"n_predict":null})", fields),
        std::nullopt);
  }
}

TEST(TokenLimit, ChatReadsMaxTokensAndTheNewerNameWins) {
  EXPECT_EQ(tokens(R"({"max_tokens":9})", TokenLimitFields::Chat), 9);
  EXPECT_EQ(tokens(R"({"max_completion_tokens":4})", TokenLimitFields::Chat), 4);
  EXPECT_EQ(tokens(R"({"max_completion_tokens":4,"max_tokens":9})", TokenLimitFields::Chat), 4);
  EXPECT_EQ(tokens(R"({"max_tokens":9,"max_completion_tokens":null})", TokenLimitFields::Chat), 9);
  EXPECT_EQ(tokens(R"({"max_tokens":16.0})", TokenLimitFields::Chat), 16);  // an integral double
  // Fields of other endpoints are not read, whatever they hold.
  EXPECT_EQ(tokens(R"({"max_tokens":9,"n_predict":"x","max_output_tokens":[]})", TokenLimitFields::Chat), 9);
}

TEST(TokenLimit, ResponsesReadsOnlyMaxOutputTokens) {
  EXPECT_EQ(tokens(R"({"max_output_tokens":3,"max_tokens":9})", TokenLimitFields::Responses), 3);
  EXPECT_EQ(tokens(R"({"max_tokens":9,"max_completion_tokens":"x"})", TokenLimitFields::Responses), std::nullopt);
}

TEST(TokenLimit, LlamaNPredictWinsAndMinusOneMeansUntilTheEnd) {
  EXPECT_EQ(tokens(R"({"max_tokens":9})", TokenLimitFields::Llama), 9);
  EXPECT_EQ(tokens(R"({"max_tokens":9,"max_completion_tokens":4,"n_predict":7})", TokenLimitFields::Llama), 7);
  const Result<TokenLimit> until_end = limit_of(R"({"max_tokens":9,"n_predict":-1})", TokenLimitFields::Llama);
  ASSERT_TRUE(until_end.ok());
  EXPECT_TRUE(until_end->until_end);
  EXPECT_EQ(until_end->tokens, std::nullopt);
  EXPECT_FALSE(limit_of(R"({"n_predict":5})", TokenLimitFields::Llama)->until_end);
}

// Each failure as the replica has always answered it: the field, and the words of read_int().
void expect_refused(const std::string& body, TokenLimitFields fields, const std::string& param,
                    const std::string& message) {
  const Result<TokenLimit> r = limit_of(body, fields);
  ASSERT_FALSE(r.ok()) << body;
  EXPECT_EQ(r.status().code(), StatusCode::InvalidArgument);
  EXPECT_EQ(r.status().param(), param) << body;
  EXPECT_EQ(r.status().message(), message) << body;
}

TEST(TokenLimit, WrongValuesNameTheField) {
  expect_refused(R"({"max_tokens":"many"})", TokenLimitFields::Chat, "max_tokens",
                 "'max_tokens' must be an integer, got a string");
  // Both names are checked, not only the one that wins.
  expect_refused(R"({"max_tokens":2.5,"max_completion_tokens":4})", TokenLimitFields::Chat, "max_tokens",
                 "'max_tokens' must be an integer, got a number");
  expect_refused(R"({"max_completion_tokens":0})", TokenLimitFields::Chat, "max_completion_tokens",
                 "'max_completion_tokens' must be between 1 and 9223372036854775807, got 0");
  // The replica checks max_output_tokens as the chat field it becomes; the failure names the
  // Responses field.
  expect_refused(R"({"max_output_tokens":true})", TokenLimitFields::Responses, "max_output_tokens",
                 "'max_completion_tokens' must be an integer, got a boolean");
  expect_refused(R"({"max_tokens":5,"n_predict":0})", TokenLimitFields::Llama, "n_predict",
                 "'n_predict' must be -1 (until the end) or at least 1, got 0");
  expect_refused(R"({"n_predict":-2})", TokenLimitFields::Llama, "n_predict",
                 "'n_predict' must be between -1 and 9223372036854775807, got -2");
}

}  // namespace
}  // namespace cellserve::server
