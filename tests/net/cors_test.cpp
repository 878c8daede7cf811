// The CORS policy: off by default, listed origins and "*", same-origin requests, and the flag's
// list syntax.
#include "net/cors.h"

#include <gtest/gtest.h>

namespace cellserve::net {
namespace {

HttpRequest from(const std::string& origin, const std::string& host = "hub.example:8090") {
  HttpRequest r;
  if (!origin.empty()) r.headers["origin"] = origin;
  r.headers["host"] = host;
  return r;
}

TEST(CorsTest, OffByDefault) {
  const CorsPolicy none;
  EXPECT_FALSE(cors_decision(none, from("")).refused);
  EXPECT_TRUE(cors_decision(none, from("https://evil.example")).refused);
  EXPECT_TRUE(cors_decision(none, from("null")).refused);
  EXPECT_FALSE(cors_decision(none, from("https://hub.example:8090")).refused);
  EXPECT_TRUE(cors_decision(none, from("https://hub.example:8091")).refused);
}

TEST(CorsTest, ListedOriginsAndStar) {
  const CorsPolicy some{{"https://app.example"}};
  EXPECT_EQ(cors_decision(some, from("https://app.example")).allow_origin, "https://app.example");
  EXPECT_TRUE(cors_decision(some, from("https://app.example.evil")).refused);
  const CorsPolicy any{{"*"}};
  EXPECT_EQ(cors_decision(any, from("https://whatever")).allow_origin, "*");
}

TEST(CorsTest, PreflightEchoesOnlyHeaderNames) {
  HttpRequest r;
  r.headers["access-control-request-headers"] = "authorization, x-stainless-lang";
  EXPECT_EQ(cors_preflight_headers(r)[1].second, "authorization, x-stainless-lang");
  r.headers["access-control-request-headers"] = "x\r\ninjected: 1";
  EXPECT_EQ(cors_preflight_headers(r)[1].second, "Authorization, Content-Type, X-Api-Key");
}

TEST(CorsTest, SplitsTheFlag) {
  EXPECT_EQ(split_origins(" https://a , https://b,,"), (std::vector<std::string>{"https://a", "https://b"}));
  EXPECT_TRUE(split_origins("").empty());
}

}  // namespace
}  // namespace cellserve::net
