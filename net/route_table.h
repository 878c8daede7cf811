// One route table per server: method + path pattern → handler, with 404 and 405 (and its Allow
// header) answered here, so servers never route by if-chains or regular expressions.
//
// A pattern is a path of segments. A literal segment matches itself; "{name}" matches any one
// non-empty segment; a final "{name...}" matches the rest of the path, zero or more segments,
// captured with its leading '/' ("" when nothing follows). Matching walks the segments once per
// route, so its cost is linear in the path's length whatever the path holds.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "net/http_types.h"

namespace cellserve::net {

// The segments a pattern captured, by name. Owns its strings.
class PathParams {
 public:
  // The captured value, "" when the pattern has no such name.
  const std::string& get(std::string_view name) const;
  void set(std::string name, std::string value) { values_.emplace_back(std::move(name), std::move(value)); }

 private:
  std::vector<std::pair<std::string, std::string>> values_;
};

using RouteHandler = std::function<void(const HttpRequest&, const PathParams&, ResponseWriter&)>;

class RouteTable {
 public:
  // Adds a route. Routes are tried in the order added; the first that matches wins. Method "*"
  // matches every method (a proxy's catch-all). A GET route also answers HEAD (the transport then sends headers only).
  // Throws std::invalid_argument for a malformed pattern (a programming error, found at start-up).
  RouteTable& add(std::string method, std::string_view pattern, RouteHandler handler);

  // The route for `method` and `path`: its pattern and captures, or null (then `allowed` lists
  // the methods of the routes whose pattern matches the path: "" means 404, else 405).
  struct Found {
    const std::string* pattern = nullptr;
    const RouteHandler* handler = nullptr;
    PathParams params;
    std::string allowed;
  };
  Found find(std::string_view method, std::string_view path) const;
  // Answers `request` with what find() returned: the handler, or 405 with Allow, or 404.
  static void answer(const HttpRequest& request, Found& found, ResponseWriter& writer);

  // Calls the matching route's handler, or answers 404, or 405 with Allow. Returns the matched
  // pattern (a fixed set of strings, safe as a metrics label), or "" when nothing matched.
  std::string_view dispatch(const HttpRequest& request, ResponseWriter& writer) const;

 private:
  struct Segment {
    enum class Kind { Literal, Param, Rest } kind;
    std::string text;  // the literal, or the capture's name
  };
  struct Route {
    std::string method;
    std::string pattern;
    std::vector<Segment> segments;
    RouteHandler handler;
  };
  static bool match(const Route& route, std::string_view path, PathParams* params);

  std::vector<Route> routes_;
};

}  // namespace cellserve::net
