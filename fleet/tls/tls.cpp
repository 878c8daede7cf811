#include "fleet/tls/tls.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <system_error>
#include <vector>

#include "fleet/tls/name_resolution.h"
#include "net/proxy_protocol.h"
#include "net/socket_address.h"

namespace cellserve::fleet {

std::string openssl_error() {
  const unsigned long e = ERR_get_error();
  if (e == 0) return "unknown TLS error";
  char buf[256];
  ERR_error_string_n(e, buf, sizeof(buf));
  ERR_clear_error();
  return buf;
}

namespace {

// By default OpenSSL's first initialisation registers an exit handler (OPENSSL_cleanup) that
// frees every thread's state and the library itself, under any thread still running: a
// detached tls_connect() pump ending at that moment freed its state twice (ASan, in CI), and one
// still relaying would use freed memory. Initialising first, before main, without that handler
// leaves the memory to the kernel. It must be the process's first call: later flags are ignored.
[[maybe_unused]] const bool kOpenSslWithoutExitHandler = OPENSSL_init_ssl(OPENSSL_INIT_NO_ATEXIT, nullptr) == 1;

using Clock = std::chrono::steady_clock;
constexpr size_t kMaxPending = 64 << 10;  // bytes buffered each way

void set_nonblocking(int fd) { ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK); }

void set_nodelay(int fd) {
  const int on = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof(on));
}

// OpenSSL's socket BIO writes with write(2), which raises SIGPIPE when the peer has gone (a client
// that hangs up mid-response would kill the process). This BIO is the socket BIO with its write
// replaced by send(MSG_NOSIGNAL), so a vanished peer is an EPIPE error like any other.
int send_no_signal(BIO* bio, const char* data, int len) {
  const int fd = static_cast<int>(BIO_get_fd(bio, nullptr));
  errno = 0;
  const ssize_t n = ::send(fd, data, static_cast<size_t>(len), MSG_NOSIGNAL);
  BIO_clear_retry_flags(bio);
  if (n <= 0 && BIO_sock_should_retry(static_cast<int>(n))) BIO_set_retry_write(bio);
  return static_cast<int>(n);
}

const BIO_METHOD* no_signal_socket_method() {
  static BIO_METHOD* const method = [] {
    const BIO_METHOD* socket = BIO_s_socket();
    BIO_METHOD* m =
        BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK | BIO_TYPE_DESCRIPTOR, "socket without SIGPIPE");
    BIO_meth_set_write(m, send_no_signal);
    BIO_meth_set_read(m, BIO_meth_get_read(socket));
    BIO_meth_set_puts(m, BIO_meth_get_puts(socket));
    BIO_meth_set_ctrl(m, BIO_meth_get_ctrl(socket));
    BIO_meth_set_create(m, BIO_meth_get_create(socket));
    BIO_meth_set_destroy(m, BIO_meth_get_destroy(socket));
    return m;
  }();
  return method;
}

// SSL_set_fd with the BIO above; the caller still owns (and closes) the descriptor.
bool attach_socket(SSL* ssl, int fd) {
  BIO* bio = BIO_new(no_signal_socket_method());
  if (bio == nullptr) return false;
  BIO_set_fd(bio, fd, BIO_NOCLOSE);
  SSL_set_bio(ssl, bio, bio);
  return true;
}

// After an SSL call on a non-blocking socket returned `r` (not a success): waits until the socket
// is ready for what the call wants, at most until `deadline`. False on an error, the deadline or a
// failed poll; true when the call should be made again.
bool await_retry(SSL* ssl, int fd, int r, Clock::time_point deadline) {
  const int e = SSL_get_error(ssl, r);
  if (e != SSL_ERROR_WANT_READ && e != SSL_ERROR_WANT_WRITE) return false;
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  if (left <= 0) return false;
  pollfd p{fd, static_cast<short>(e == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT), 0};
  return ::poll(&p, 1, static_cast<int>(left)) > 0;
}

// Drives SSL_accept / SSL_connect on a non-blocking socket until done or the deadline.
bool handshake(SSL* ssl, int fd, bool server, Clock::time_point deadline) {
  for (;;) {
    const int r = server ? SSL_accept(ssl) : SSL_connect(ssl);
    if (r == 1) return true;
    if (!await_retry(ssl, fd, r, deadline)) return false;
  }
}

