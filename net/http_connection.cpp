#include "net/http_connection.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <exception>
#include <limits>
#include <mutex>
#include <optional>
#include <sstream>
#include <system_error>
#include <utility>

#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/string.hpp>
#include <boost/beast/http.hpp>

#include "net/cors.h"
#include "net/fd_stream.h"
#include "net/json_error.h"
#include "net/proxy_protocol.h"
#include "net/socket_address.h"
#include "net/spooled_body.h"

namespace cellserve::net {
namespace {

namespace beast = boost::beast;
namespace http = boost::beast::http;
namespace asio = boost::asio;
using Clock = std::chrono::steady_clock;

ApiError transport_error(int status, std::string_view message) {
  ApiError e;
  e.http_status = status;
  e.message = std::string(message);
  e.type = status == 503 ? "unavailable_error" : status >= 500 ? "server_error" : "invalid_request_error";
  return e;
}

// Header names and values that would let a handler break the framing (CR, LF, NUL).
bool safe_header_text(std::string_view s) {
  return s.find_first_of(std::string_view("\r\n\0", 3)) == std::string_view::npos;
}

// Common headers of every response. The transport owns framing (Content-Length,
// Transfer-Encoding, Connection), so a handler's values for those are dropped.
template <class Message>
void set_headers(Message& res, std::string_view content_type, const HeaderList& headers, bool keep_alive,
                 const std::string& allow_origin = {}) {
  res.set(http::field::server, "cellserve");
  if (!allow_origin.empty() && safe_header_text(allow_origin)) {
    res.set(http::field::access_control_allow_origin, allow_origin);
    res.set(http::field::vary, "Origin");
  }
  if (!content_type.empty() && safe_header_text(content_type)) res.set(http::field::content_type, content_type);
  for (const auto& [name, value] : headers) {
    if (name.empty() || !safe_header_text(name) || !safe_header_text(value)) continue;
    if (beast::iequals(name, "content-length") || beast::iequals(name, "transfer-encoding") ||
        beast::iequals(name, "connection")) {
      continue;
    }
    res.set(name, value);
  }
  res.keep_alive(keep_alive);
}

// The ResponseWriter given to the handler for one request. Methods may be called from any thread
// (one at a time is typical); they never throw.
class ConnectionWriter final : public ResponseWriter {
 public:
  ConnectionWriter(FdStream& stream, beast::flat_buffer& buffer, unsigned version, bool keep_alive, bool head,
                   const std::atomic<bool>& stopping, std::string allow_origin)
      : allow_origin_(std::move(allow_origin)),
        stream_(stream),
        buffer_(buffer),
        version_(version),
        keep_alive_(keep_alive),
        head_(head),
        stopping_(stopping) {}

  std::optional<UpgradedConnection> upgrade(const HeaderList& headers) override {
    std::lock_guard lock(mu_);
    if (state_ != State::Idle || version_ < 11 || stopping_.load()) return std::nullopt;
    state_ = State::Upgraded;
    std::string head = "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nServer: cellserve\r\n";
    for (const auto& [name, value] : headers) {
      if (name.empty() || !safe_header_text(name) || !safe_header_text(value)) continue;
      if (beast::iequals(name, "connection") || beast::iequals(name, "content-length")) continue;
      head.append(name).append(": ").append(value).append("\r\n");
    }
    head.append("\r\n");
    beast::error_code ec;
    asio::write(stream_, asio::buffer(head), ec);
    if (ec) {
      broken_ = true;
      return std::nullopt;
    }
    // A duplicate descriptor: the connection thread closes its own when the handler returns.
    UpgradedConnection up;
    up.fd = ::fcntl(stream_.fd(), F_DUPFD_CLOEXEC, 0);
    if (up.fd < 0) {
      broken_ = true;
      return std::nullopt;
    }
    const auto data = buffer_.data();
    up.buffered.assign(static_cast<const char*>(data.data()), data.size());
    buffer_.consume(buffer_.size());
    return up;
  }

