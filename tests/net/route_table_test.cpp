// The route table: literal, capture and rest segments, 404 / 405 with Allow, HEAD on GET routes,
// and paths of any length matched in one pass.
#include "net/route_table.h"

#include <gtest/gtest.h>

#include <string>

#include "tests/support/fake_response_writer.h"

namespace cellserve::net {
namespace {

using cellserve::testing::FakeResponseWriter;

HttpRequest request(std::string method, std::string path) {
  HttpRequest r;
  r.method = std::move(method);
  r.path = std::move(path);
  return r;
}

RouteHandler record(std::string* out) {
  return [out](const HttpRequest&, const PathParams& params, ResponseWriter& w) {
    *out = params.get("name") + "|" + params.get("index") + "|" + params.get("rest");
    w.send(200, "text/plain", "ok");
  };
}

TEST(RouteTableTest, MatchesLiteralsCapturesAndRest) {
  std::string seen;
  RouteTable t;
  t.add("GET", "/v1/models", record(&seen));
  t.add("GET", "/api/{name}", record(&seen));
  t.add("*", "/d/{name}/r/{index}/{rest...}", record(&seen));

  FakeResponseWriter w;
  EXPECT_EQ(t.dispatch(request("GET", "/v1/models"), w), "/v1/models");
  EXPECT_EQ(w.status, 200);
  EXPECT_EQ(t.dispatch(request("GET", "/api/risk"), w), "/api/{name}");
  EXPECT_EQ(seen, "risk||");
  EXPECT_EQ(t.dispatch(request("POST", "/d/risk/r/3/v1/chat/completions"), w), "/d/{name}/r/{index}/{rest...}");
  EXPECT_EQ(seen, "risk|3|/v1/chat/completions");
  t.dispatch(request("GET", "/d/risk/r/3"), w);
  EXPECT_EQ(seen, "risk|3|");
  t.dispatch(request("GET", "/d/risk/r/3/"), w);
  EXPECT_EQ(seen, "risk|3|/");
}

TEST(RouteTableTest, UnknownPathsAre404AndWrongMethods405WithAllow) {
  std::string seen;
  RouteTable t;
  t.add("GET", "/things", record(&seen));
  t.add("POST", "/things", record(&seen));
  t.add("DELETE", "/things/{name}", record(&seen));

  FakeResponseWriter w;
  EXPECT_EQ(t.dispatch(request("GET", "/nothing"), w), "");
  EXPECT_EQ(w.status, 404);
  EXPECT_NE(w.body.find("\"not_found_error\""), std::string::npos);

  FakeResponseWriter w2;
  EXPECT_EQ(t.dispatch(request("PUT", "/things"), w2), "");
  EXPECT_EQ(w2.status, 405);
  EXPECT_EQ(w2.header("Allow"), "GET, HEAD, POST");

  FakeResponseWriter w3;
  t.dispatch(request("GET", "/things/x"), w3);
  EXPECT_EQ(w3.status, 405);
  EXPECT_EQ(w3.header("Allow"), "DELETE");
}

TEST(RouteTableTest, HeadIsAnsweredByGetRoutes) {
  std::string seen;
  RouteTable t;
  t.add("GET", "/health", record(&seen));
  FakeResponseWriter w;
  EXPECT_EQ(t.dispatch(request("HEAD", "/health"), w), "/health");
  EXPECT_EQ(w.status, 200);
}

TEST(RouteTableTest, CapturesAreNeverEmptyAndExtraSegmentsDoNotMatch) {
  std::string seen;
  RouteTable t;
  t.add("GET", "/api/{name}", record(&seen));
  FakeResponseWriter w;
  t.dispatch(request("GET", "/api/"), w);
  EXPECT_EQ(w.status, 404);
  FakeResponseWriter w2;
  t.dispatch(request("GET", "/api/a/b"), w2);
  EXPECT_EQ(w2.status, 404);
  FakeResponseWriter w3;
  t.dispatch(request("GET", "api/a"), w3);
  EXPECT_EQ(w3.status, 404);
}

// The regression for a std::regex that overflowed the stack on a ~26,000-character path: the
// table walks segments, so a megabyte-long path is just a long string.
TEST(RouteTableTest, HugePathsMatchWithoutRecursion) {
  std::string seen;
  RouteTable t;
  t.add("*", "/d/{name}/r/{index}/{rest...}", record(&seen));
  FakeResponseWriter w;
  const std::string tail(1 << 20, 'a');
  t.dispatch(request("GET", "/d/a/r/0/" + tail), w);
  EXPECT_EQ(w.status, 200);
  EXPECT_EQ(seen.size(), std::string("a|0|/").size() + tail.size());
  FakeResponseWriter w2;
  t.dispatch(request("GET", "/" + std::string(1 << 20, '/')), w2);
  EXPECT_EQ(w2.status, 404);
}

TEST(RouteTableTest, MalformedPatternsAreRefused) {
  RouteTable t;
  RouteHandler h = [](const HttpRequest&, const PathParams&, ResponseWriter&) {};
  EXPECT_THROW(t.add("GET", "no-slash", h), std::invalid_argument);
  EXPECT_THROW(t.add("GET", "/a/{rest...}/b", h), std::invalid_argument);
  EXPECT_THROW(t.add("GET", "/a/{}", h), std::invalid_argument);
}

}  // namespace
}  // namespace cellserve::net
