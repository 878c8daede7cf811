// What a request handler sees of HTTP: the parsed request and a writer for the response,
// either whole or streamed (Server-Sent Events). The transport (http_server.h) owns both.
#pragma once

#include <algorithm>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace cellserve::net {

struct HttpRequest {
  std::string method;                          // "GET", "POST", ...
  std::string path;                            // target without the query string, e.g. "/v1/models"
  std::string query;                           // after '?', "" when none
  std::map<std::string, std::string> headers;  // names lower-cased
  std::string body;
  // Spooled requests (HttpServerOptions::spool_body): the body's path ("" otherwise; `body` is then
  // empty). The server deletes the file after the handler returns.
  std::string body_file;
  std::string remote_address;  // the peer's IP address as text ("" when unknown, e.g. through a tunnel)

  // The header's value, "" when absent. `name` lower-case.
  std::string header(const std::string& name) const {
    const auto it = headers.find(name);
    return it == headers.end() ? std::string() : it->second;
  }
  // The first value of query parameter `key` as sent (not percent-decoded: for numbers and plain
  // words), "" when absent.
  std::string query_param(std::string_view key) const {
    size_t pos = 0;
    while (pos <= query.size()) {
      const size_t amp = std::min(query.find('&', pos), query.size());
      const std::string_view pair(query.data() + pos, amp - pos);
      if (pair.starts_with(key) && pair.size() > key.size() && pair[key.size()] == '=') {
        return std::string(pair.substr(key.size() + 1));
      }
      pos = amp + 1;
    }
    return "";
  }
};

using HeaderList = std::vector<std::pair<std::string, std::string>>;

// A connection handed over by ResponseWriter::upgrade(): the socket (now owned by the taker) and
// the bytes the client already sent past the request, which belong to the new protocol.
struct UpgradedConnection {
  int fd = -1;
  std::string buffered;
};

class ResponseWriter {
 public:
  virtual ~ResponseWriter() = default;
  // A complete response. Call at most once, and not after begin_stream().
  virtual void send(int status, std::string_view content_type, std::string body, const HeaderList& headers = {}) = 0;
  // Starts a streamed response (chunked transfer encoding, no Content-Length), e.g.
  // "text/event-stream". False when the peer is gone.
  virtual bool begin_stream(int status, std::string_view content_type, const HeaderList& headers = {}) = 0;
  // Writes and flushes one piece of a streamed response. False when the peer is gone.
  virtual bool write(std::string_view data) = 0;
  // Ends the streamed response.
  virtual void end_stream() = 0;
  // Ends a streamed response as broken: the client must see that the body is incomplete (HTTP/1.1
  // closes the connection without the last chunk; the tunnel resets the stream). The default
  // ends it normally, for writers that cannot do better.
  virtual void abort_stream() { end_stream(); }
  // True when the client has closed the connection (a non-blocking check), so long work done
  // for it can be cancelled.
  virtual bool client_gone() = 0;
  // Answers "101 Switching Protocols" with `headers` (Upgrade: ...) and hands the connection over:
  // the HTTP server lets go of it once the handler returns. Call instead of send() or
  // begin_stream(). nullopt when the transport cannot (the default) or the write failed.
  virtual std::optional<UpgradedConnection> upgrade(const HeaderList& headers) {
    (void)headers;
    return std::nullopt;
  }
};

// Runs on the connection's own thread and may block (waiting for generation).
using Handler = std::function<void(const HttpRequest&, ResponseWriter&)>;

}  // namespace cellserve::net