  void send(int status, std::string_view content_type, std::string body, const HeaderList& headers) override {
    std::lock_guard lock(mu_);
    if (state_ != State::Idle) return;
    state_ = State::Sent;
    if (status < 200 || status > 999) status = 500;
    try {
      http::response<http::string_body> res{static_cast<http::status>(status), version_};
      set_headers(res, content_type, headers, keep_alive(), allow_origin_);
      if (status == 204 || status == 304) body.clear();  // these carry no body
      res.body() = std::move(body);
      res.prepare_payload();
      beast::error_code ec;
      if (head_) {
        http::response_serializer<http::string_body> sr{res};
        http::write_header(stream_, sr, ec);
      } else {
        http::write(stream_, res, ec);
      }
      if (ec) broken_ = true;
    } catch (const std::exception&) {
      broken_ = true;
    }
  }

  bool begin_stream(int status, std::string_view content_type, const HeaderList& headers) override {
    std::lock_guard lock(mu_);
    if (state_ != State::Idle) return false;
    state_ = State::Streaming;
    if (status < 200 || status > 999) status = 500;
    // HTTP/1.0 has no chunked encoding: the body then ends when the connection closes.
    chunked_ = version_ >= 11;
    if (!chunked_) keep_alive_ = false;
    try {
      http::response<http::empty_body> res{static_cast<http::status>(status), version_};
      set_headers(res, content_type, headers, keep_alive(), allow_origin_);
      if (chunked_) res.chunked(true);
      http::response_serializer<http::empty_body> sr{res};
      beast::error_code ec;
      http::write_header(stream_, sr, ec);
      if (ec) broken_ = true;
    } catch (const std::exception&) {
      broken_ = true;
    }
    return !broken_;
  }

  bool write(std::string_view data) override {
    std::lock_guard lock(mu_);
    if (state_ != State::Streaming || broken_) return false;
    if (head_ || data.empty()) return true;  // an empty chunk would end the stream
    beast::error_code ec;
    try {
      const asio::const_buffer buf(data.data(), data.size());
      if (chunked_) {
        asio::write(stream_, http::make_chunk(buf), ec);
      } else {
        asio::write(stream_, buf, ec);
      }
    } catch (const std::exception&) {
      ec = asio::error::fault;
    }
    if (ec) broken_ = true;
    return !broken_;
  }

  void end_stream() override {
    std::lock_guard lock(mu_);
    if (state_ != State::Streaming) return;
    state_ = State::Ended;
    if (broken_ || head_ || !chunked_) return;
    beast::error_code ec;
    try {
      asio::write(stream_, http::make_chunk_last(), ec);
    } catch (const std::exception&) {
      ec = asio::error::fault;
    }
    if (ec) broken_ = true;
  }

  void abort_stream() override {
    std::lock_guard lock(mu_);
    if (state_ != State::Streaming) return;
    state_ = State::Ended;
    broken_ = true;  // no last chunk, and the connection closes: the client sees a truncated body
  }

  bool client_gone() override {
    if (broken_ || gone_) return true;
    pollfd p{stream_.fd(), POLLIN | POLLRDHUP, 0};
    if (::poll(&p, 1, 0) <= 0) return false;
    if (p.revents & (POLLERR | POLLHUP | POLLNVAL)) {
      gone_ = true;
    } else {
      // Readable: either the peer's FIN (recv returns 0) or a pipelined request (not gone).
      char c;
      const ssize_t n = ::recv(stream_.fd(), &c, 1, MSG_PEEK | MSG_DONTWAIT);
      if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) gone_ = true;
    }
    return gone_;
  }

  // Completes the exchange after the handler returned (or threw): a handler that sent nothing
  // gets a 500, an unfinished stream is ended, or cut off when the handler threw.
  void finish(bool handler_threw) {
    State state;
    {
      std::lock_guard lock(mu_);
      state = state_;
    }
    if (state == State::Idle) {
      const char* message = handler_threw ? "internal server error" : "the handler sent no response";
      send(500, "application/json", error_body(transport_error(500, message)), {});
    } else if (state == State::Streaming) {
      if (handler_threw) {
        broken_ = true;  // a truncated chunked body tells the client something went wrong
      } else {
        end_stream();
      }
    }
  }

