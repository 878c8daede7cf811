#include "base/status.h"

#include <gtest/gtest.h>

namespace cellserve {
namespace {

Result<int> parse_positive(int v) {
  if (v <= 0) return Status::invalid_argument("not positive: " + std::to_string(v));
  return v;
}

Status twice(int v, int* out) {
  CS_ASSIGN_OR_RETURN(int x, parse_positive(v));
  *out = 2 * x;
  return {};
}

TEST(Status, OkByDefault) {
  Status s;
  EXPECT_TRUE(s.ok());
  EXPECT_EQ(s.to_string(), "OK");
}

TEST(Status, CarriesCodeMessageAndContext) {
  Status s = Status::data_loss("bad magic").with_context("model.gguf");
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::DataLoss);
  EXPECT_EQ(s.message(), "model.gguf: bad magic");
  EXPECT_EQ(s.to_string(), "data_loss: model.gguf: bad magic");
}

TEST(Status, NamesTheRequestFieldAndTheApiCode) {
  const Status s = Status::invalid_param("messages[1].content", "'content' is required");
  EXPECT_EQ(s.code(), StatusCode::InvalidArgument);
  EXPECT_EQ(s.param(), "messages[1].content");
  EXPECT_EQ(s.api_code(), "");
  const Status coded = s.with_api_code("context_length_exceeded").with_param("input").with_context("chat");
  EXPECT_EQ(coded.param(), "input");
  EXPECT_EQ(coded.api_code(), "context_length_exceeded");
  EXPECT_EQ(coded.message(), "chat: 'content' is required");
  EXPECT_EQ(coded.to_string(), "invalid_argument: chat: 'content' is required");
  // An OK status names nothing: there is no failure to describe.
  const Status ok = Status().with_param("x").with_api_code("y");
  EXPECT_TRUE(ok.ok());
  EXPECT_EQ(ok.param(), "");
  EXPECT_EQ(ok.api_code(), "");
  const Result<int> r = Status::invalid_param("n", "bad");
  EXPECT_EQ(r.status().param(), "n");
}

TEST(Status, MapsToHttpStatuses) {
  EXPECT_EQ(http_status(StatusCode::InvalidArgument), 400);
  EXPECT_EQ(http_status(StatusCode::Unauthenticated), 401);
  EXPECT_EQ(http_status(StatusCode::NotFound), 404);
  EXPECT_EQ(http_status(StatusCode::ResourceExhausted), 429);
  EXPECT_EQ(http_status(StatusCode::Unavailable), 503);
  EXPECT_EQ(http_status(StatusCode::Internal), 500);
}

TEST(Result, HoldsValueOrStatus) {
  int out = 0;
  EXPECT_TRUE(twice(4, &out).ok());
  EXPECT_EQ(out, 8);
  Status s = twice(-1, &out);
  EXPECT_EQ(s.code(), StatusCode::InvalidArgument);
  EXPECT_EQ(s.message(), "not positive: -1");
  auto r = parse_positive(3);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, 3);
  EXPECT_TRUE(r.status().ok());
}

}  // namespace
}  // namespace cellserve
