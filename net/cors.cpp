#include "net/cors.h"

#include <algorithm>

namespace cellserve::net {
namespace {

std::string trim(std::string s) {
  const auto space = [](char c) { return c == ' ' || c == '\t'; };
  while (!s.empty() && space(s.back())) s.pop_back();
  size_t i = 0;
  while (i < s.size() && space(s[i])) ++i;
  return s.substr(i);
}

// "http://host:port" names the server itself when it is its Host header behind the scheme.
bool same_origin(const std::string& origin, const std::string& host) {
  if (host.empty()) return false;
  for (const char* scheme : {"http://", "https://"}) {
    const std::string prefix(scheme);
    if (origin.size() == prefix.size() + host.size() && origin.starts_with(prefix) && origin.ends_with(host)) {
      return true;
    }
  }
  return false;
}

// Header names are tokens; anything else in Access-Control-Request-Headers is not echoed.
bool header_list_text(const std::string& s) {
  return std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_' ||
           c == ',' || c == ' ';
  });
}

}  // namespace

CorsDecision cors_decision(const CorsPolicy& policy, const HttpRequest& request) {
  CorsDecision d;
  const std::string origin = request.header("origin");
  if (origin.empty() || same_origin(origin, request.header("host"))) return d;
  for (const std::string& allowed : policy.origins) {
    if (allowed == "*" || allowed == origin) {
      d.allow_origin = allowed == "*" ? "*" : origin;
      return d;
    }
  }
  d.refused = true;
  return d;
}

HeaderList cors_preflight_headers(const HttpRequest& request) {
  std::string headers = request.header("access-control-request-headers");
  if (headers.empty() || headers.size() > 4096 || !header_list_text(headers)) {
    headers = "Authorization, Content-Type, X-Api-Key";
  }
  return {{"Access-Control-Allow-Methods", "GET, POST, PUT, DELETE, OPTIONS"},
          {"Access-Control-Allow-Headers", headers},
          {"Access-Control-Max-Age", "86400"}};
}

std::vector<std::string> split_origins(const std::string& list) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= list.size()) {
    const size_t comma = std::min(list.find(',', start), list.size());
    std::string item = trim(list.substr(start, comma - start));
    if (!item.empty()) out.push_back(std::move(item));
    start = comma + 1;
  }
  return out;
}

}  // namespace cellserve::net
