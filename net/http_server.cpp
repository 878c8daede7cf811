#include "net/http_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <system_error>
#include <utility>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>

#include "net/http_connection.h"
#include "net/socket_address.h"

namespace cellserve::net {

// One accepted connection and the thread serving it.
class HttpConnection {
 public:
  HttpConnection(int fd, std::string address) : fd(fd), address(std::move(address)) {}
  int fd;                     // guarded by HttpServer::mu_; -1 once closed
  const std::string address;  // the client's IP address, the key of max_connections_per_address
  RequestPhase phase;
  std::thread thread;
  std::atomic<bool> done{false};
};

namespace {

using Clock = std::chrono::steady_clock;

constexpr size_t kMaxDraining = 64;  // rejected connections being closed gracefully at once

std::string endpoint_name(const std::string& host, int port) {
  const bool v6 = host.find(':') != std::string::npos;
  return (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

// "Address already in use" -> "address already in use", to follow "host:port: ".
std::string lower_first(std::string s) {
  if (!s.empty()) s[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(s[0])));
  return s;
}

void set_timeout(int fd, int option, std::chrono::seconds t) {
  timeval tv{};
  tv.tv_sec = static_cast<time_t>(t.count());
  ::setsockopt(fd, SOL_SOCKET, option, &tv, sizeof(tv));
}

// Whether bytes wait unread on `fd`: a request that has arrived but that its thread has not read
// yet. Such a connection is about to be busy, so it is not evicted.
bool has_unread_input(int fd) {
  char c;
  return ::recv(fd, &c, 1, MSG_PEEK | MSG_DONTWAIT) > 0;
}

// A rejected connection that got its 503 and is waiting for the client to close.
struct Draining {
  int fd;
  Clock::time_point deadline;
};

}  // namespace

Result<std::unique_ptr<HttpServer>> HttpServer::start(const HttpServerOptions& options, Handler handler) {
  namespace asio = boost::asio;
  if (options.port < 0 || options.port > 65535) {
    return Status::invalid_argument("http: port " + std::to_string(options.port) + " is out of range");
  }
  if (options.max_connections < 1) return Status::invalid_argument("http: max_connections must be at least 1");
  if (options.max_connections_per_address < 0) {
    return Status::invalid_argument("http: max_connections_per_address must be 0 (no cap) or positive");
  }
  if (options.header_timeout.count() < 1) return Status::invalid_argument("http: header_timeout must be at least 1 s");
  if (!handler) return Status::invalid_argument("http: no request handler");
  if (options.spool_body) {
    if (options.spooled_read_timeout.count() < 1) {
      return Status::invalid_argument("http: spooled_read_timeout must be at least 1 s");
    }
    std::error_code dir_ec;
    if (!options.spool_dir.empty() && !std::filesystem::is_directory(options.spool_dir, dir_ec)) {
      return Status::invalid_argument("http: spool_dir " + options.spool_dir + " is not a directory");
    }
  }
  const std::string where = endpoint_name(options.host, options.port);

  asio::io_context ioc;
  boost::system::error_code ec;
  asio::ip::tcp::resolver resolver(ioc);
  const auto results =
      resolver.resolve(options.host, std::to_string(options.port),
                       asio::ip::tcp::resolver::passive | asio::ip::tcp::resolver::numeric_service, ec);
  if (ec || results.empty()) {
    return Status::invalid_argument(where + ": cannot resolve host: " + lower_first(ec.message()));
  }
  const asio::ip::tcp::endpoint endpoint = results.begin()->endpoint();

  asio::ip::tcp::acceptor acceptor(ioc);
  if (acceptor.open(endpoint.protocol(), ec)) return Status::unavailable(where + ": " + lower_first(ec.message()));
  acceptor.set_option(asio::socket_base::reuse_address(true), ec);
  if (acceptor.bind(endpoint, ec)) return Status::unavailable(where + ": " + lower_first(ec.message()));
  if (acceptor.listen(asio::socket_base::max_listen_connections, ec)) {
    return Status::unavailable(where + ": " + lower_first(ec.message()));
  }
  const int port = acceptor.local_endpoint(ec).port();
  if (ec) return Status::unavailable(where + ": " + lower_first(ec.message()));
  const int listen_fd = acceptor.release(ec);
  if (ec) return Status::internal(where + ": " + lower_first(ec.message()));
  ::fcntl(listen_fd, F_SETFD, FD_CLOEXEC);

  const int wake_fd = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (wake_fd < 0) {
    const int err = errno;
    ::close(listen_fd);
    return Status::internal("http: eventfd: " + std::system_category().message(err));
  }

  std::unique_ptr<HttpServer> server(new HttpServer(options, std::move(handler), listen_fd, wake_fd, port));
  try {
    server->accept_thread_ = std::thread([s = server.get()] { s->accept_loop(); });
  } catch (const std::system_error& e) {
    return Status::internal("http: cannot start the accept thread: " + std::string(e.what()));
  }
  return server;
}

HttpServer::HttpServer(const HttpServerOptions& options, Handler handler, int listen_fd, int wake_fd, int port)
    : options_(options), handler_(std::move(handler)), listen_fd_(listen_fd), wake_fd_(wake_fd), port_(port) {}

HttpServer::~HttpServer() { stop(); }

int HttpServer::active_connections() const { return active_.load(); }

void HttpServer::stop() {
  std::lock_guard stop_lock(stop_mutex_);
  if (stopped_) return;
  stopped_ = true;
  stopping_.store(true);
  const uint64_t one = 1;
  [[maybe_unused]] const ssize_t n = ::write(wake_fd_, &one, sizeof(one));
  if (accept_thread_.joinable()) accept_thread_.join();
  {
    // Blocked reads now see EOF and blocked writes fail, so every connection thread winds down.
    std::lock_guard lock(mu_);
    for (const auto& c : connections_) {
      if (c->fd >= 0) ::shutdown(c->fd, SHUT_RDWR);
    }
  }
  reap_finished(/*all=*/true);
  ::close(listen_fd_);
  ::close(wake_fd_);
}

void HttpServer::accept_loop() {
  std::vector<Draining> draining;
  std::vector<pollfd> fds;
  while (!stopping_.load()) {
    fds.clear();
    fds.push_back({wake_fd_, POLLIN, 0});
    // Evicted connections' threads end within moments; while 2 x max_connections threads exist,
    // new connections wait in the listen backlog instead of adding threads.
    const bool saturated = active_.load() >= 2 * options_.max_connections;
    fds.push_back({saturated ? -1 : listen_fd_, POLLIN, 0});
    for (const Draining& d : draining) fds.push_back({d.fd, POLLIN, 0});
    // Wake now and then to reap finished connection threads and expire draining sockets.
    const int r = ::poll(fds.data(), fds.size(), saturated ? 10 : draining.empty() ? 1000 : 100);
    if (r < 0 && errno != EINTR) break;
    if (fds[0].revents != 0) break;  // stop()

    // Rejected connections: discard input until the client closes or the grace period ends.
    const auto now = Clock::now();
    std::vector<Draining> still;
    for (size_t i = 0; i < draining.size(); ++i) {
      bool close_it = now >= draining[i].deadline;
      if (fds[2 + i].revents != 0) {
        char scratch[4096];
        const ssize_t n = ::recv(draining[i].fd, scratch, sizeof(scratch), MSG_DONTWAIT);
        if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) close_it = true;
      }
      if (close_it) {
        ::close(draining[i].fd);
      } else {
        still.push_back(draining[i]);
      }
    }
    draining.swap(still);

    if (fds[1].revents & POLLIN) {
      sockaddr_storage peer{};
      socklen_t peer_len = sizeof(peer);
      const int fd = ::accept4(listen_fd_, reinterpret_cast<sockaddr*>(&peer), &peer_len, SOCK_CLOEXEC);
      if (fd >= 0) {
        const int on = 1;
        ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof(on));  // streamed tokens go out at once
        set_timeout(fd, SO_SNDTIMEO, options_.write_timeout);
        set_timeout(fd, SO_RCVTIMEO, options_.read_timeout);  // a backstop: reads poll() their deadline
        std::string address = address_text(peer);
        const Admission admission = admit(address);
        if (admission != Admission::Admit) {
          // Tell the client, then close once it has read the answer (or after a second).
          reject_connection(fd, admission);
          if (draining.size() < kMaxDraining) {
            draining.push_back({fd, Clock::now() + std::chrono::seconds(1)});
          } else {
            ::close(fd);
          }
        } else {
          start_connection(fd, std::move(address));
        }
      } else if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));  // out of descriptors: don't spin
      }
    }
    reap_finished(/*all=*/false);
  }
  for (const Draining& d : draining) ::close(d.fd);
}

