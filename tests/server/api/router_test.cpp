// serve's router without a model: authentication (long keys in either header), metrics labels
// from route patterns only (unknown paths make no new series, quotes cannot inject lines), and
// HEAD on GET routes.
#include "server/router.h"

#include <gtest/gtest.h>

#include <string>

#include "server/metrics.h"
#include "tests/support/fake_response_writer.h"

namespace cellserve::server {
namespace {

net::HttpRequest request(std::string method, std::string path) {
  net::HttpRequest r;
  r.method = std::move(method);
  r.path = std::move(path);
  return r;
}

class RouterTest : public ::testing::Test {
 protected:
  void make(std::string key) {
    router_ = std::make_unique<Router>(RouterOptions{std::move(key)});
    api_.metrics = &metrics_;
    router_->set_ready(&api_, boost::json::object{{"ok", true}});
  }
  int status(const net::HttpRequest& r) {
    cellserve::testing::FakeResponseWriter w;
    router_->handle(r, w);
    return w.status;
  }

  Metrics metrics_;
  ApiContext api_;
  std::unique_ptr<Router> router_;
};

// The regression for a string_view into a temporary: a correct x-api-key of 16 or more
// characters always got 401.
TEST_F(RouterTest, LongKeysAreAcceptedInEitherHeader) {
  const std::string key(40, 'z');
  make(key);
  net::HttpRequest r = request("GET", "/props");
  EXPECT_EQ(status(r), 401);
  r.headers["x-api-key"] = key;
  EXPECT_EQ(status(r), 200);
  r.headers.erase("x-api-key");
  r.headers["authorization"] = "Bearer " + key;
  EXPECT_EQ(status(r), 200);
  r.headers["authorization"] = "Bearer " + key + "!";
  EXPECT_EQ(status(r), 401);
}

// The regression for the metrics blow-up: 2,000 unknown paths (with or without a key, some with
// a '"' that used to end the label and inject lines) add no series and no lines.
TEST_F(RouterTest, UnknownPathsShareOneSeriesAndCannotInjectLines) {
  make("k");
  for (int i = 0; i < 1000; ++i) {
    status(request("GET", "/x" + std::to_string(i) + "\"} 1\ninjected_metric{a=\"b"));
    net::HttpRequest r = request("GET", "/y" + std::to_string(i));
    r.headers["authorization"] = "Bearer k";
    EXPECT_EQ(status(r), 404);
  }
  const std::string text = metrics_.prometheus_text();
  EXPECT_EQ(text.find("injected_metric"), std::string::npos);
  EXPECT_EQ(text.find("/x1"), std::string::npos);
  EXPECT_EQ(text.find("/y1"), std::string::npos);
  EXPECT_NE(text.find("cellserve_requests_total{endpoint=\"unmatched\",status=\"401\"} 1000"), std::string::npos);
  EXPECT_NE(text.find("cellserve_requests_total{endpoint=\"unmatched\",status=\"404\"} 1000"), std::string::npos);
  EXPECT_LT(text.size(), 4096u);
}

TEST_F(RouterTest, HeadOnGetRoutesIsAnsweredAndWrongMethodsAre405) {
  make("");
  EXPECT_EQ(status(request("HEAD", "/props")), 200);
  EXPECT_EQ(status(request("HEAD", "/health")), 200);
  EXPECT_EQ(status(request("DELETE", "/v1/models")), 405);
}

TEST_F(RouterTest, ApplyTemplateIsRoutedAndNeedsTheKey) {
  make("k");
  net::HttpRequest r = request("POST", "/apply-template");
  r.body = R"({"messages":[{"role":"user","content":"hi"}]})";
  EXPECT_EQ(status(r), 401);
  r.headers["authorization"] = "Bearer k";
  // This context has no template: the handler's 400, not the router's 404.
  cellserve::testing::FakeResponseWriter w;
  router_->handle(r, w);
  EXPECT_EQ(w.status, 400);
  EXPECT_NE(w.body.find("no chat template"), std::string::npos) << w.body;
  r.method = "GET";
  EXPECT_EQ(status(r), 405);
}

TEST_F(RouterTest, LlamaServerRoutesAreRoutedAndNeedTheKey) {
  make("k");
  net::HttpRequest completion = request("POST", "/completion");
  completion.body = R"({"prompt":"hi"})";
  net::HttpRequest slots = request("GET", "/slots");
  EXPECT_EQ(status(completion), 401);
  EXPECT_EQ(status(slots), 401);
  completion.headers["authorization"] = "Bearer k";
  slots.headers["authorization"] = "Bearer k";
  // No model in this context: the handlers' 503, not the router's 404.
  EXPECT_EQ(status(completion), 503);
  EXPECT_EQ(status(slots), 503);
  slots.method = "POST";
  EXPECT_EQ(status(slots), 405);
}

TEST(MetricsTest, LabelValuesAreEscaped) {
  EXPECT_EQ(prometheus_label_value("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
  Metrics m;
  m.count_request("say \"hi\"\nx", 200);
  EXPECT_NE(m.prometheus_text().find("endpoint=\"say \\\"hi\\\"\\nx\""), std::string::npos);
}

}  // namespace
}  // namespace cellserve::server
