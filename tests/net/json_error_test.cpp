// The one mapping of a failed Status to the error body a client sees (net/json_error.h).
#include "net/json_error.h"

#include <gtest/gtest.h>

namespace cellserve::net {
namespace {

TEST(ApiErrorFromStatus, CarriesParamAndCode) {
  const ApiError e =
      api_error_from_status(Status::invalid_param("messages", "too long").with_api_code("context_length_exceeded"));
  EXPECT_EQ(e.http_status, 400);
  EXPECT_EQ(error_body(e), R"({"error":{"message":"too long","type":"invalid_request_error","param":"messages",)"
                           R"("code":"context_length_exceeded"}})");
}

TEST(ApiErrorFromStatus, TypeFollowsTheStatusUnlessAFieldIsNamed) {
  EXPECT_EQ(error_body(api_error_from_status(Status::not_found("no such file"))),
            R"({"error":{"message":"no such file","type":"not_found_error","param":null,"code":null}})");
  // OpenAI's model_not_found: 404, but an invalid_request_error, as it names the field.
  const ApiError model =
      api_error_from_status(Status::not_found("no model").with_param("model").with_api_code("model_not_found"));
  EXPECT_EQ(model.http_status, 404);
  EXPECT_EQ(model.type, "invalid_request_error");
  EXPECT_EQ(api_error_from_status(Status::internal("x")).type, "server_error");
  EXPECT_EQ(api_error_from_status(Status::unavailable("x")).type, "unavailable_error");
  EXPECT_EQ(api_error_from_status(Status::resource_exhausted("x")).type, "rate_limit_error");
}

}  // namespace
}  // namespace cellserve::net
