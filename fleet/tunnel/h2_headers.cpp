#include "fleet/tunnel/h2_headers.h"

#include <algorithm>
#include <cctype>

namespace cellserve::fleet {

bool is_connection_header(std::string_view name, std::string_view value) {
  if (name == "te") return value != "trailers";
  return name == "connection" || name == "keep-alive" || name == "proxy-connection" || name == "transfer-encoding" ||
         name == "upgrade";
}

void append_headers(const net::HeaderList& in, const std::vector<std::string_view>& skip, net::HeaderList* out) {
  for (const auto& [raw_name, value] : in) {
    std::string name = raw_name;
    std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
    if (name.empty() || name[0] == ':' || is_connection_header(name, value)) continue;
    if (std::find(skip.begin(), skip.end(), name) != skip.end()) continue;
    const auto* n = reinterpret_cast<const uint8_t*>(name.data());
    const auto* v = reinterpret_cast<const uint8_t*>(value.data());
    if (!nghttp2_check_header_name(n, name.size()) || !nghttp2_check_header_value(v, value.size())) continue;
    out->emplace_back(std::move(name), value);
  }
}

std::vector<nghttp2_nv> make_nv(const net::HeaderList& headers) {
  std::vector<nghttp2_nv> nv;
  nv.reserve(headers.size());
  for (const auto& [name, value] : headers) {
    nv.push_back({reinterpret_cast<uint8_t*>(const_cast<char*>(name.data())),
                  reinterpret_cast<uint8_t*>(const_cast<char*>(value.data())), name.size(), value.size(),
                  NGHTTP2_NV_FLAG_NONE});
  }
  return nv;
}

}  // namespace cellserve::fleet