// nginx's answer to a full connection table, kept simple: connections waiting for a request
// are "reusable" (ngx_drain_connections closes the oldest of them). Here, at a limit, the
// connection that waited longest is evicted, preferring one that never sent a complete request
// header (a flood of idle sockets) over a keep-alive client between requests. One whose request
// bytes have arrived unread, or that is serving a request, is never chosen.
HttpServer::Admission HttpServer::admit(const std::string& address) {
  std::lock_guard lock(mu_);
  int total = 0, same = 0;
  // Eviction candidates with their order key, read once: the connection threads change it.
  struct Candidate {
    HttpConnection* conn;
    bool served;
    RequestPhase::Clock::rep idle_since;
  };
  std::vector<Candidate> idle;
  for (const auto& c : connections_) {
    if (c->done.load() || c->fd < 0 || c->phase.evicted()) continue;  // winding down: not counted
    ++total;
    same += c->address == address;
    if (c->phase.idle()) idle.push_back({c.get(), c->phase.served(), c->phase.idle_since()});
  }
  std::sort(idle.begin(), idle.end(), [](const Candidate& a, const Candidate& b) {
    if (a.served != b.served) return !a.served;
    return a.idle_since < b.idle_since;
  });
  // Evicts the best candidate that `in_scope` accepts; false when there is none.
  auto evict_one = [&](auto in_scope) {
    for (Candidate& candidate : idle) {
      HttpConnection*& c = candidate.conn;
      if (c == nullptr || !in_scope(*c) || has_unread_input(c->fd) || !c->phase.evict()) continue;
      ::shutdown(c->fd, SHUT_RDWR);  // its thread wakes, sees EOF and ends quietly
      --total;
      same -= c->address == address;
      c = nullptr;
      evicted_.fetch_add(1);
      return true;
    }
    return false;
  };
  const int per_address = options_.max_connections_per_address;
  if (per_address > 0 && same >= per_address &&
      !evict_one([&](const HttpConnection& c) { return c.address == address; })) {
    return Admission::RejectAddress;
  }
  if (total >= options_.max_connections && !evict_one([](const HttpConnection&) { return true; })) {
    return Admission::RejectTotal;
  }
  return Admission::Admit;
}