// Deadlines of a pump; zero: none.
struct PumpLimits {
  std::chrono::milliseconds write_timeout{0};  // pending bytes that move nowhere this long
  std::chrono::milliseconds idle_timeout{0};   // nothing moving either way this long
};

// Relays bytes between the TLS connection and the plain socket until either side closes or
// fails, or a deadline of `limits` passes. `to_plain` holds bytes already read from the TLS
// side. Both descriptors must be non-blocking. One thread, so the SSL object is never used
// concurrently (OpenSSL does not allow reading and writing one SSL from two threads).
void pump(SSL* ssl, int tls_fd, int plain_fd, const PumpLimits& limits, std::string to_plain = {}) {
  std::string to_tls;
  size_t tls_write_len = 0;  // a retried SSL_write must repeat its length
  bool tls_eof = false, plain_eof = false;
  char buf[16384];
  auto last_progress = Clock::now();
  for (;;) {
    bool tls_want_read = false, tls_want_write = false, progress = true, moved = false;
    while (progress) {
      progress = false;
      while (!tls_eof && to_plain.size() < kMaxPending) {
        const int n = SSL_read(ssl, buf, sizeof(buf));
        if (n > 0) {
          to_plain.append(buf, static_cast<size_t>(n));
          progress = true;
          continue;
        }
        const int e = SSL_get_error(ssl, n);
        if (e == SSL_ERROR_WANT_READ) {
          tls_want_read = true;
        } else if (e == SSL_ERROR_WANT_WRITE) {
          tls_want_write = true;
        } else {
          tls_eof = true;  // close_notify, a reset or a protocol error: the peer is done
        }
        break;
      }
      if (!to_plain.empty()) {
        const ssize_t n = ::send(plain_fd, to_plain.data(), to_plain.size(), MSG_NOSIGNAL);
        if (n > 0) {
          to_plain.erase(0, static_cast<size_t>(n));
          progress = true;
        } else if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
          return;
        }
      }
      while (!plain_eof && to_tls.size() < kMaxPending) {
        const ssize_t n = ::recv(plain_fd, buf, sizeof(buf), 0);
        if (n > 0) {
          to_tls.append(buf, static_cast<size_t>(n));
          progress = true;
        } else if (n == 0) {
          plain_eof = true;
        } else if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
          plain_eof = true;
        }
        if (n <= 0) break;
      }
      if (!to_tls.empty()) {
        if (tls_write_len == 0) tls_write_len = std::min<size_t>(to_tls.size(), INT_MAX);
        const int n = SSL_write(ssl, to_tls.data(), static_cast<int>(tls_write_len));
        if (n > 0) {
          to_tls.erase(0, static_cast<size_t>(n));
          tls_write_len = 0;
          progress = true;
        } else {
          const int e = SSL_get_error(ssl, n);
          if (e == SSL_ERROR_WANT_READ) {
            tls_want_read = true;
          } else if (e == SSL_ERROR_WANT_WRITE) {
            tls_want_write = true;
          } else {
            return;
          }
        }
      }
      moved = moved || progress;
    }
    if ((tls_eof && to_plain.empty()) || (plain_eof && to_tls.empty())) {
      if (plain_eof) SSL_shutdown(ssl);  // best effort close_notify
      return;
    }
    // Bytes waiting on a side that does not take them are a stalled writer; otherwise idle.
    const auto now = Clock::now();
    if (moved) last_progress = now;
    const bool pending = !to_plain.empty() || !to_tls.empty();
    const auto limit = pending ? limits.write_timeout : limits.idle_timeout;
    int wait_ms = -1;
    if (limit.count() > 0) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(last_progress + limit - now).count();
      if (left <= 0) return;
      wait_ms = static_cast<int>(std::min<long long>(left, INT_MAX));
    }
    pollfd fds[2] = {{tls_fd, 0, 0}, {plain_fd, 0, 0}};
    if (tls_want_read) fds[0].events |= POLLIN;
    if (tls_want_write) fds[0].events |= POLLOUT;
    if (!plain_eof && to_tls.size() < kMaxPending) fds[1].events |= POLLIN;
    if (!to_plain.empty()) fds[1].events |= POLLOUT;
    if (::poll(fds, 2, wait_ms) < 0 && errno != EINTR) return;
    for (const pollfd& p : fds) {
      if (p.revents & (POLLERR | POLLNVAL)) return;
      // A hang-up on a side we are not reading from: nothing will make progress there again.
      if ((p.revents & POLLHUP) && !(p.events & POLLIN)) return;
    }
  }
}

