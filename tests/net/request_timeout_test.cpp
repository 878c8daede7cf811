// X-Request-Timeout: absent is no limit; a number of seconds in (0, 86400] is the limit; anything
// else is refused with a message that names the header.
#include "net/request_timeout.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

namespace cellserve::net {
namespace {

HttpRequest with_timeout(const std::string& value) {
  HttpRequest r;
  r.headers["x-request-timeout"] = value;
  return r;
}

TEST(RequestTimeout, AbsentMeansNone) {
  auto t = request_timeout(HttpRequest{});
  ASSERT_TRUE(t.ok());
  EXPECT_FALSE(t->has_value());
}

TEST(RequestTimeout, ReadsSecondsWithFractions) {
  for (const auto& [text, seconds] : std::vector<std::pair<std::string, double>>{
           {"1", 1}, {"0.25", 0.25}, {"86400", 86400}, {"1e2", 100}, {"0.001", 0.001}}) {
    auto t = request_timeout(with_timeout(text));
    ASSERT_TRUE(t.ok()) << text << ": " << t.status().to_string();
    ASSERT_TRUE(t->has_value()) << text;
    EXPECT_DOUBLE_EQ((*t)->count(), seconds) << text;
  }
}

TEST(RequestTimeout, RefusesAnythingElseNamingTheHeader) {
  const std::vector<std::string> refused = {"",
                                            "0",
                                            "-1",
                                            "86400.5",
                                            "1e9",
                                            "soon",
                                            "1s",
                                            " 1",
                                            "+1",
                                            "nan",
                                            "inf",
                                            "0x10",
                                            "1,5",
                                            std::string("1\0", 2),
                                            std::string(200, '9')};
  for (const std::string& text : refused) {
    auto t = request_timeout(with_timeout(text));
    ASSERT_FALSE(t.ok()) << "'" << text << "' was accepted";
    EXPECT_EQ(t.status().code(), StatusCode::InvalidArgument);
    EXPECT_NE(t.status().message().find("X-Request-Timeout"), std::string::npos) << t.status().message();
    EXPECT_LT(t.status().message().size(), 120u) << "the value is quoted short";
  }
}

TEST(RequestTimeout, QuotesOnlyPrintableBytes) {
  auto t = request_timeout(with_timeout("\x01\xff"));
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("'"
                                      "??"
                                      "'"),
            std::string::npos)
      << t.status().message();
}

}  // namespace
}  // namespace cellserve::net
