#include "fleet/tls/name_resolution.h"

#include <ares.h>
#include <arpa/inet.h>
#include <netdb.h>
#include <poll.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <mutex>

#include <openssl/x509.h>

namespace cellserve::fleet {
namespace {

using Clock = std::chrono::steady_clock;

std::mutex servers_mu;
std::vector<std::string> configured_servers;  // guarded by servers_mu

bool is_ip(const std::string& text, int family) {
  unsigned char buf[sizeof(in6_addr)];
  return ::inet_pton(family, text.c_str(), buf) == 1;
}

bool valid_port(const std::string& digits) {
  if (digits.empty() || digits.size() > 5 || !std::all_of(digits.begin(), digits.end(), ::isdigit)) return false;
  const int port = std::stoi(digits);
  return port >= 1 && port <= 65535;
}

// "1.1.1.1", "1.1.1.1:53", "::1", "[::1]:53": what c-ares' ports CSV accepts, checked here so a
// typo is an error at start rather than a silent server c-ares skips.
bool valid_server(const std::string& s) {
  if (is_ip(s, AF_INET) || is_ip(s, AF_INET6)) return true;
  if (s.starts_with('[')) {
    const size_t close = s.find(']');
    return close != std::string::npos && is_ip(s.substr(1, close - 1), AF_INET6) &&
           (close + 1 == s.size() || (s[close + 1] == ':' && valid_port(s.substr(close + 2))));
  }
  const size_t colon = s.find(':');
  return colon != std::string::npos && is_ip(s.substr(0, colon), AF_INET) && valid_port(s.substr(colon + 1));
}

ResolvedAddress from_sockaddr(const sockaddr* sa, socklen_t len) {
  ResolvedAddress a;
  std::memcpy(&a.address, sa, std::min<size_t>(len, sizeof(a.address)));
  a.length = len;
  a.family = sa->sa_family;
  char text[INET6_ADDRSTRLEN] = {};
  const void* raw = sa->sa_family == AF_INET6
                        ? static_cast<const void*>(&reinterpret_cast<const sockaddr_in6*>(sa)->sin6_addr)
                        : static_cast<const void*>(&reinterpret_cast<const sockaddr_in*>(sa)->sin_addr);
  ::inet_ntop(sa->sa_family, raw, text, sizeof(text));
  a.text = text;
  return a;
}

// Whether glibc's resolver has anything to go on; on Android there is no such file.
bool system_resolver_configured() { return std::filesystem::exists("/etc/resolv.conf"); }

Result<std::vector<ResolvedAddress>> resolve_with_system(const std::string& host, int port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  if (const int rc = ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &res); rc != 0) {
    std::string why = host + ": " + gai_strerror(rc);
    if (!system_resolver_configured()) why += " (this system has no /etc/resolv.conf: pass --dns SERVER)";
    return Status::unavailable(why);
  }
  std::vector<ResolvedAddress> out;
  for (addrinfo* a = res; a != nullptr; a = a->ai_next) out.push_back(from_sockaddr(a->ai_addr, a->ai_addrlen));
  ::freeaddrinfo(res);
  return out;
}

struct Lookup {
  bool done = false;
  int status = ARES_SUCCESS;
  std::vector<ResolvedAddress> addresses;
};

void on_addrinfo(void* arg, int status, int /*timeouts*/, ares_addrinfo* result) {
  auto* lookup = static_cast<Lookup*>(arg);
  lookup->done = true;
  lookup->status = status;
  if (result == nullptr) return;
  for (const ares_addrinfo_node* n = result->nodes; n != nullptr; n = n->ai_next) {
    lookup->addresses.push_back(from_sockaddr(n->ai_addr, n->ai_addrlen));
  }
  ares_freeaddrinfo(result);
}

Result<std::vector<ResolvedAddress>> resolve_with_cares(const std::string& host, int port,
                                                        const std::vector<std::string>& servers,
                                                        std::chrono::milliseconds timeout) {
  static std::once_flag init;
  static int init_status = ARES_SUCCESS;
  std::call_once(init, [] { init_status = ares_library_init(ARES_LIB_INIT_ALL); });
  if (init_status != ARES_SUCCESS) return Status::internal(std::string("c-ares: ") + ares_strerror(init_status));

  ares_options options{};
  options.timeout = static_cast<int>(std::clamp<int64_t>(timeout.count() / 3, 200, 5000));  // per try, ms
  options.tries = 3;
  ares_channel channel = nullptr;
  if (const int rc = ares_init_options(&channel, &options, ARES_OPT_TIMEOUTMS | ARES_OPT_TRIES); rc != ARES_SUCCESS)
    return Status::internal(std::string("c-ares: ") + ares_strerror(rc));
  std::string csv;
  for (const std::string& s : servers) csv += (csv.empty() ? "" : ",") + s;
  if (const int rc = ares_set_servers_ports_csv(channel, csv.c_str()); rc != ARES_SUCCESS) {
    ares_destroy(channel);
    return Status::invalid_argument("--dns " + csv + ": " + ares_strerror(rc));
  }
  ares_addrinfo_hints hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  Lookup lookup;
  ares_getaddrinfo(channel, host.c_str(), std::to_string(port).c_str(), &hints, on_addrinfo, &lookup);
  const auto deadline = Clock::now() + timeout;
  while (!lookup.done) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) {
      ares_cancel(channel);  // runs the callback with ARES_ECANCELLED
      break;
    }
    ares_socket_t socks[ARES_GETSOCK_MAXNUM];
    const int bits = ares_getsock(channel, socks, ARES_GETSOCK_MAXNUM);
    pollfd fds[ARES_GETSOCK_MAXNUM];
    nfds_t n = 0;
    for (int i = 0; i < ARES_GETSOCK_MAXNUM; ++i) {
      short events = 0;
      if (ARES_GETSOCK_READABLE(bits, i)) events |= POLLIN;
      if (ARES_GETSOCK_WRITABLE(bits, i)) events |= POLLOUT;
      if (events != 0) fds[n++] = pollfd{socks[i], events, 0};
    }
    timeval tv_max{static_cast<time_t>(left / 1000), static_cast<suseconds_t>((left % 1000) * 1000)};
    timeval tv{};
    const timeval* next = ares_timeout(channel, &tv_max, &tv);
    const int wait_ms = static_cast<int>(next->tv_sec * 1000 + next->tv_usec / 1000);
    if (::poll(fds, n, std::max(wait_ms, 1)) <= 0) {
      ares_process_fd(channel, ARES_SOCKET_BAD, ARES_SOCKET_BAD);  // timeouts and retries
      continue;
    }
    for (nfds_t i = 0; i < n; ++i) {
      ares_process_fd(channel, (fds[i].revents & (POLLIN | POLLERR | POLLHUP)) ? fds[i].fd : ARES_SOCKET_BAD,
                      (fds[i].revents & POLLOUT) ? fds[i].fd : ARES_SOCKET_BAD);
    }
  }
  ares_destroy(channel);
  if (lookup.status != ARES_SUCCESS || lookup.addresses.empty()) {
    const char* why = lookup.status == ARES_ECANCELLED ? "timed out" : ares_strerror(lookup.status);
    return Status::unavailable(host + ": cannot resolve through --dns " + csv + ": " + why);
  }
  return std::move(lookup.addresses);
}

}  // namespace