// Reads the first application bytes into `out`; false when the peer closes, fails or is too
// slow (deadline).
bool read_first(SSL* ssl, int fd, Clock::time_point deadline, std::string& out) {
  char buf[16384];
  for (;;) {
    const int n = SSL_read(ssl, buf, sizeof(buf));
    if (n > 0) {
      out.assign(buf, static_cast<size_t>(n));
      return true;
    }
    if (!await_retry(ssl, fd, n, deadline)) return false;
  }
}

bool is_ip_address(const std::string& host) {
  in6_addr a6;
  in_addr a4;
  return ::inet_pton(AF_INET, host.c_str(), &a4) == 1 || ::inet_pton(AF_INET6, host.c_str(), &a6) == 1;
}

}  // namespace

Result<int> connect_tcp(const std::string& host, int port, std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  CS_ASSIGN_OR_RETURN(const std::vector<ResolvedAddress> addresses, resolve_host(host, port, timeout));
  std::string why = "no address";
  for (const ResolvedAddress& a : addresses) {
    const int fd = ::socket(a.family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) continue;
    // Non-blocking, so an address that never answers costs the deadline, not the kernel's minutes.
    int rc = ::connect(fd, reinterpret_cast<const sockaddr*>(&a.address), a.length);
    if (rc != 0 && errno == EINPROGRESS) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
      pollfd p{fd, POLLOUT, 0};
      int err = ETIMEDOUT;
      if (left > 0 && ::poll(&p, 1, static_cast<int>(left)) == 1) {
        socklen_t len = sizeof(err);
        ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
      }
      rc = err == 0 ? 0 : -1;
      errno = err;
    }
    if (rc == 0) {
      ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
      set_nodelay(fd);
      return fd;
    }
    why = a.text + ": " + std::strerror(errno);
    ::close(fd);
  }
  return Status::unavailable("cannot connect to " + host + ":" + std::to_string(port) + " (" + why + ")");
}

TlsContext::~TlsContext() { SSL_CTX_free(ctx_); }

Result<std::shared_ptr<TlsContext>> TlsContext::server(const std::string& cert_file, const std::string& key_file) {
  SSL_CTX* ctx = SSL_CTX_new(TLS_server_method());
  if (ctx == nullptr) return Status::internal("TLS: " + openssl_error());
  auto owned = std::shared_ptr<TlsContext>(new TlsContext(ctx));
  SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
  SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  if (SSL_CTX_use_certificate_chain_file(ctx, cert_file.c_str()) != 1) {
    return Status::invalid_argument("--tls-cert " + cert_file + ": " + openssl_error());
  }
  if (SSL_CTX_use_PrivateKey_file(ctx, key_file.c_str(), SSL_FILETYPE_PEM) != 1) {
    return Status::invalid_argument("--tls-key " + key_file + ": " + openssl_error());
  }
  if (SSL_CTX_check_private_key(ctx) != 1) {
    return Status::invalid_argument("--tls-key " + key_file + " does not match --tls-cert " + cert_file);
  }
  return owned;
}

Result<std::shared_ptr<TlsContext>> TlsContext::client(const std::string& ca_file) {
  SSL_CTX* ctx = SSL_CTX_new(TLS_client_method());
  if (ctx == nullptr) return Status::internal("TLS: " + openssl_error());
  auto owned = std::shared_ptr<TlsContext>(new TlsContext(ctx));
  SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
  SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nullptr);
  if (ca_file.empty() && !system_ca_store_present()) {
    // A glibc build on Android finds no CA bundle where OpenSSL looks, and would only fail later
    // at the handshake with "unable to get local issuer certificate".
    return Status::invalid_argument(
        "no CA certificates in the system store (set SSL_CERT_FILE, or pass --hub-ca FILE)");
  }
  const int ok = ca_file.empty() ? SSL_CTX_set_default_verify_paths(ctx)
                                 : SSL_CTX_load_verify_locations(ctx, ca_file.c_str(), nullptr);
  if (ok != 1) return Status::invalid_argument("CA file " + ca_file + ": " + openssl_error());
  return owned;
}

