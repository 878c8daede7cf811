#include "net/http_server.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <system_error>
#include <utility>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>

#include "net/http_connection.h"

namespace cellserve::net {

// One accepted connection and the thread serving it.
class HttpConnection {
 public:
  explicit HttpConnection(int fd) : fd(fd) {}
  int fd;  // guarded by HttpServer::mu_; -1 once closed
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
  if (!handler) return Status::invalid_argument("http: no request handler");
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
    fds.push_back({listen_fd_, POLLIN, 0});
    for (const Draining& d : draining) fds.push_back({d.fd, POLLIN, 0});
    // Wake now and then to reap finished connection threads and expire draining sockets.
    const int r = ::poll(fds.data(), fds.size(), draining.empty() ? 1000 : 100);
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
      const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd >= 0) {
        const int on = 1;
        ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof(on));  // streamed tokens go out at once
        set_timeout(fd, SO_SNDTIMEO, options_.write_timeout);
        set_timeout(fd, SO_RCVTIMEO, options_.read_timeout);  // a backstop: reads poll() their deadline
        if (active_.load() >= options_.max_connections) {
          // Tell the client, then close once it has read the answer (or after a second).
          reject_connection(fd);
          if (draining.size() < kMaxDraining) {
            draining.push_back({fd, Clock::now() + std::chrono::seconds(1)});
          } else {
            ::close(fd);
          }
        } else {
          start_connection(fd);
        }
      } else if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));  // out of descriptors: don't spin
      }
    }
    reap_finished(/*all=*/false);
  }
  for (const Draining& d : draining) ::close(d.fd);
}

void HttpServer::reject_connection(int fd) {
  static const std::string bytes = error_response_bytes(503, "server is at its connection limit, retry later");
  [[maybe_unused]] const ssize_t n = ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
  ::shutdown(fd, SHUT_WR);
}

void HttpServer::start_connection(int fd) {
  std::lock_guard lock(mu_);
  if (stopping_.load()) {
    ::close(fd);
    return;
  }
  connections_.push_back(std::make_unique<HttpConnection>(fd));
  HttpConnection* conn = connections_.back().get();
  active_.fetch_add(1);
  try {
    conn->thread = std::thread([this, conn] {
      serve_connection(conn->fd, options_, handler_, stopping_);
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