  // Whether the connection can carry another request.
  bool reusable() const {
    return !broken_ && !gone_ && keep_alive() && (state_ == State::Sent || state_ == State::Ended);
  }

 private:
  enum class State { Idle, Sent, Streaming, Ended, Upgraded };

  bool keep_alive() const { return keep_alive_ && !stopping_.load(); }

  const std::string allow_origin_;  // Access-Control-Allow-Origin, "" for none
  FdStream& stream_;
  beast::flat_buffer& buffer_;  // the connection's read buffer: bytes past the request
  const unsigned version_;      // 11 for HTTP/1.1
  bool keep_alive_;
  const bool head_;  // a HEAD request: headers only
  const std::atomic<bool>& stopping_;
  std::mutex mu_;  // serializes writes
  State state_ = State::Idle;
  bool chunked_ = false;
  std::atomic<bool> broken_{false};  // a write failed: the peer is gone or stalled
  std::atomic<bool> gone_{false};    // client_gone() saw the peer close
};

std::string to_lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// The request without its body.
HttpRequest request_head(const http::request_header<>& msg) {
  HttpRequest r;
  r.method = std::string(msg.method_string());
  const std::string_view target(msg.target().data(), msg.target().size());
  const size_t q = target.find('?');
  r.path = std::string(target.substr(0, q));
  if (q != std::string_view::npos) r.query = std::string(target.substr(q + 1));
  for (const auto& field : msg) {
    std::string name = to_lower(std::string_view(field.name_string().data(), field.name_string().size()));
    const std::string_view value(field.value().data(), field.value().size());
    auto [it, inserted] = r.headers.emplace(std::move(name), std::string(value));
    if (!inserted) it->second.append(", ").append(value);  // repeated fields combine (RFC 9110 5.3)
  }
  return r;
}

bool expects_continue(const http::request_header<>& msg) {
  return msg.version() >= 11 && beast::iequals(msg[http::field::expect], "100-continue");
}

// Whether options.spool_body wants `head`'s body on disk; nullopt when the predicate threw.
std::optional<bool> wants_spool(const HttpServerOptions& options, const HttpRequest& head) {
  if (!options.spool_body) return false;
  try {
    return options.spool_body(head);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "cellserve: http: spool_body for %s %s threw: %s\n", head.method.c_str(), head.path.c_str(),
                 e.what());
  } catch (...) {
    std::fprintf(stderr, "cellserve: http: spool_body for %s %s threw\n", head.method.c_str(), head.path.c_str());
  }
  return std::nullopt;
}

// Answers a request that could not be read, then closes our side gracefully.
void reject_request(int fd, FdStream& stream, int status, std::string_view message, const std::atomic<bool>& stopping) {
  const std::string bytes = error_response_bytes(status, message);
  beast::error_code ec;
  asio::write(stream, asio::buffer(bytes), ec);
  if (!ec && !stopping.load()) lingering_shutdown(fd, std::chrono::milliseconds(1000));
}

// Reads the PROXY v1 header line by the deadline already set on `stream`; the bytes after it stay
// in `buffer`. The client's address ("" for PROXY UNKNOWN), or nullopt when no valid header came.
std::optional<std::string> read_proxy_header(FdStream& stream, beast::flat_buffer& buffer) {
  for (;;) {
    const std::string_view seen(static_cast<const char*>(buffer.data().data()), buffer.size());
    if (const size_t end = seen.find("\r\n"); end != std::string_view::npos) {
      std::optional<std::string> source = parse_proxy_v1_source(seen.substr(0, end));
      buffer.consume(end + 2);
      return source;
    }
    if (seen.size() >= kProxyV1MaxLine) return std::nullopt;
    beast::error_code ec;
    const size_t n = stream.read_some(buffer.prepare(kProxyV1MaxLine - seen.size()), ec);
    if (ec) return std::nullopt;
    buffer.commit(n);
  }
}