Result<int> tls_connect(const std::string& host, int port, const std::shared_ptr<TlsContext>& ctx,
                        std::chrono::seconds timeout) {
  CS_ASSIGN_OR_RETURN(const int tcp, connect_tcp(host, port, timeout));
  SSL* ssl = SSL_new(ctx->get());
  if (ssl == nullptr) {
    ::close(tcp);
    return Status::internal("TLS: " + openssl_error());
  }
  if (!attach_socket(ssl, tcp)) {
    SSL_free(ssl);
    ::close(tcp);
    return Status::internal("TLS: " + openssl_error());
  }
  if (is_ip_address(host)) {
    X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), host.c_str());
  } else {
    SSL_set_tlsext_host_name(ssl, host.c_str());
    SSL_set1_host(ssl, host.c_str());
  }
  set_nonblocking(tcp);
  if (!handshake(ssl, tcp, /*server=*/false, Clock::now() + timeout)) {
    const long verify = SSL_get_verify_result(ssl);
    const std::string reason = verify != X509_V_OK ? X509_verify_cert_error_string(verify) : openssl_error();
    SSL_free(ssl);
    ::close(tcp);
    if (verify != X509_V_OK) {
      return Status(StatusCode::Unauthenticated, host + ":" + std::to_string(port) + ": TLS certificate: " + reason +
                                                     " (is --hub-ca the CA that signed it?)");
    }
    return Status::unavailable(host + ":" + std::to_string(port) + ": TLS handshake failed: " + reason);
  }
  int pair[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) != 0) {
    SSL_free(ssl);
    ::close(tcp);
    return Status::internal(std::string("socketpair: ") + std::strerror(errno));
  }
  set_nonblocking(pair[0]);
  // The pump owns the TLS side; it ends when the caller closes pair[1] or the hub goes away.
  std::thread([ssl, tcp, plain = pair[0]] {
    // A hub that stops reading ends the relay (and so the tunnel, which reconnects).
    pump(ssl, tcp, plain, PumpLimits{std::chrono::seconds(30), {}});
    SSL_free(ssl);
    ::close(tcp);
    ::close(plain);
  }).detach();
  return pair[1];
}

Result<std::unique_ptr<TlsTerminator>> TlsTerminator::start(const std::string& host, int port,
                                                            std::shared_ptr<TlsContext> ctx, int target_port,
                                                            std::function<void(const std::string&)> log,
                                                            const TlsTerminatorOptions& options) {
  if (options.max_connections < 1 || options.max_connections_per_address < 0 || options.handshake_timeout.count() < 1 ||
      options.write_timeout.count() < 1 || options.idle_timeout.count() < 1) {
    return Status::invalid_argument("TLS: bad terminator limits");
  }
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  addrinfo* res = nullptr;
  if (const int rc = ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &res); rc != 0) {
    return Status::invalid_argument(host + ": " + gai_strerror(rc));
  }
  int fd = ::socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  const int on = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on));
  if (fd < 0 || ::bind(fd, res->ai_addr, res->ai_addrlen) != 0 || ::listen(fd, SOMAXCONN) != 0) {
    const std::string why = std::strerror(errno);
    ::freeaddrinfo(res);
    if (fd >= 0) ::close(fd);
    return Status::unavailable(host + ":" + std::to_string(port) + ": " + why);
  }
  ::freeaddrinfo(res);
  sockaddr_storage bound{};
  socklen_t len = sizeof(bound);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &len);
  auto t = std::unique_ptr<TlsTerminator>(new TlsTerminator());
  t->port_ = ntohs(bound.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port
                                               : reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
  t->listen_fd_ = fd;
  t->wake_fd_ = ::eventfd(0, EFD_CLOEXEC);
  t->ctx_ = std::move(ctx);
  t->target_port_ = target_port;
  t->options_ = options;
  t->log_ = std::move(log);
  TlsTerminator* raw = t.get();
  t->accept_thread_ = std::thread([raw] { raw->accept_loop(); });
  return t;
}

