#include "fleet/tunnel/hub_stream.h"

#include <strings.h>

#include <algorithm>
#include <cstring>

#include "fleet/tunnel/h2_headers.h"

namespace cellserve::fleet {

ssize_t read_hub_request_body(nghttp2_session*, int32_t, uint8_t* buf, size_t length, uint32_t* data_flags,
                              nghttp2_data_source* source, void*) {
  auto* stream = static_cast<HubStream*>(source->ptr);
  const size_t n = std::min(length, stream->request_body.size() - stream->body_off);
  if (n > 0) std::memcpy(buf, stream->request_body.data() + stream->body_off, n);
  stream->body_off += n;
  if (stream->body_off == stream->request_body.size()) {
    *data_flags |= NGHTTP2_DATA_FLAG_EOF;
    std::string().swap(stream->request_body);  // sent: free it while the response runs
    stream->body_off = 0;
  }
  return static_cast<ssize_t>(n);
}

net::HeaderList hub_request_headers(const std::string& method, const std::string& target,
                                    const net::HeaderList& headers, size_t body_size) {
  std::string authority = "agent";
  for (const auto& [name, value] : headers) {
    if (name.size() == 4 && strncasecmp(name.c_str(), "host", 4) == 0 && !value.empty()) authority = value;
  }
  net::HeaderList list = {
      {":method", method.empty() ? "GET" : method},
      {":scheme", "http"},
      {":authority", authority},
      {":path", target.empty() || target[0] != '/' ? "/" + target : target},
  };
  append_headers(headers, {"host", "content-length"}, &list);
  if (body_size > 0 || method == "POST" || method == "PUT" || method == "PATCH") {
    list.emplace_back("content-length", std::to_string(body_size));
  }
  return list;
}

net::HeaderList relayed_headers(const net::HeaderList& headers, std::string* content_type) {
  for (const auto& [name, value] : headers) {
    if (name == "content-type") *content_type = value;
  }
  net::HeaderList out;
  append_headers(headers, {"content-type", "content-length", kStreamHeader}, &out);
  return out;
}

}  // namespace cellserve::fleet
