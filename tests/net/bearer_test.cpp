// API keys on requests: Bearer and x-api-key, constant-time comparison, and keys of any length.
#include "net/bearer.h"

#include <gtest/gtest.h>

#include <string>

namespace cellserve::net {
namespace {

HttpRequest with_header(const std::string& name, const std::string& value) {
  HttpRequest r;
  r.headers[name] = value;
  return r;
}

TEST(BearerTest, ConstantTimeEqualComparesWholeKeys) {
  EXPECT_TRUE(constant_time_equal("abc", "abc"));
  EXPECT_FALSE(constant_time_equal("abd", "abc"));
  EXPECT_FALSE(constant_time_equal("ab", "abc"));
  EXPECT_FALSE(constant_time_equal("abcd", "abc"));
  EXPECT_FALSE(constant_time_equal("", "abc"));
}

TEST(BearerTest, ReadsBearerThenXApiKey) {
  EXPECT_EQ(request_api_key(with_header("authorization", "Bearer k1")), "k1");
  EXPECT_EQ(request_api_key(with_header("x-api-key", "k2")), "k2");
  EXPECT_EQ(request_api_key(with_header("authorization", "Basic zzz")), "");
  EXPECT_EQ(request_api_key(HttpRequest{}), "");
}

// The regression for a string_view into a temporary header string: keys of 16 characters and
// more (past the small-string buffer) were read from freed memory and always refused.
TEST(BearerTest, LongKeysInEitherHeaderAreAccepted) {
  const std::string key(64, 'k');
  EXPECT_TRUE(has_api_key(with_header("x-api-key", key), key));
  EXPECT_TRUE(has_api_key(with_header("authorization", "Bearer " + key), key));
  EXPECT_FALSE(has_api_key(with_header("x-api-key", key + "x"), key));
  EXPECT_FALSE(has_api_key(HttpRequest{}, key));
}

}  // namespace
}  // namespace cellserve::net