void serve_loop(int fd, const HttpServerOptions& options, const Handler& handler, const std::atomic<bool>& stopping,
                RequestPhase& phase) {
  FdStream stream(fd);
  std::string peer = peer_address(fd);
  beast::flat_buffer buffer;
  // The first request's header must be whole within header_timeout of the accept, so a socket
  // that never speaks leaves after seconds, not after read_timeout or idle_timeout.
  std::optional<Clock::time_point> header_deadline = Clock::now() + options.header_timeout;
  if (options.proxy_protocol) {
    stream.set_read_deadline(*header_deadline);
    std::optional<std::string> source = read_proxy_header(stream, buffer);
    if (!source) return;  // not our terminator: nobody to answer in HTTP
    if (!source->empty()) peer = std::move(*source);
  }
  while (!stopping.load()) {
    // Wait for the next request's first byte (keep-alive idle), then for the whole request.
    if (buffer.size() == 0 &&
        !stream.wait_readable(header_deadline ? *header_deadline : Clock::now() + options.idle_timeout)) {
      return;
    }
    if (stopping.load()) return;
    const auto started = Clock::now();
    const auto request_deadline = started + options.read_timeout;
    if (!header_deadline) header_deadline = started + options.header_timeout;
    stream.set_read_deadline(std::min(*header_deadline, request_deadline));
    header_deadline.reset();

    http::request_parser<http::string_body> parser;
    parser.header_limit(static_cast<std::uint32_t>(
        std::min<size_t>(options.max_header_bytes, std::numeric_limits<std::uint32_t>::max())));
    // The body's limit depends on whether it is spooled, known once the header is in: until then
    // Beast checks none, and a too-large Content-Length is refused below, before 100 Continue.
    parser.body_limit(boost::none);
    beast::error_code ec;
    http::read_header(stream, buffer, parser, ec);
    // Evicted while the header was still arriving: the accept thread shut the socket down.
    if (!ec && !phase.begin_request()) return;

    HttpRequest request;
    bool spooled = false;
    uint64_t body_limit = options.max_body_bytes;
    if (!ec) {
      request = request_head(parser.get());
      request.remote_address = peer;
      const std::optional<bool> spool = wants_spool(options, request);
      if (!spool) {
        reject_request(fd, stream, 500, "internal server error", stopping);
        return;
      }
      spooled = *spool;
      if (spooled) body_limit = options.max_spooled_body_bytes;
      stream.set_read_deadline(started + (spooled ? options.spooled_read_timeout : options.read_timeout));
      const auto declared = parser.content_length();
      if (declared && *declared > body_limit) {
        ec = http::error::body_limit;
      } else {
        parser.body_limit(body_limit);  // for chunked bodies, counted as the chunks arrive
      }
    }
    // What the response needs of the header, taken before a spooled parser takes the message.
    const unsigned version = parser.get().version();
    const bool keep_alive = parser.get().keep_alive();
    const bool head_method = parser.get().method() == http::verb::head;
    const bool options_method = parser.get().method() == http::verb::options;
    const bool continue_expected = expects_continue(parser.get());
    const std::string target(parser.get().target());

    // A spooled body goes through a parser with the same state whose body is the spool file.
    // The file is removed when `spool_file` goes: after the handler, or at once on a failure.
    std::unique_ptr<SpoolFile> spool_file;
    std::optional<http::request_parser<SpoolBody>> spool_parser;
    if (!ec && spooled) {
      Result<std::unique_ptr<SpoolFile>> file = SpoolFile::create(options.spool_dir);
      if (!file.ok()) {
        std::fprintf(stderr, "cellserve: http: cannot spool the body of %s %s: %s\n", request.method.c_str(),
                     target.c_str(), file.status().message().c_str());
        reject_request(fd, stream, 500, "cannot store the request body", stopping);
        return;
      }
      spool_file = std::move(file).value();
      spool_parser.emplace(std::move(parser));
      SpoolBody::value_type& body = spool_parser->get().body();
      body.fd = spool_file->fd();
      body.limit = body_limit;
    }
    if (!ec && continue_expected) {
      static constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
      asio::write(stream, asio::buffer(kContinue.data(), kContinue.size()), ec);
    }
    if (!ec) {
      if (spool_parser) {
        http::read(stream, buffer, *spool_parser, ec);
      } else {
        http::read(stream, buffer, parser, ec);
      }
    }
    if (ec) {
      const int write_errno = spool_parser ? spool_parser->get().body().write_errno : 0;
      spool_file.reset();  // no spool file outlives a request that failed
      if (write_errno != 0) {
        std::fprintf(stderr, "cellserve: http: cannot spool the body of %s %s: %s\n", request.method.c_str(),
                     target.c_str(), std::system_category().message(write_errno).c_str());
        reject_request(fd, stream, 500, "cannot store the request body", stopping);
      } else if (ec == http::error::body_limit) {
        reject_request(fd, stream, 413, "request body exceeds " + std::to_string(body_limit) + " bytes", stopping);
      } else if (ec == http::error::header_limit) {
        reject_request(fd, stream, 431, "request header exceeds " + std::to_string(options.max_header_bytes) + " bytes",
                       stopping);
      } else if (ec == beast::error::timeout) {
        reject_request(fd, stream, 408, "request not received within the time limit", stopping);
      } else if (ec.category() == http::make_error_code(http::error::bad_method).category() &&
                 ec != http::error::end_of_stream && ec != http::error::partial_message) {
        reject_request(fd, stream, 400, "malformed HTTP request: " + ec.message(), stopping);
      }
      return;  // otherwise the client closed or the socket failed: nobody to answer
    }

    if (spool_file) {
      request.body_file = spool_file->path();
    } else {
      request.body = std::move(parser.get().body());
    }
    const CorsDecision cors = cors_decision(options.cors, request);
    ConnectionWriter writer(stream, buffer, version, keep_alive, head_method, stopping, cors.allow_origin);
    if (cors.refused) {
      writer.send(403, "application/json",
                  error_body(api_error(403, "cross-origin requests from " + request.header("origin") +
                                                " are not allowed (the server's --cors-origins does not list it)")),
                  {});
    } else if (options_method) {
      // CORS preflight: browsers ask before a cross-origin POST with Authorization.
      writer.send(204, "", "", cors.allow_origin.empty() ? HeaderList{} : cors_preflight_headers(request));
    } else {
      bool threw = false;
      try {
        handler(request, writer);
      } catch (const std::exception& e) {
        threw = true;
        std::fprintf(stderr, "cellserve: http: handler for %s %s threw: %s\n", request.method.c_str(), target.c_str(),
                     e.what());
      } catch (...) {
        threw = true;
        std::fprintf(stderr, "cellserve: http: handler for %s %s threw\n", request.method.c_str(), target.c_str());
      }
      writer.finish(threw);
    }
    if (!writer.reusable()) return;
    phase.end_request();
  }
}

}  // namespace

