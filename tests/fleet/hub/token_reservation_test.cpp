// What a request holds of its API key's daily tokens (issue 43 item 7): at most n slots' context,
// within that the body's bytes plus its max_tokens, or the whole context when it sets none.
#include "fleet/hub/token_reservation.h"

#include <gtest/gtest.h>

#include <string>

namespace cellserve::fleet {
namespace {

TEST(TokenReservation, ThePromptsBytesPlusMaxTokens) {
  const std::string body = R"({"messages":[{"role":"user","content":"hi"}],"max_tokens":16})";
  EXPECT_EQ(token_reservation(body, "/chat/completions", 4096), static_cast<int64_t>(body.size()) + 16);
  const std::string newer = R"({"messages":[],"max_completion_tokens":7,"max_tokens":9000})";
  EXPECT_EQ(token_reservation(newer, "/chat/completions", 4096), static_cast<int64_t>(newer.size()) + 7)
      << "max_completion_tokens is read first, as the replica does";
  const std::string responses = R"({"input":"hi","max_output_tokens":3})";
  EXPECT_EQ(token_reservation(responses, "/responses", 0), static_cast<int64_t>(responses.size()) + 3);
}

TEST(TokenReservation, WithoutMaxTokensTheWholeContext) {
  EXPECT_EQ(token_reservation(R"({"prompt":"hi"})", "/completions", 1000), 1000);
  EXPECT_EQ(token_reservation(R"({"prompt":"hi"})", "/completions", 0), kDefaultSlotContext);
  EXPECT_EQ(token_reservation(R"({"prompt":"hi","n_predict":-1})", "/completions", 500), 500);
  EXPECT_EQ(token_reservation(R"({"prompt":"hi","max_tokens":1e300})", "/completions", 500), 500);
  EXPECT_EQ(token_reservation(R"({"prompt":"hi","max_tokens":"many"})", "/completions", 500), 500);
  EXPECT_EQ(token_reservation("not json", "/completions", 500), 500);
}

TEST(TokenReservation, ChoicesMultiplyAndEachIsBoundedByAContext) {
  const std::string body = R"({"prompt":"hi","max_tokens":100,"n":4})";
  EXPECT_EQ(token_reservation(body, "/completions", 4096), 4 * (static_cast<int64_t>(body.size()) + 100));
  EXPECT_EQ(token_reservation(R"({"prompt":"hi","max_tokens":100,"n":1000})", "/completions", 50), 16 * 50)
      << "n is bounded as the replica bounds it, each choice by its slot's context";
  const std::string huge = R"({"prompt":")" + std::string(100000, 'x') + R"(","max_tokens":10})";
  EXPECT_EQ(token_reservation(huge, "/completions", 2048), 2048);
}

TEST(TokenReservation, EmbeddingsHoldTheirBytes) {
  const std::string body = R"({"input":["a","b","c"]})";
  EXPECT_EQ(token_reservation(body, "/embeddings", 4096), static_cast<int64_t>(body.size()));
}

}  // namespace
}  // namespace cellserve::fleet