void HttpServer::reject_connection(int fd, Admission why) {
  static const std::string total = error_response_bytes(503, "server is at its connection limit, retry later");
  static const std::string address = error_response_bytes(503, "too many connections from this address, retry later");
  const std::string& bytes = why == Admission::RejectAddress ? address : total;
  [[maybe_unused]] const ssize_t n = ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
  ::shutdown(fd, SHUT_WR);
}

void HttpServer::start_connection(int fd, std::string address) {
  std::lock_guard lock(mu_);
  if (stopping_.load()) {
    ::close(fd);
    return;
  }
  connections_.push_back(std::make_unique<HttpConnection>(fd, std::move(address)));
  HttpConnection* conn = connections_.back().get();
  active_.fetch_add(1);
  try {
    conn->thread = std::thread([this, conn] {
      serve_connection(conn->fd, options_, handler_, stopping_, conn->phase);
      {
        std::lock_guard lock(mu_);
        ::close(conn->fd);
        conn->fd = -1;
      }
      active_.fetch_sub(1);
      conn->done.store(true);
    });
  } catch (const std::system_error& e) {
    std::fprintf(stderr, "cellserve: http: cannot start a connection thread: %s\n", e.what());
    ::close(fd);
    connections_.pop_back();
    active_.fetch_sub(1);
  }
}

void HttpServer::reap_finished(bool all) {
  std::list<std::unique_ptr<HttpConnection>> finished;
  {
    std::lock_guard lock(mu_);
    for (auto it = connections_.begin(); it != connections_.end();) {
      auto next = std::next(it);
      if (all || (*it)->done.load()) finished.splice(finished.end(), connections_, it);
      it = next;
    }
  }
  for (auto& c : finished) {
    if (c->thread.joinable()) c->thread.join();
  }
}

}  // namespace cellserve::net
