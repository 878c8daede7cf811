// TLS pumps over real sockets: a terminator in front of an HTTP server, tls_connect() as the
// client, certificate checks, large bodies both ways, and a hub + agent over HTTPS.
#include "fleet/tls/tls.h"
#include "fleet/tls/dev_cert.h"
#include "fleet/tls/name_resolution.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <future>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <boost/json.hpp>
#include "tests/support/sockets.h"

#include "fleet/agent/agent.h"
#include "fleet/crypto/identity.h"
#include "fleet/hub/hub.h"
#include "fleet/spec/agent_protocol.h"
#include "net/http_server.h"
#include "net/socket_address.h"

namespace cellserve::fleet {
namespace {

using cellserve::testing::closed_within;
using cellserve::testing::raise_fd_limit;

namespace fs = std::filesystem;
using namespace std::chrono_literals;

// A self-signed certificate for 127.0.0.1 and localhost, written as PEM files.
void write_self_signed(const std::string& cert_path, const std::string& key_path, const std::string& cn) {
  EVP_PKEY* key = EVP_EC_gen("P-256");
  X509* x = X509_new();
  ASN1_INTEGER_set(X509_get_serialNumber(x), 1);
  X509_gmtime_adj(X509_getm_notBefore(x), -60);
  X509_gmtime_adj(X509_getm_notAfter(x), 3600);
  X509_set_pubkey(x, key);
  X509_NAME* name = X509_get_subject_name(x);
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, reinterpret_cast<const unsigned char*>(cn.c_str()), -1, -1, 0);
  X509_set_issuer_name(x, name);
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, x, x, nullptr, nullptr, 0);
  X509_EXTENSION* san = X509V3_EXT_conf_nid(nullptr, &ctx, NID_subject_alt_name, "IP:127.0.0.1,DNS:localhost");
  X509_add_ext(x, san, -1);
  X509_EXTENSION_free(san);
  X509_sign(x, key, EVP_sha256());
  FILE* f = std::fopen(cert_path.c_str(), "w");
  PEM_write_X509(f, x);
  std::fclose(f);
  f = std::fopen(key_path.c_str(), "w");
  PEM_write_PrivateKey(f, key, nullptr, nullptr, 0, nullptr, nullptr);
  std::fclose(f);
  X509_free(x);
  EVP_PKEY_free(key);
}

class TlsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("cs-tls-" + random_hex(6));
    fs::create_directories(dir_);
    cert_ = (dir_ / "cert.pem").string();
    key_ = (dir_ / "key.pem").string();
    write_self_signed(cert_, key_, "cellserve-test");
    write_self_signed((dir_ / "other.pem").string(), (dir_ / "other-key.pem").string(), "someone-else");
  }
  void TearDown() override { fs::remove_all(dir_); }

  fs::path dir_;
  std::string cert_, key_;
};

bool send_all(int fd, const std::string& data) {
  size_t sent = 0;
  while (sent < data.size()) {
    const ssize_t n = ::send(fd, data.data() + sent, data.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) return false;
    sent += static_cast<size_t>(n);
  }
  return true;
}

std::string read_until_close(int fd) {
  std::string out;
  char buf[65536];
  for (;;) {
    const ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
    if (n <= 0) return out;
    out.append(buf, static_cast<size_t>(n));
  }
}