void serve_connection(int fd, const HttpServerOptions& options, const Handler& handler,
                      const std::atomic<bool>& stopping, RequestPhase& phase) {
  try {
    serve_loop(fd, options, handler, stopping, phase);
  } catch (const std::exception& e) {
    // Only allocation failures can get here; the connection is dropped, the server lives on.
    std::fprintf(stderr, "cellserve: http: connection dropped: %s\n", e.what());
  } catch (...) {
    std::fprintf(stderr, "cellserve: http: connection dropped\n");
  }
}

std::string error_response_bytes(int status, std::string_view message) {
  http::response<http::string_body> res{static_cast<http::status>(status), 11};
  set_headers(res, "application/json", {}, false);
  res.body() = error_body(transport_error(status, message));
  res.prepare_payload();
  std::ostringstream out;
  out << res;
  return out.str();
}

void lingering_shutdown(int fd, std::chrono::milliseconds linger) {
  ::shutdown(fd, SHUT_WR);
  FdStream stream(fd);
  stream.set_read_deadline(Clock::now() + linger);
  char scratch[4096];
  for (;;) {
    beast::error_code ec;
    stream.read_some(static_cast<void*>(scratch), sizeof(scratch), ec);
    if (ec) return;  // EOF, timeout or error
  }
}

}  // namespace cellserve::net
