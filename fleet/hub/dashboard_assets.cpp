#include "fleet/hub/dashboard_assets.h"

#include <array>
#include <string>
#include <utility>

#include "net/json_error.h"

namespace cellserve::fleet {

using net::HttpRequest;
using net::PathParams;
using net::ResponseWriter;

namespace {

// Scripts, styles and connections only from the hub itself: no inline script or style, nothing
// from another origin. uPlot sizes its canvases through element.style (a DOM property, which a
// CSP does not restrict); its data: images are the only exception needed.
constexpr std::string_view kContentSecurityPolicy = "default-src 'self'; img-src 'self' data:; style-src 'self'";

// True when the request's If-None-Match lists `etag` (or "*"), weak or strong.
bool etag_matches(const std::string& if_none_match, std::string_view etag) {
  size_t pos = 0;
  while (pos < if_none_match.size()) {
    size_t comma = if_none_match.find(',', pos);
    if (comma == std::string::npos) comma = if_none_match.size();
    std::string_view tag = std::string_view(if_none_match).substr(pos, comma - pos);
    while (!tag.empty() && tag.front() == ' ') tag.remove_prefix(1);
    while (!tag.empty() && tag.back() == ' ') tag.remove_suffix(1);
    if (tag.starts_with("W/")) tag.remove_prefix(2);
    if (tag == "*" || tag == etag) return true;
    pos = comma + 1;
  }
  return false;
}

void redirect(ResponseWriter& w, int status, std::string location) {
  w.send(status, "text/plain; charset=utf-8", "", {{"Location", std::move(location)}});
}

void serve_asset(const HttpRequest& req, std::string_view path, ResponseWriter& w) {
  const std::optional<DashboardAsset> asset = find_dashboard_asset(path);
  if (!asset) return net::send_error(w, 404, "no such file in the dashboard");
  const std::string etag(asset->etag);
  net::HeaderList headers{{"Content-Security-Policy", std::string(kContentSecurityPolicy)},
                          {"X-Content-Type-Options", "nosniff"},
                          {"Cache-Control", "no-cache"},
                          {"ETag", etag}};
  if (etag_matches(req.header("if-none-match"), etag)) return w.send(304, "", "", headers);
  w.send(200, asset->content_type, std::string(asset->bytes), headers);
}

}  // namespace

std::string_view dashboard_content_type(std::string_view path) {
  static constexpr std::array<std::pair<std::string_view, std::string_view>, 10> kTypes{{
      {".html", "text/html; charset=utf-8"},
      {".js", "text/javascript; charset=utf-8"},
      {".mjs", "text/javascript; charset=utf-8"},
      {".css", "text/css; charset=utf-8"},
      {".json", "application/json"},
      {".svg", "image/svg+xml"},
      {".png", "image/png"},
      {".ico", "image/x-icon"},
      {".txt", "text/plain; charset=utf-8"},
      {".LICENSE", "text/plain; charset=utf-8"},
  }};
  for (const auto& [extension, type] : kTypes) {
    if (path.ends_with(extension)) return type;
  }
  return "application/octet-stream";
}

std::optional<DashboardAsset> find_dashboard_asset(std::string_view path) {
  for (size_t i = 0; i < kEmbeddedDashboardFileCount; ++i) {
    const EmbeddedFile& file = kEmbeddedDashboardFiles[i];
    if (path == file.path) {
      return DashboardAsset{
          {reinterpret_cast<const char*>(file.data), file.size}, dashboard_content_type(path), file.etag};
    }
  }
  return std::nullopt;
}

void add_dashboard_routes(net::RouteTable& routes) {
  // "/" is not used otherwise: a browser pointed at the hub lands on its dashboard. 302, not 301,
  // so a later use of "/" is not hidden by browsers' caches.
  routes.add("GET", "/", [](const HttpRequest&, const PathParams&, ResponseWriter& w) { redirect(w, 302, "/ui/"); });
  routes.add("GET", "/ui", [](const HttpRequest&, const PathParams&, ResponseWriter& w) { redirect(w, 301, "/ui/"); });
  // {path...} is "/" for /ui/ and "/pages/fleet.js" for /ui/pages/fleet.js.
  routes.add("GET", "/ui/{path...}", [](const HttpRequest& req, const PathParams& params, ResponseWriter& w) {
    const std::string& rest = params.get("path");
    serve_asset(req, rest == "/" ? std::string_view("index.html") : std::string_view(rest).substr(1), w);
  });
}

}  // namespace cellserve::fleet
