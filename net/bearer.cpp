#include "net/bearer.h"

namespace cellserve::net {

bool constant_time_equal(std::string_view given, std::string_view expected) {
  // Compare over the expected key's length whatever was given, folding every difference in.
  unsigned diff = given.size() == expected.size() ? 0u : 1u;
  for (size_t i = 0; i < expected.size(); ++i) {
    const unsigned char g = i < given.size() ? static_cast<unsigned char>(given[i]) : 0;
    diff |= g ^ static_cast<unsigned char>(expected[i]);
  }
  return diff == 0;
}

std::string request_api_key(const HttpRequest& request) {
  constexpr std::string_view kBearer = "Bearer ";
  std::string auth = request.header("authorization");
  if (auth.size() > kBearer.size() && std::string_view(auth).substr(0, kBearer.size()) == kBearer) {
    return auth.substr(kBearer.size());
  }
  return request.header("x-api-key");
}

bool has_api_key(const HttpRequest& request, std::string_view expected) {
  const std::string given = request_api_key(request);
  return !given.empty() && constant_time_equal(given, expected);
}

}  // namespace cellserve::net