TEST_F(TlsTest, ADevCertificateIsMadeOnceAndTrustedAsItsOwnCa) {
  const std::string dir = (dir_ / "dev").string();
  auto made = ensure_dev_certificate(dir, {"hub.example", "10.0.0.7", "0.0.0.0"});
  ASSERT_TRUE(made.ok()) << made.status().to_string();
  EXPECT_TRUE(made->created);
  struct stat st {};
  ASSERT_EQ(::stat(made->key_file.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u) << "the key is readable by others";
  EXPECT_EQ(made->fingerprint.size(), 95u);  // 32 bytes as XX:XX:...
  EXPECT_EQ(*certificate_fingerprint(made->cert_file), made->fingerprint);
  auto again = ensure_dev_certificate(dir, {});
  ASSERT_TRUE(again.ok());
  EXPECT_FALSE(again->created) << "a valid certificate is kept";
  EXPECT_EQ(again->fingerprint, made->fingerprint);
  // Its names: the extra ones (not the wildcard address) beside localhost and loopback.
  FILE* f = std::fopen(made->cert_file.c_str(), "r");
  ASSERT_NE(f, nullptr);
  X509* x = PEM_read_X509(f, nullptr, nullptr, nullptr);
  std::fclose(f);
  ASSERT_NE(x, nullptr);
  EXPECT_EQ(X509_check_host(x, "hub.example", 0, 0, nullptr), 1);
  EXPECT_EQ(X509_check_host(x, "localhost", 0, 0, nullptr), 1);
  EXPECT_EQ(X509_check_ip_asc(x, "10.0.0.7", 0), 1);
  EXPECT_EQ(X509_check_ip_asc(x, "127.0.0.1", 0), 1);
  EXPECT_NE(X509_check_ip_asc(x, "0.0.0.0", 0), 1);
  X509_free(x);
  // A terminator serving it; a client that trusts only that file connects, over 127.0.0.1.
  auto server = TlsContext::server(made->cert_file, made->key_file);
  ASSERT_TRUE(server.ok()) << server.status().to_string();
  auto client = TlsContext::client(made->cert_file);
  ASSERT_TRUE(client.ok()) << client.status().to_string();
  auto terminator = TlsTerminator::start("127.0.0.1", 0, *server, 9, [](const std::string&) {});
  ASSERT_TRUE(terminator.ok()) << terminator.status().to_string();
  auto fd = tls_connect("127.0.0.1", (*terminator)->port(), *client, std::chrono::seconds(5));
  EXPECT_TRUE(fd.ok()) << fd.status().to_string();
  if (fd.ok()) ::close(*fd);
  // After set_context with another certificate, new clients must trust that one instead.
  auto other = TlsContext::server((dir_ / "other.pem").string(), (dir_ / "other-key.pem").string());
  ASSERT_TRUE(other.ok());
  (*terminator)->set_context(*other);
  auto refused = tls_connect("127.0.0.1", (*terminator)->port(), *client, std::chrono::seconds(5));
  EXPECT_FALSE(refused.ok());
  if (refused.ok()) ::close(*refused);
  (*terminator)->stop();
}

TEST_F(TlsTest, RelaysHttpBothWaysWithLargeBodies) {
  auto http =
      net::HttpServer::start({.host = "127.0.0.1", .port = 0}, [](const net::HttpRequest& req, net::ResponseWriter& w) {
        w.send(200, "text/plain", std::to_string(req.body.size()) + ":" + std::string(3 << 20, 'r'));
      });
  ASSERT_TRUE(http.ok());
  auto server_ctx = TlsContext::server(cert_, key_);
  ASSERT_TRUE(server_ctx.ok()) << server_ctx.status().to_string();
  auto terminator = TlsTerminator::start("127.0.0.1", 0, *server_ctx, (*http)->port(), {});
  ASSERT_TRUE(terminator.ok()) << terminator.status().to_string();
  auto client_ctx = TlsContext::client(cert_);
  ASSERT_TRUE(client_ctx.ok());
  auto fd = tls_connect("127.0.0.1", (*terminator)->port(), *client_ctx, 5s);
  ASSERT_TRUE(fd.ok()) << fd.status().to_string();
  const std::string body(1 << 20, 'q');
  ASSERT_TRUE(send_all(*fd, "POST /x HTTP/1.1\r\nHost: a\r\nConnection: close\r\nContent-Length: " +
                                std::to_string(body.size()) + "\r\n\r\n" + body));
  const std::string reply = read_until_close(*fd);
  ::close(*fd);
  EXPECT_EQ(reply.rfind("HTTP/1.1 200", 0), 0u) << reply.substr(0, 200);
  const size_t start = reply.find("\r\n\r\n");
  ASSERT_NE(start, std::string::npos);
  EXPECT_EQ(reply.size() - start - 4, std::string("1048576:").size() + (3u << 20));
  EXPECT_NE(reply.find("1048576:rrr"), std::string::npos);
  (*terminator)->stop();
  (*http)->stop();
}

// A client that hangs up while the terminator is still sending must end that relay with EPIPE,
// never kill the process with SIGPIPE (OpenSSL's own socket BIO writes with write(2)).
TEST_F(TlsTest, AClientThatHangsUpMidResponseDoesNotRaiseSigpipe) {
  auto http = net::HttpServer::start(
      {.host = "127.0.0.1", .port = 0},
      [](const net::HttpRequest&, net::ResponseWriter& w) { w.send(200, "text/plain", std::string(8 << 20, 'r')); });
  ASSERT_TRUE(http.ok());
  auto terminator = TlsTerminator::start("127.0.0.1", 0, *TlsContext::server(cert_, key_), (*http)->port(), {});
  ASSERT_TRUE(terminator.ok());
  auto client_ctx = TlsContext::client(cert_);
  ASSERT_TRUE(client_ctx.ok());
  for (int i = 0; i < 20; ++i) {
    // Raw TLS on the client side too, so the client's close is a TCP close with unread data (a
    // reset) while the terminator is mid-body.
    auto tcp = connect_tcp("127.0.0.1", (*terminator)->port());
    ASSERT_TRUE(tcp.ok());
    SSL* ssl = SSL_new((*client_ctx)->get());
    SSL_set_fd(ssl, *tcp);
    ASSERT_EQ(SSL_connect(ssl), 1);
    const std::string request = "GET / HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n";
    ASSERT_EQ(SSL_write(ssl, request.data(), static_cast<int>(request.size())), static_cast<int>(request.size()));
    char buf[4096];
    ASSERT_GT(SSL_read(ssl, buf, sizeof(buf)), 0);
    SSL_free(ssl);
    ::close(*tcp);
  }
  // The terminator still serves after those resets.
  auto fd = tls_connect("127.0.0.1", (*terminator)->port(), *client_ctx, 5s);
  ASSERT_TRUE(fd.ok()) << fd.status().to_string();
  ASSERT_TRUE(send_all(*fd, "GET / HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n"));
  EXPECT_EQ(read_until_close(*fd).rfind("HTTP/1.1 200", 0), 0u);
  ::close(*fd);
  (*terminator)->stop();
  (*http)->stop();
}

TEST_F(TlsTest, RefusesAnUntrustedCertificateOrAWrongName) {
  auto http = net::HttpServer::start({.host = "127.0.0.1", .port = 0},
                                     [](const net::HttpRequest&, net::ResponseWriter& w) { w.send(200, "", ""); });
  ASSERT_TRUE(http.ok());
  auto terminator = TlsTerminator::start("127.0.0.1", 0, *TlsContext::server(cert_, key_), (*http)->port(), {});
  ASSERT_TRUE(terminator.ok());
  auto untrusted = TlsContext::client((dir_ / "other.pem").string());
  ASSERT_TRUE(untrusted.ok());
  auto fd = tls_connect("127.0.0.1", (*terminator)->port(), *untrusted, 5s);
  ASSERT_FALSE(fd.ok());
  EXPECT_EQ(fd.status().code(), StatusCode::Unauthenticated) << fd.status().to_string();
  // The right CA, but the certificate is not for this address.
  auto wrong_name = tls_connect("127.0.0.2", (*terminator)->port(), *TlsContext::client(cert_), 5s);
  EXPECT_FALSE(wrong_name.ok());
  // Plain HTTP to the TLS port gets no HTTP answer: the handshake fails and the connection closes.
  {
    const int plain = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>((*terminator)->port()));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ASSERT_EQ(::connect(plain, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
    ASSERT_TRUE(send_all(plain, "GET / HTTP/1.1\r\nHost: a\r\n\r\n"));
    EXPECT_EQ(read_until_close(plain).find("HTTP/1.1"), std::string::npos);
    ::close(plain);
  }
  EXPECT_FALSE(TlsContext::server(cert_, (dir_ / "other-key.pem").string()).ok());
  EXPECT_FALSE(TlsContext::server((dir_ / "missing.pem").string(), key_).ok());
  EXPECT_FALSE(TlsContext::client((dir_ / "missing.pem").string()).ok());
}

// Stands for a detached tls_connect() pump that is still ending when the process exits. Built
// before main, so destroyed after any exit handler OpenSSL registers later: it lets its thread
// end only after that handler would have run, then checks that OpenSSL is still there.
struct ThreadEndingAtExit {
  std::thread thread;
  int release[2] = {-1, -1};
  ~ThreadEndingAtExit() {
    if (!thread.joinable()) return;
    ::close(release[1]);
    thread.join();  // its thread-local OpenSSL state is freed now; a second free aborts
    if (OPENSSL_init_crypto(0, nullptr) != 1) std::_Exit(3);  // OPENSSL_cleanup ran under it
  }
};
ThreadEndingAtExit thread_ending_at_exit;

// OpenSSL's own exit handler (OPENSSL_cleanup) frees every thread's state and the library
// under threads that are still running: a pump ending at that moment freed its state twice
// (ASan, in CI). The process leaves that memory to the kernel instead.
TEST(TlsAtExit, APumpEndingAfterExitBeganFindsOpenSslIntact) {
  EXPECT_EXIT(
      {
        if (::pipe(thread_ending_at_exit.release) != 0) std::_Exit(4);
        std::promise<void> used;
        thread_ending_at_exit.thread = std::thread([&used, fd = thread_ending_at_exit.release[0]] {
          unsigned char bytes[16];
          RAND_bytes(bytes, sizeof(bytes));                         // a per-thread random generator
          const bool ok = TlsContext::client("/missing.pem").ok();  // and a per-thread error queue
          used.set_value();
          char c;
          while (::read(fd, &c, 1) > 0) {}
          if (ok) std::_Exit(5);
        });
        used.get_future().wait();
        std::exit(0);
      },
      ::testing::ExitedWithCode(0), "");
}

// Sets an environment variable for one scope, restoring what was there.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::string& value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    ::setenv(name, value.c_str(), 1);
  }
  ~ScopedEnv() { old_ ? ::setenv(name_, old_->c_str(), 1) : ::unsetenv(name_); }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

// The bundle's launcher points SSL_CERT_FILE at its own copy of Debian's CA certificates: the
// system store then means that file, for the hub's certificate as for downloads. With no store
// at all (a glibc binary on Android), the client says so before any handshake.
TEST_F(TlsTest, TheSystemStoreIsSslCertFileAndItsAbsenceIsOneClearError) {
  auto http = net::HttpServer::start({.host = "127.0.0.1", .port = 0},
                                     [](const net::HttpRequest&, net::ResponseWriter& w) { w.send(200, "", ""); });
  ASSERT_TRUE(http.ok());
  auto terminator = TlsTerminator::start("127.0.0.1", 0, *TlsContext::server(cert_, key_), (*http)->port(), {});
  ASSERT_TRUE(terminator.ok());
  const std::filesystem::path empty_dir = dir_ / "no-certs";
  std::filesystem::create_directories(empty_dir);
  {
    ScopedEnv file("SSL_CERT_FILE", cert_);
    ScopedEnv dir("SSL_CERT_DIR", empty_dir.string());
    EXPECT_EQ(system_ca_file(), cert_);
    auto ctx = TlsContext::client("");
    ASSERT_TRUE(ctx.ok()) << ctx.status().to_string();
    auto fd = tls_connect("127.0.0.1", (*terminator)->port(), *ctx, 5s);
    ASSERT_TRUE(fd.ok()) << fd.status().to_string();
    ::close(*fd);
  }
  {
    ScopedEnv file("SSL_CERT_FILE", (dir_ / "missing.pem").string());
    ScopedEnv dir("SSL_CERT_DIR", empty_dir.string());
    EXPECT_FALSE(system_ca_store_present());
    auto ctx = TlsContext::client("");
    ASSERT_FALSE(ctx.ok());
    EXPECT_EQ(ctx.status().message(),
              "no CA certificates in the system store (set SSL_CERT_FILE, or pass --hub-ca FILE)");
    EXPECT_TRUE(TlsContext::client(cert_).ok()) << "--hub-ca needs no system store";
  }
}

TEST_F(TlsTest, AgentJoinsAnHttpsHub) {
  HubOptions ho;
  ho.port = 0;
  ho.data_dir = (dir_ / "hub").string();
  ho.tls_cert = cert_;
  ho.tls_key = key_;
  ho.poll_interval = 100ms;
  ho.log = [](const std::string&) {};
  auto hub = Hub::start(ho);
  ASSERT_TRUE(hub.ok()) << hub.status().to_string();
  AgentOptions ao;
  ao.hub_url = "https://127.0.0.1:" + std::to_string((*hub)->port());
  ao.hub_ca = cert_;
  ao.data_dir = (dir_ / "agent").string();
  ao.name = "tls-agent";
  ao.benchmark_shape = "";
  ao.log = [](const std::string&) {};
  auto agent = Agent::start(ao);
  ASSERT_TRUE(agent.ok()) << agent.status().to_string();
  const int port = (*hub)->port();
  const std::string cert = cert_;
  auto processors = [port, cert] {
    auto fd = tls_connect("127.0.0.1", port, *TlsContext::client(cert), 5s);
    if (!fd.ok()) return std::string();
    send_all(*fd, "GET /api/v1/processors HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
    std::string reply = read_until_close(*fd);
    ::close(*fd);
    return reply;
  };
  bool online = false;
  for (int i = 0; i < 200 && !online; ++i) {
    const std::string reply = processors();
    online =
        reply.find("\"name\":\"tls-agent\"") != std::string::npos && reply.find("\"online\":true") != std::string::npos;
    if (!online) std::this_thread::sleep_for(50ms);
  }
  EXPECT_TRUE(online);
  // An agent that does not trust the hub's certificate never registers.
  AgentOptions bad = ao;
  bad.hub_ca = (dir_ / "other.pem").string();
  bad.data_dir = (dir_ / "agent2").string();
  bad.name = "distrustful";
  auto agent2 = Agent::start(bad);
  ASSERT_TRUE(agent2.ok());
  std::this_thread::sleep_for(500ms);
  EXPECT_EQ(processors().find("distrustful"), std::string::npos);
  (*agent2)->stop();
  (*agent)->stop();
  (*hub)->stop();
  std::ifstream db((dir_ / "hub" / "hub.db").string());
  EXPECT_TRUE(db.good());
}

// ---- Connection limits of the terminator.

// A TCP connection from loopback address `source` (any 127.x.y.z) to 127.0.0.1:port; reads,
// writes and connect give up after 5 s, so a broken terminator fails a test instead of hanging it.
int tcp_from(const char* source, int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  timeval tv{5, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
  sockaddr_in from{};
  from.sin_family = AF_INET;
  ::inet_pton(AF_INET, source, &from.sin_addr);
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(static_cast<uint16_t>(port));
  to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&from), sizeof(from)) != 0 ||
      ::connect(fd, reinterpret_cast<sockaddr*>(&to), sizeof(to)) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// The TLS handshake on `fd`, then `data` (may be empty); the SSL object is dropped without a
// close_notify, so the connection stays open and silent. False when the terminator refused.
bool tls_hello(int fd, SSL_CTX* ctx, const std::string& data) {
  std::signal(SIGPIPE, SIG_IGN);  // OpenSSL's socket BIO writes with write(2); refused peers close
  SSL* ssl = SSL_new(ctx);
  SSL_set_fd(ssl, fd);
  bool ok = SSL_connect(ssl) == 1;
  if (ok && !data.empty()) ok = SSL_write(ssl, data.data(), static_cast<int>(data.size())) > 0;
  SSL_free(ssl);
  return ok;
}

// One request over TLS on `fd`; the reply up to the close ("" when refused).
std::string tls_exchange(int fd, SSL_CTX* ctx, const std::string& request) {
  std::signal(SIGPIPE, SIG_IGN);
  SSL* ssl = SSL_new(ctx);
  SSL_set_fd(ssl, fd);
  std::string reply;
  if (SSL_connect(ssl) == 1 && SSL_write(ssl, request.data(), static_cast<int>(request.size())) > 0) {
    char buf[4096];
    for (int n; (n = SSL_read(ssl, buf, sizeof(buf))) > 0;) reply.append(buf, static_cast<size_t>(n));
  }
  SSL_free(ssl);
  return reply;
}

const std::string kGet = "GET /x HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n";

TEST_F(TlsTest, ClosesAConnectionThatNeverHandshakesOrSpeaks) {
  auto http = net::HttpServer::start({.host = "127.0.0.1", .port = 0},
                                     [](const net::HttpRequest&, net::ResponseWriter& w) { w.send(200, "", "ok"); });
  ASSERT_TRUE(http.ok());
  TlsTerminatorOptions options;
  options.handshake_timeout = 1s;
  auto terminator =
      TlsTerminator::start("127.0.0.1", 0, *TlsContext::server(cert_, key_), (*http)->port(), {}, options);
  ASSERT_TRUE(terminator.ok());
  auto client_ctx = TlsContext::client(cert_);
  ASSERT_TRUE(client_ctx.ok());
  const int silent = tcp_from("127.0.0.1", (*terminator)->port());
  const int mute = tcp_from("127.0.0.1", (*terminator)->port());
  ASSERT_GE(silent, 0);
  ASSERT_GE(mute, 0);
  ASSERT_TRUE(tls_hello(mute, (*client_ctx)->get(), ""));  // handshakes, then says nothing
  EXPECT_TRUE(closed_within(silent, 5000ms));              // well before the old fixed 10 s
  EXPECT_TRUE(closed_within(mute, 5000ms));
  ::close(silent);
  ::close(mute);
}

TEST_F(TlsTest, DropsAPeerThatStopsReading) {
  std::atomic<bool> write_failed{false};
  net::HttpServerOptions ho;
  ho.port = 0;
  ho.write_timeout = 60s;  // the HTTP server alone would wait a minute
  auto http = net::HttpServer::start(ho, [&](const net::HttpRequest&, net::ResponseWriter& w) {
    w.begin_stream(200, "text/event-stream");
    const std::string piece(64 << 10, 'x');
    const auto give_up = std::chrono::steady_clock::now() + 20s;  // a safety net only
    while (std::chrono::steady_clock::now() < give_up) {
      if (!w.write(piece)) {
        write_failed = true;
        return;
      }
    }
  });
  ASSERT_TRUE(http.ok());
  TlsTerminatorOptions options;
  options.write_timeout = 1s;
  auto terminator =
      TlsTerminator::start("127.0.0.1", 0, *TlsContext::server(cert_, key_), (*http)->port(), {}, options);
  ASSERT_TRUE(terminator.ok());
  auto client_ctx = TlsContext::client(cert_);
  ASSERT_TRUE(client_ctx.ok());
  const int fd = tcp_from("127.0.0.1", (*terminator)->port());
  ASSERT_GE(fd, 0);
  ASSERT_TRUE(tls_hello(fd, (*client_ctx)->get(), kGet));  // and never reads the answer
  for (int i = 0; i < 1000 && !write_failed.load(); ++i) std::this_thread::sleep_for(10ms);
  EXPECT_TRUE(write_failed.load());  // the relay gave up, so the handler's write failed
  ::close(fd);
  for (int i = 0; i < 500 && (*terminator)->active_connections() > 0; ++i) std::this_thread::sleep_for(10ms);
  EXPECT_EQ((*terminator)->active_connections(), 0);
}

TEST_F(TlsTest, CapsConnectionsPerAddress) {
  std::atomic<int> held{0};
  std::atomic<bool> release{false};
  auto http = net::HttpServer::start({.host = "127.0.0.1", .port = 0, .max_connections_per_address = 0},
                                     [&](const net::HttpRequest& req, net::ResponseWriter& w) {
                                       if (req.path == "/held") {
                                         ++held;
                                         for (int i = 0; i < 1000 && !release.load(); ++i) {
                                           std::this_thread::sleep_for(10ms);
                                         }
                                       }
                                       w.send(200, "text/plain", "ok");
                                     });
  ASSERT_TRUE(http.ok());
  TlsTerminatorOptions options;
  options.max_connections_per_address = 2;
  auto terminator =
      TlsTerminator::start("127.0.0.1", 0, *TlsContext::server(cert_, key_), (*http)->port(), {}, options);
  ASSERT_TRUE(terminator.ok());
  auto client_ctx = TlsContext::client(cert_);
  ASSERT_TRUE(client_ctx.ok());
  SSL_CTX* ctx = (*client_ctx)->get();
  const std::string held_request = "GET /held HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n";
  const int a = tcp_from("127.0.0.1", (*terminator)->port());
  const int b = tcp_from("127.0.0.1", (*terminator)->port());
  ASSERT_TRUE(tls_hello(a, ctx, held_request));
  ASSERT_TRUE(tls_hello(b, ctx, held_request));
  for (int i = 0; i < 500 && held.load() < 2; ++i) std::this_thread::sleep_for(10ms);
  ASSERT_EQ(held.load(), 2);
  // 127.0.0.1 has two relaying connections: a third from it is closed before the handshake...
  const int third = tcp_from("127.0.0.1", (*terminator)->port());
  EXPECT_EQ(tls_exchange(third, ctx, kGet), "");
  // ...while another address still gets through.
  const int other = tcp_from("127.0.0.2", (*terminator)->port());
  EXPECT_EQ(tls_exchange(other, ctx, kGet).rfind("HTTP/1.1 200", 0), 0u);
  release = true;
  for (int fd : {a, b, third, other}) ::close(fd);
}

// An agent's tunnel behind TLS is an upgraded, authenticated connection: once the server behind
// names it (mark_tunnel), it no longer counts against the per-address cap, so more devices than
// the cap may share one NAT address. Unmarked, the same connections fill the cap.
TEST_F(TlsTest, ATunnelMarkedByTheServerCountsAgainstNoClientCap) {
  std::atomic<TlsTerminator*> front{nullptr};
  std::atomic<bool> mark{false};
  std::mutex tunnels_mu;
  std::vector<int> tunnels;  // the server's ends of the upgraded connections, kept open
  auto http = net::HttpServer::start({.host = "127.0.0.1", .port = 0, .max_connections_per_address = 0},
                                     [&](const net::HttpRequest& req, net::ResponseWriter& w) {
                                       if (req.path != "/tunnel") return w.send(200, "text/plain", "ok");
                                       std::optional<net::UpgradedConnection> up = w.upgrade({{"Upgrade", "t"}});
                                       if (!up) return;
                                       if (mark.load()) front.load()->mark_tunnel(net::peer_port(up->fd));
                                       std::lock_guard lock(tunnels_mu);
                                       tunnels.push_back(up->fd);
                                     });
  ASSERT_TRUE(http.ok());
  TlsTerminatorOptions options;
  options.max_connections_per_address = 2;
  auto terminator =
      TlsTerminator::start("127.0.0.1", 0, *TlsContext::server(cert_, key_), (*http)->port(), {}, options);
  ASSERT_TRUE(terminator.ok());
  front = terminator->get();
  auto client_ctx = TlsContext::client(cert_);
  ASSERT_TRUE(client_ctx.ok());
  SSL_CTX* ctx = (*client_ctx)->get();
  const std::string upgrade = "GET /tunnel HTTP/1.1\r\nHost: a\r\nConnection: Upgrade\r\nUpgrade: t\r\n\r\n";
  auto get = [&] {
    const int fd = tcp_from("127.0.0.1", (*terminator)->port());
    std::string reply = tls_exchange(fd, ctx, kGet);
    ::close(fd);
    return reply;
  };
  // One at a time, each upgraded (and marked, when marking) before the next: until the server
  // behind names it, a tunnel is a client like any other.
  auto open_tunnels = [&](int n) {
    std::vector<int> fds;
    for (int i = 0; i < n; ++i) {
      size_t before = 0;
      {
        std::lock_guard lock(tunnels_mu);
        before = tunnels.size();
      }
      const int fd = tcp_from("127.0.0.1", (*terminator)->port());
      EXPECT_TRUE(tls_hello(fd, ctx, upgrade)) << "tunnel " << i;
      fds.push_back(fd);
      for (int wait = 0; wait < 500; ++wait) {
        {
          std::lock_guard lock(tunnels_mu);
          if (tunnels.size() > before) break;
        }
        std::this_thread::sleep_for(10ms);
      }
      std::lock_guard lock(tunnels_mu);
      EXPECT_EQ(tunnels.size(), before + 1) << "tunnel " << i << " was not upgraded";
    }
    return fds;
  };
  // Unmarked, two tunnels fill 127.0.0.1's cap of 2: a client from it is closed at once.
  std::vector<int> unmarked = open_tunnels(2);
  EXPECT_EQ(get(), "");
  for (int fd : unmarked) ::close(fd);
  for (int i = 0; i < 500 && (*terminator)->active_connections() > 0; ++i) std::this_thread::sleep_for(10ms);
  // Marked, five tunnels from the same address leave its cap to clients.
  mark = true;
  std::vector<int> marked = open_tunnels(5);
  EXPECT_EQ((*terminator)->tunnel_connections(), 5);
  EXPECT_EQ(get().rfind("HTTP/1.1 200", 0), 0u);
  EXPECT_EQ(get().rfind("HTTP/1.1 200", 0), 0u);
  EXPECT_FALSE((*terminator)->mark_tunnel(1)) << "no relayed connection comes from port 1";
  for (int fd : marked) ::close(fd);
  {
    std::lock_guard lock(tunnels_mu);
    for (int fd : tunnels) ::close(fd);
  }
  for (int i = 0; i < 500 && (*terminator)->active_connections() > 0; ++i) std::this_thread::sleep_for(10ms);
  EXPECT_EQ((*terminator)->tunnel_connections(), 0);
  (*terminator)->stop();
  (*http)->stop();
}

// The probe of issue 19 against the hub's shape: 1,024 TLS connections used to fill the HTTP
// server behind the terminator, so everyone got 503 for 30 s. 2,000 hostile connections (silent
// TCP, a handshake and silence, a handshake and a header that never ends), most from 40
// addresses and 500 from one, stay open while real clients from another address must be served.
TEST_F(TlsTest, ServesRealClientsDuringAFloodOfIdleConnections) {
  constexpr int kHostile = 2000, kReal = 10;
  constexpr rlim_t kNeed = 8192;  // the test's sockets and the terminator's and the server's
  if (!raise_fd_limit(kNeed)) GTEST_SKIP() << "RLIMIT_NOFILE cannot be raised to " << kNeed << " descriptors";
  // As the hub runs it: 1,024 connections, no per-address cap behind the terminator.
  auto http = net::HttpServer::start(
      {.host = "127.0.0.1", .port = 0, .max_connections = 1024, .max_connections_per_address = 0},
      [](const net::HttpRequest&, net::ResponseWriter& w) { w.send(200, "text/plain", "ok"); });
  ASSERT_TRUE(http.ok());
  auto terminator = TlsTerminator::start("127.0.0.1", 0, *TlsContext::server(cert_, key_), (*http)->port(), {});
  ASSERT_TRUE(terminator.ok());
  auto client_ctx = TlsContext::client(cert_);
  ASSERT_TRUE(client_ctx.ok());
  SSL_CTX* ctx = (*client_ctx)->get();

  std::vector<int> hostile;
  int connected = 0, handshaken = 0;
  for (int i = 0; i < kHostile; ++i) {
    const std::string source = i < 500 ? "127.0.0.2" : "127.0.1." + std::to_string(1 + i % 40);
    const int fd = tcp_from(source.c_str(), (*terminator)->port());
    if (fd < 0) continue;
    ++connected;
    hostile.push_back(fd);
    if (i % 3 == 1) handshaken += tls_hello(fd, ctx, "");
    if (i % 3 == 2) handshaken += tls_hello(fd, ctx, "GET /never-ends HTTP/1.1\r\nHost: a\r\n");
  }
  EXPECT_EQ(connected, kHostile);
  EXPECT_GT(handshaken, 0);

  int served = 0;
  for (int i = 0; i < kReal; ++i) {
    auto fd = tls_connect("127.0.0.1", (*terminator)->port(), *client_ctx, 5s);
    if (!fd.ok()) continue;
    send_all(*fd, kGet);
    served += read_until_close(*fd).rfind("HTTP/1.1 200", 0) == 0;
    ::close(*fd);
  }
  EXPECT_EQ(served, kReal);
  EXPECT_GT((*terminator)->evicted_connections(), 0);
  EXPECT_LE((*terminator)->active_connections(), 2 * 1024);  // threads stayed bounded
  for (int fd : hostile) ::close(fd);
  (*terminator)->stop();
  (*http)->stop();
}

// One HTTPS request from the loopback address `source` (any 127.x.y.z on Linux), so a test can
// be several clients of one TLS listener. The raw reply, or "" when the connection failed.
std::string https_request_from(const char* source, int port, const std::string& ca, const std::string& request) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  timeval tv{5, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
  sockaddr_in from{};
  from.sin_family = AF_INET;
  ::inet_pton(AF_INET, source, &from.sin_addr);
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(static_cast<uint16_t>(port));
  to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  std::string reply;
  auto ctx = TlsContext::client(ca);
  if (ctx.ok() && ::bind(fd, reinterpret_cast<sockaddr*>(&from), sizeof(from)) == 0 &&
      ::connect(fd, reinterpret_cast<sockaddr*>(&to), sizeof(to)) == 0) {
    SSL* ssl = SSL_new((*ctx)->get());
    SSL_set_fd(ssl, fd);
    if (SSL_connect(ssl) == 1 && SSL_write(ssl, request.data(), static_cast<int>(request.size())) > 0) {
      char buf[4096];
      int n;
      // Until the server closes (the requests say Connection: close), or for an upgrade, which
      // never ends, until its header is in.
      while (!(reply.starts_with("HTTP/1.1 101") && reply.find("\r\n\r\n") != std::string::npos) &&
             (n = SSL_read(ssl, buf, sizeof(buf))) > 0) {
        reply.append(buf, static_cast<size_t>(n));
      }
    }
    SSL_free(ssl);
  }
  ::close(fd);
  return reply;
}

// Behind the terminator every connection reaches the hub's HTTP server from 127.0.0.1; the PROXY
// header carries the real client address, so one client's challenge flood replaces only its own
// challenges, never a genuine agent's (before: all TLS clients shared one address's 16).
TEST_F(TlsTest, AHubBehindTlsKeepsChallengesPerRealClientAddress) {
  HubOptions ho;
  ho.port = 0;
  ho.data_dir = (dir_ / "hub").string();
  ho.tls_cert = cert_;
  ho.tls_key = key_;
  ho.log = [](const std::string&) {};
  auto hub = Hub::start(ho);
  ASSERT_TRUE(hub.ok()) << hub.status().to_string();
  const int port = (*hub)->port();
  const std::string ask = "GET /agent/v1/challenge HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
  auto challenge_for = [&](const char* source) {
    const std::string reply = https_request_from(source, port, cert_, ask);
    const size_t at = reply.find("\"challenge\":\"");
    return at == std::string::npos ? std::string() : reply.substr(at + 13, 64);
  };
  const std::string genuine = challenge_for("127.0.0.2");
  ASSERT_EQ(genuine.size(), 64u);
  for (int i = 0; i < 40; ++i) ASSERT_EQ(challenge_for("127.0.0.3").size(), 64u) << i;

  const Identity agent = Identity::generate();
  const std::string upgrade =
      "GET /agent/v1/tunnel HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: Upgrade\r\n"
      "Upgrade: cellserve-tunnel/1\r\nX-Cellserve-Agent: " +
      agent.id() + "\r\nX-Cellserve-Challenge: " + genuine +
      "\r\nX-Cellserve-Origin: " + hub_origin(true, "127.0.0.1", port) + "\r\nX-Cellserve-Signature: " +
      agent.sign(tunnel_signature_message(hub_origin(true, "127.0.0.1", port), genuine)) + "\r\n\r\n";
  const std::string reply = https_request_from("127.0.0.2", port, cert_, upgrade);
  EXPECT_TRUE(reply.starts_with("HTTP/1.1 101")) << reply.substr(0, 200);
  (*hub)->stop();
}

}  // namespace
}  // namespace cellserve::fleet
