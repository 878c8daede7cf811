// TLS pumps over real sockets: a terminator in front of an HTTP server, tls_connect() as the
// client, certificate checks, large bodies both ways, and a hub + agent over HTTPS.
#include "fleet/tls/tls.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <thread>

#include <gtest/gtest.h>
#include <boost/json.hpp>

#include "fleet/agent/agent.h"
#include "fleet/crypto/identity.h"
#include "fleet/hub/hub.h"
#include "net/http_server.h"

namespace cellserve::fleet {
namespace {

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
    send_all(*fd, "GET /api/v1/processors HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n");
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

}  // namespace
}  // namespace cellserve::fleet
