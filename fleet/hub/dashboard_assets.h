// The hub's web dashboard (web/): its files, compiled into the binary at build time
// (cmake/embed_files.cmake), and the routes that serve them at /ui/. Nothing is read from the file
// system at run time, so the page is the one the binary was built with. docs/dashboard.md.
#pragma once

#include <cstddef>
#include <optional>
#include <string_view>

#include "net/route_table.h"

namespace cellserve::fleet {

// One embedded file, as the generated source lists it: `path` relative to web/ ("index.html",
// "pages/fleet.js"), its bytes, and its ETag, quoted (a hash of the bytes, computed at build time).
struct EmbeddedFile {
  const char* path;
  const unsigned char* data;
  size_t size;
  const char* etag;
};
extern const EmbeddedFile kEmbeddedDashboardFiles[];
extern const size_t kEmbeddedDashboardFileCount;

struct DashboardAsset {
  std::string_view bytes;
  std::string_view content_type;
  std::string_view etag;  // quoted, ready for the ETag header
};

// The file at `path` (relative to web/, no leading '/'), nullopt when there is none.
std::optional<DashboardAsset> find_dashboard_asset(std::string_view path);

// The Content-Type for a file name, by its extension (application/octet-stream when unknown).
std::string_view dashboard_content_type(std::string_view path);

// GET / (302 to /ui/), GET /ui (301 to /ui/), GET /ui/ (index.html) and GET /ui/{path...}: public
// static files with a strict Content-Security-Policy, nosniff, no-cache and ETag/304. The data the
// pages show comes from the admin API, behind its key.
void add_dashboard_routes(net::RouteTable& routes);

}  // namespace cellserve::fleet
