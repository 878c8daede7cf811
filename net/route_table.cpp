#include "net/route_table.h"

#include <algorithm>
#include <stdexcept>

#include "net/json_error.h"

namespace cellserve::net {

const std::string& PathParams::get(std::string_view name) const {
  static const std::string kEmpty;
  for (const auto& [key, value] : values_) {
    if (key == name) return value;
  }
  return kEmpty;
}

RouteTable& RouteTable::add(std::string method, std::string_view pattern, RouteHandler handler) {
  if (pattern.empty() || pattern[0] != '/') throw std::invalid_argument("route pattern must start with '/'");
  Route route{std::move(method), std::string(pattern), {}, std::move(handler)};
  size_t pos = 1;
  while (pos <= pattern.size()) {
    const size_t slash = pattern.find('/', pos);
    const std::string_view seg =
        pattern.substr(pos, slash == std::string_view::npos ? std::string_view::npos : slash - pos);
    if (!route.segments.empty() && route.segments.back().kind == Segment::Kind::Rest) {
      throw std::invalid_argument("'{name...}' must be the last segment of " + route.pattern);
    }
    if (seg.size() >= 2 && seg.front() == '{' && seg.back() == '}') {
      std::string_view name = seg.substr(1, seg.size() - 2);
      const bool rest = name.ends_with("...");
      if (rest) name.remove_suffix(3);
      if (name.empty()) throw std::invalid_argument("unnamed capture in " + route.pattern);
      route.segments.push_back({rest ? Segment::Kind::Rest : Segment::Kind::Param, std::string(name)});
    } else {
      route.segments.push_back({Segment::Kind::Literal, std::string(seg)});
    }
    if (slash == std::string_view::npos) break;
    pos = slash + 1;
  }
  routes_.push_back(std::move(route));
  return *this;
}

bool RouteTable::match(const Route& route, std::string_view path, PathParams* params) {
  if (path.empty() || path[0] != '/') return false;
  size_t pos = 1;  // start of the current path segment
  for (const Segment& seg : route.segments) {
    if (seg.kind == Segment::Kind::Rest) {
      // The rest starts at the '/' before the current segment; "" when the path ended.
      params->set(seg.text, pos > path.size() ? std::string() : std::string(path.substr(pos - 1)));
      return true;
    }
    if (pos > path.size()) return false;  // the path ran out of segments
    const size_t slash = path.find('/', pos);
    const size_t end = slash == std::string_view::npos ? path.size() : slash;
    const std::string_view value = path.substr(pos, end - pos);
    if (seg.kind == Segment::Kind::Literal) {
      if (value != seg.text) return false;
    } else {
      if (value.empty()) return false;
      params->set(seg.text, std::string(value));
    }
    pos = end + 1;  // past the slash; past the end when there was none
  }
  return pos > path.size();  // every path segment consumed
}

RouteTable::Found RouteTable::find(std::string_view method, std::string_view path) const {
  Found found;
  std::vector<std::string_view> allowed;  // methods of the routes whose pattern matches, once each
  const auto allow = [&](std::string_view m) {
    if (std::find(allowed.begin(), allowed.end(), m) == allowed.end()) allowed.push_back(m);
  };
  for (const Route& route : routes_) {
    PathParams params;
    if (!match(route, path, &params)) continue;
    if (route.method == method || route.method == "*" || (method == "HEAD" && route.method == "GET")) {
      found.pattern = &route.pattern;
      found.handler = &route.handler;
      found.params = std::move(params);
      return found;
    }
    allow(route.method);
    if (route.method == "GET") allow("HEAD");
  }
  for (std::string_view m : allowed) {
    if (!found.allowed.empty()) found.allowed += ", ";
    found.allowed += m;
  }
  return found;
}

void RouteTable::answer(const HttpRequest& request, Found& found, ResponseWriter& writer) {
  if (found.handler != nullptr) {
    (*found.handler)(request, found.params, writer);
  } else if (!found.allowed.empty()) {
    send_error(writer, 405, "use " + found.allowed + " for this path", {{"Allow", found.allowed}});
  } else {
    send_error(writer, 404, "no route for " + request.method + " " + request.path);
  }
}

std::string_view RouteTable::dispatch(const HttpRequest& request, ResponseWriter& writer) const {
  Found found = find(request.method, request.path);
  answer(request, found, writer);
  return found.pattern != nullptr ? std::string_view(*found.pattern) : std::string_view();
}

}  // namespace cellserve::net
