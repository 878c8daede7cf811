// A raw-socket HTTP/1.1 client and small fixtures for the HttpServer tests: the transport is
// checked against bytes on the wire, not against Beast itself.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cctype>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include <gtest/gtest.h>

#include "net/http_server.h"

namespace cellserve::net::rawhttp {

using namespace std::chrono_literals;

// A one-shot event a test thread waits on (with a limit, so a bug fails instead of hanging).
class Event {
 public:
  void notify() {
    std::lock_guard lock(mu_);
    set_ = true;
    cv_.notify_all();
  }
  bool wait(std::chrono::milliseconds limit = 5000ms) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, limit, [&] { return set_; });
  }
  bool is_set() {
    std::lock_guard lock(mu_);
    return set_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool set_ = false;
};

struct Response {
  int status = 0;
  std::map<std::string, std::string> headers;  // names lower-cased
  std::string body;
};

// A blocking HTTP/1.1 client on a raw socket. Reads give up after 5 s so a broken server fails
// the test rather than hanging it.
class Client {
 public:
  // `source`: the loopback address to connect from (any 127.x.y.z works on Linux), so a test can
  // be several clients.
  explicit Client(int port, const char* source = nullptr) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    timeval tv{5, 0};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    ::setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));  // also bounds connect()
    if (source != nullptr) {
      sockaddr_in from{};
      from.sin_family = AF_INET;
      ::inet_pton(AF_INET, source, &from.sin_addr);
      ::bind(fd_, reinterpret_cast<sockaddr*>(&from), sizeof(from));
    }
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    connected_ = ::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
  }
  ~Client() { close(); }

  bool connected() const { return connected_; }

  bool send(const std::string& data) {
    size_t done = 0;
    while (done < data.size()) {
      const ssize_t n = ::send(fd_, data.data() + done, data.size() - done, MSG_NOSIGNAL);
      if (n <= 0) return false;
      done += static_cast<size_t>(n);
    }
    return true;
  }

  void close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

  int fd() const { return fd_; }

  // Reads one response (Content-Length or chunked body). nullopt on EOF/timeout/garbage.
  std::optional<Response> read_response() {
    auto r = read_head();
    if (!r) return std::nullopt;
    if (r->headers["transfer-encoding"] == "chunked") {
      for (;;) {
        auto chunk = read_chunk();
        if (!chunk) return std::nullopt;
        if (chunk->empty()) break;
        r->body += *chunk;
      }
    } else if (r->headers.count("content-length")) {
      const size_t n = std::stoul(r->headers["content-length"]);
      if (!fill(n)) return std::nullopt;
      r->body = buf_.substr(0, n);
      buf_.erase(0, n);
    }
    return r;
  }

  // The status line and headers only.
  std::optional<Response> read_head() {
    size_t end;
    while ((end = buf_.find("\r\n\r\n")) == std::string::npos) {
      if (!read_more()) return std::nullopt;
    }
    const std::string head = buf_.substr(0, end);
    buf_.erase(0, end + 4);
    Response r;
    if (std::sscanf(head.c_str(), "HTTP/1.%*d %d", &r.status) != 1) return std::nullopt;
    size_t pos = head.find("\r\n");
    while (pos != std::string::npos) {
      const size_t next = head.find("\r\n", pos + 2);
      const std::string line = head.substr(pos + 2, next == std::string::npos ? std::string::npos : next - pos - 2);
      const size_t colon = line.find(':');
      if (colon != std::string::npos) {
        std::string name = line.substr(0, colon);
        for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        std::string value = line.substr(colon + 1);
        value.erase(0, value.find_first_not_of(' '));
        r.headers[name] = value;
      }
      pos = next;
    }
    return r;
  }

  // One chunk of a chunked body; "" for the last chunk, nullopt on EOF/timeout.
  std::optional<std::string> read_chunk() {
    size_t eol;
    while ((eol = buf_.find("\r\n")) == std::string::npos) {
      if (!read_more()) return std::nullopt;
    }
    const size_t size = std::stoul(buf_.substr(0, eol), nullptr, 16);
    buf_.erase(0, eol + 2);
    if (!fill(size + 2)) return std::nullopt;
    std::string data = buf_.substr(0, size);
    buf_.erase(0, size + 2);
    return data;
  }

  // Everything until the server closes the connection.
  std::string read_to_eof() {
    while (read_more()) {}
    std::string rest = std::move(buf_);
    buf_.clear();
    return rest;
  }

  // True when the server closed the connection (EOF or reset) with nothing more to read.
  bool closed_by_server() {
    if (!buf_.empty()) return false;
    char c;
    const ssize_t n = ::recv(fd_, &c, 1, 0);
    return n == 0 || (n < 0 && errno == ECONNRESET);
  }

 private:
  bool read_more() {
    char tmp[8192];
    const ssize_t n = ::recv(fd_, tmp, sizeof(tmp), 0);
    if (n <= 0) return false;
    buf_.append(tmp, static_cast<size_t>(n));
    return true;
  }
  bool fill(size_t n) {
    while (buf_.size() < n) {
      if (!read_more()) return false;
    }
    return true;
  }

  int fd_ = -1;
  bool connected_ = false;
  std::string buf_;
};

inline std::string get(const std::string& path, const std::string& extra = "") {
  return "GET " + path + " HTTP/1.1\r\nHost: test\r\n" + extra + "\r\n";
}

inline std::string post(const std::string& path, const std::string& body, const std::string& extra = "") {
  return "POST " + path +
         " HTTP/1.1\r\nHost: test\r\nContent-Type: text/plain\r\nContent-Length: " + std::to_string(body.size()) +
         "\r\n" + extra + "\r\n" + body;
}

// Echoes the request as "METHOD path?query|x-test header|body".
inline void echo_handler(const HttpRequest& req, ResponseWriter& w) {
  w.send(200, "text/plain", req.method + " " + req.path + "?" + req.query + "|" + req.header("x-test") + "|" + req.body,
         {{"X-Reply", "yes"}});
}

inline std::unique_ptr<HttpServer> start_server(Handler handler, HttpServerOptions options = {}) {
  options.port = 0;
  auto server = HttpServer::start(options, std::move(handler));
  EXPECT_TRUE(server.ok()) << server.status().to_string();
  if (!server.ok()) return nullptr;
  EXPECT_GT(server.value()->port(), 0);
  return std::move(server).value();
}

}  // namespace cellserve::net::rawhttp