Status set_dns_servers(const std::vector<std::string>& servers) {
  for (const std::string& s : servers) {
    if (!valid_server(s)) {
      return Status::invalid_argument("--dns " + s + ": expected an IP address, optionally with :PORT ([v6]:PORT)");
    }
  }
  std::lock_guard lock(servers_mu);
  configured_servers = servers;
  return {};
}

std::vector<std::string> dns_servers() {
  std::lock_guard lock(servers_mu);
  return configured_servers;
}

Result<std::vector<ResolvedAddress>> resolve_host(const std::string& host, int port,
                                                  std::chrono::milliseconds timeout) {
  if (host.empty()) return Status::invalid_argument("empty host name");
  if (port < 1 || port > 65535) return Status::invalid_argument(host + ": bad port " + std::to_string(port));
  std::vector<ResolvedAddress> out;
  const std::vector<std::string> servers = dns_servers();
  if (is_ip(host, AF_INET) || is_ip(host, AF_INET6) || servers.empty()) {
    CS_ASSIGN_OR_RETURN(out, resolve_with_system(host, port));
  } else {
    CS_ASSIGN_OR_RETURN(out, resolve_with_cares(host, port, servers, timeout));
  }
  std::stable_partition(out.begin(), out.end(), [](const ResolvedAddress& a) { return a.family == AF_INET; });
  return out;
}

std::string system_ca_file() {
  const char* file = std::getenv("SSL_CERT_FILE");
  return file != nullptr ? std::string(file) : std::string();
}

bool system_ca_store_present() {
  namespace fs = std::filesystem;
  std::error_code ec;
  const char* file = std::getenv(X509_get_default_cert_file_env());
  const char* dir = std::getenv(X509_get_default_cert_dir_env());
  const std::string f = file != nullptr ? file : X509_get_default_cert_file();
  const std::string d = dir != nullptr ? dir : X509_get_default_cert_dir();
  if (fs::is_regular_file(f, ec) && fs::file_size(f, ec) > 0) return true;
  return fs::is_directory(d, ec) && !fs::is_empty(d, ec);
}

}  // namespace cellserve::fleet