void TlsTerminator::accept_loop() {
  std::chrono::milliseconds pause{0};  // out of descriptors: wait this long before accepting again
  while (!stopping_.load()) {
    pollfd fds[2] = {{wake_fd_, POLLIN, 0}, {listen_fd_, POLLIN, 0}};
    // Evicted connections' threads end within moments; while 2 x max_connections threads exist,
    // new connections wait in the listen backlog instead of adding threads.
    // Tunnels are bounded by the hub (HubOptions::max_agents), not here.
    if (pause.count() == 0 && active_.load() - tunnels_.load() >= 2 * options_.max_connections) {
      pause = std::chrono::milliseconds(10);
    }
    const int n_fds = pause.count() > 0 ? 1 : 2;
    if (::poll(fds, n_fds, pause.count() > 0 ? static_cast<int>(pause.count()) : 1000) < 0 && errno != EINTR) break;
    if (fds[0].revents != 0) break;
    pause = std::chrono::milliseconds(0);
    {
      // Reap finished connections.
      std::lock_guard lock(mu_);
      for (auto it = connections_.begin(); it != connections_.end();) {
        if ((*it)->done.load()) {
          (*it)->thread.join();
          it = connections_.erase(it);
        } else {
          ++it;
        }
      }
    }
    if (n_fds < 2 || !(fds[1].revents & POLLIN)) continue;
    sockaddr_storage peer{};
    socklen_t peer_len = sizeof(peer);
    const int fd = ::accept4(listen_fd_, reinterpret_cast<sockaddr*>(&peer), &peer_len, SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
        // The pending connection stays queued and the listener readable: pause rather than spin.
        log_limited(std::string("TLS: cannot accept (") + std::strerror(errno) + "), pausing accepts");
        pause = std::chrono::milliseconds(100);
      }
      continue;
    }
    auto conn = std::make_unique<Connection>();
    conn->fd = fd;
    conn->address = net::address_text(peer);
    conn->accepted = Clock::now();
    if (!admit(conn->address)) {
      ::close(fd);  // no TLS yet to say why: the client sees the connection close
      continue;
    }
    set_nodelay(fd);
    set_nonblocking(fd);
    Connection* c = conn.get();
    std::lock_guard lock(mu_);
    if (stopping_.load()) {
      ::close(fd);
      break;
    }
    try {
      c->thread = std::thread([this, c] {
        serve(c);
        {
          std::lock_guard lock(mu_);
          ::close(c->fd);
          c->fd = -1;
          if (c->phase.load() == Connection::kTunnel) tunnels_.fetch_sub(1);
        }
        active_.fetch_sub(1);
        c->done.store(true);
      });
    } catch (const std::system_error& e) {
      ::close(fd);
      log_limited(std::string("TLS: cannot start a connection thread: ") + e.what());
      continue;
    }
    active_.fetch_add(1);
    connections_.push_back(std::move(conn));
  }
}

// As in net::HttpServer: at a limit, the oldest connection that has not sent application data
// yet (a socket that never handshakes, or handshakes and says nothing) makes room; a relaying
// connection is never evicted. An authenticated tunnel (mark_tunnel) counts against neither
// limit, as behind a plain listener, where the HTTP server lets go of an upgraded connection.
bool TlsTerminator::admit(const std::string& address) {
  std::lock_guard lock(mu_);
  int total = 0, same = 0;
  std::vector<Connection*> waiting;  // oldest first: connections_ is in accept order
  for (const auto& c : connections_) {
    if (c->done.load()) continue;
    const int phase = c->phase.load();
    if (c->fd < 0 || phase == Connection::kEvicted || phase == Connection::kTunnel) continue;
    ++total;
    same += c->address == address;
    if (phase == Connection::kWaiting) waiting.push_back(c.get());
  }
  auto evict_one = [&](bool same_address) {
    for (Connection*& c : waiting) {
      if (c == nullptr || (same_address && c->address != address)) continue;
      int expected = Connection::kWaiting;
      if (!c->phase.compare_exchange_strong(expected, Connection::kEvicted)) continue;
      ::shutdown(c->fd, SHUT_RDWR);  // its handshake or first read fails at once
      --total;
      same -= c->address == address;
      c = nullptr;
      evicted_.fetch_add(1);
      return true;
    }
    return false;
  };
  const int per_address = options_.max_connections_per_address;
  if (per_address > 0 && same >= per_address && !evict_one(/*same_address=*/true)) return false;
  if (total >= options_.max_connections && !evict_one(/*same_address=*/false)) return false;
  return true;
}

