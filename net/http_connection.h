// One HTTP/1.1 connection: the request loop that runs on a connection's own thread, and the
// ResponseWriter handed to the handler. Internal to net/ (HttpServer is the public face).
#pragma once

#include <atomic>
#include <string>
#include <string_view>

#include "net/http_server.h"

namespace cellserve::net {

// Serves requests on the connected socket `fd` (not owned: the caller closes it) until the client
// closes, a timeout or protocol error ends the connection, or `stopping` is set. Never throws.
void serve_connection(int fd, const HttpServerOptions& options, const Handler& handler,
                      const std::atomic<bool>& stopping);

// A complete HTTP/1.1 response with an OpenAI-style JSON error body and "Connection: close",
// e.g. the 503 written to connections beyond max_connections.
std::string error_response_bytes(int status, std::string_view message);

// Shuts down our sending side and discards what the client still sends until it closes or
// `linger` passes, so the response just written is not destroyed by a TCP reset (which closing
// a socket with unread input causes). Does not close `fd`.
void lingering_shutdown(int fd, std::chrono::milliseconds linger);

}  // namespace cellserve::net
