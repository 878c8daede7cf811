#include "fleet/hub/dashboard_assets.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "net/route_table.h"
#include "tests/support/fake_response_writer.h"

namespace cellserve::fleet {
namespace {

using cellserve::testing::FakeResponseWriter;

// The file as committed in web/, to compare with what the binary holds.
std::string source_file(const std::string& rel) {
  std::ifstream in(std::string(CELLSERVE_SOURCE_DIR) + "/web/" + rel, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

FakeResponseWriter get(const std::string& path, const std::string& if_none_match = "",
                       const std::string& method = "GET") {
  net::RouteTable routes;
  add_dashboard_routes(routes);
  net::HttpRequest req;
  req.method = method;
  req.path = path;
  if (!if_none_match.empty()) req.headers["if-none-match"] = if_none_match;
  FakeResponseWriter w;
  routes.dispatch(req, w);
  return w;
}

TEST(DashboardAssets, HoldsTheCommittedFilesByteForByte) {
  for (const char* rel : {"index.html", "app.js", "lib.js", "style.css", "pages/fleet.js", "pages/deployments.js",
                          "vendor/preact.module.js", "vendor/uPlot.esm.js", "vendor/preact.LICENSE"}) {
    const std::optional<DashboardAsset> asset = find_dashboard_asset(rel);
    ASSERT_TRUE(asset) << rel;
    EXPECT_EQ(asset->bytes, source_file(rel)) << rel;
    EXPECT_EQ(asset->etag.front(), '"');
    EXPECT_EQ(asset->etag.back(), '"');
  }
}

TEST(DashboardAssets, LeavesOutTheVendoringTools) {
  EXPECT_FALSE(find_dashboard_asset("vendor.sh"));
  EXPECT_FALSE(find_dashboard_asset("package.json"));
  EXPECT_FALSE(find_dashboard_asset("/index.html"));
  EXPECT_FALSE(find_dashboard_asset("../CMakeLists.txt"));
}

TEST(DashboardAssets, ContentTypeByExtension) {
  EXPECT_EQ(dashboard_content_type("index.html"), "text/html; charset=utf-8");
  EXPECT_EQ(dashboard_content_type("pages/fleet.js"), "text/javascript; charset=utf-8");
  EXPECT_EQ(dashboard_content_type("vendor/uPlot.min.css"), "text/css; charset=utf-8");
  EXPECT_EQ(dashboard_content_type("vendor/htm.LICENSE"), "text/plain; charset=utf-8");
  EXPECT_EQ(dashboard_content_type("blob"), "application/octet-stream");
}

TEST(DashboardRoutes, ServesIndexAtTheFolderWithASecurityPolicy) {
  const FakeResponseWriter w = get("/ui/");
  EXPECT_EQ(w.status, 200);
  EXPECT_EQ(w.content_type, "text/html; charset=utf-8");
  EXPECT_EQ(w.body, source_file("index.html"));
  EXPECT_EQ(w.header("Content-Security-Policy"), "default-src 'self'; img-src 'self' data:; style-src 'self'");
  EXPECT_EQ(w.header("X-Content-Type-Options"), "nosniff");
  EXPECT_EQ(w.header("Cache-Control"), "no-cache");
  EXPECT_EQ(w.header("ETag"), find_dashboard_asset("index.html")->etag);
}

TEST(DashboardRoutes, ServesNestedFilesWithTheirType) {
  const FakeResponseWriter w = get("/ui/pages/fleet.js");
  EXPECT_EQ(w.status, 200);
  EXPECT_EQ(w.content_type, "text/javascript; charset=utf-8");
  EXPECT_EQ(w.body, source_file("pages/fleet.js"));
  EXPECT_EQ(get("/ui/vendor/uPlot.min.css").content_type, "text/css; charset=utf-8");
}

TEST(DashboardRoutes, HeadAnswersLikeGet) {
  const FakeResponseWriter w = get("/ui/app.js", "", "HEAD");
  EXPECT_EQ(w.status, 200);
  EXPECT_EQ(w.header("ETag"), find_dashboard_asset("app.js")->etag);
}

TEST(DashboardRoutes, UnknownFileIs404Json) {
  for (const char* path : {"/ui/nope.js", "/ui/../CMakeLists.txt", "/ui/vendor.sh", "/ui/pages/"}) {
    const FakeResponseWriter w = get(path);
    EXPECT_EQ(w.status, 404) << path;
    EXPECT_EQ(w.content_type, "application/json") << path;
    EXPECT_TRUE(w.json_body().as_object().contains("error")) << path;
  }
}

TEST(DashboardRoutes, MatchingETagIs304WithoutBody) {
  const std::string etag(find_dashboard_asset("app.js")->etag);
  FakeResponseWriter w = get("/ui/app.js", etag);
  EXPECT_EQ(w.status, 304);
  EXPECT_EQ(w.header("ETag"), etag);
  EXPECT_EQ(get("/ui/app.js", "\"other\", W/" + etag).status, 304);
  EXPECT_EQ(get("/ui/app.js", "\"other\"").status, 200);
}

TEST(DashboardRoutes, RedirectsToTheFolder) {
  FakeResponseWriter w = get("/ui");
  EXPECT_EQ(w.status, 301);
  EXPECT_EQ(w.header("Location"), "/ui/");
  w = get("/");
  EXPECT_EQ(w.status, 302);
  EXPECT_EQ(w.header("Location"), "/ui/");
}

TEST(DashboardRoutes, OnlyGetAndHead) {
  net::RouteTable routes;
  add_dashboard_routes(routes);
  FakeResponseWriter w;
  routes.dispatch(cellserve::testing::post("/ui/app.js", "x"), w);
  EXPECT_EQ(w.status, 405);
}

}  // namespace
}  // namespace cellserve::fleet