// One connection: the handshake and the first application bytes within handshake_timeout, then
// (only then) a backend connection and the relay.
void TlsTerminator::set_context(std::shared_ptr<TlsContext> ctx) {
  std::lock_guard lock(ctx_mu_);
  ctx_ = std::move(ctx);
}

void TlsTerminator::serve(Connection* c) {
  std::shared_ptr<TlsContext> ctx;
  {
    std::lock_guard lock(ctx_mu_);
    ctx = ctx_;
  }
  SSL* ssl = SSL_new(ctx->get());  // holds its own reference to the SSL_CTX
  if (ssl == nullptr) return;
  const auto deadline = c->accepted + options_.handshake_timeout;
  std::string first;
  if (attach_socket(ssl, c->fd) && handshake(ssl, c->fd, /*server=*/true, deadline) &&
      read_first(ssl, c->fd, deadline, first)) {
    int expected = Connection::kWaiting;
    if (c->phase.compare_exchange_strong(expected, Connection::kRelaying)) {
      if (auto plain = connect_tcp("127.0.0.1", target_port_); plain.ok()) {
        set_nonblocking(*plain);
        c->backend_port.store(net::local_port(*plain));
        if (options_.send_proxy_header) first.insert(0, net::proxy_v1_header(c->fd));
        pump(ssl, c->fd, *plain, PumpLimits{options_.write_timeout, options_.idle_timeout}, std::move(first));
        c->backend_port.store(0);  // the port may be another connection's once closed
        ::close(*plain);
      } else {
        log_limited("TLS: " + plain.status().message());
      }
    }
  }
  SSL_free(ssl);
}

bool TlsTerminator::mark_tunnel(int backend_port) {
  if (backend_port <= 0) return false;
  const int port = backend_port;
  std::lock_guard lock(mu_);
  for (const auto& c : connections_) {
    // A connection whose thread is ending (its fd closed under mu_) is not marked: the count it
    // would add could never be taken back.
    if (c->done.load() || c->fd < 0 || c->backend_port.load() != port) continue;
    int expected = Connection::kRelaying;
    if (!c->phase.compare_exchange_strong(expected, Connection::kTunnel)) continue;
    tunnels_.fetch_add(1);
    return true;
  }
  return false;
}

// At most one line a second, so a flood or a descriptor shortage cannot flood the log.
void TlsTerminator::log_limited(const std::string& line) {
  if (!log_) return;
  std::lock_guard lock(log_mu_);
  const auto now = Clock::now();
  if (now - last_log_ < std::chrono::seconds(1)) return;
  last_log_ = now;
  log_(line);
}

void TlsTerminator::stop() {
  if (stopping_.exchange(true)) return;
  const uint64_t one = 1;
  [[maybe_unused]] const ssize_t n = ::write(wake_fd_, &one, sizeof(one));
  if (accept_thread_.joinable()) accept_thread_.join();
  std::list<std::unique_ptr<Connection>> all;
  {
    std::lock_guard lock(mu_);
    for (auto& c : connections_) {
      if (c->fd >= 0) ::shutdown(c->fd, SHUT_RDWR);
    }
    all.swap(connections_);
  }
  for (auto& c : all) c->thread.join();
  ::close(listen_fd_);
  ::close(wake_fd_);
}

TlsTerminator::~TlsTerminator() { stop(); }

}  // namespace cellserve::fleet
