// --dns: names resolved through c-ares against a tiny DNS server on 127.0.0.1 that this test
// runs itself (one A record), and the errors an agent on a phone prints when that fails.
#include "fleet/tls/name_resolution.h"

#include <arpa/inet.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace cellserve::fleet {
namespace {

// Answers UDP queries for `name` with A `address`, every other name with NXDOMAIN, and AAAA for
// `name` with no data; or, when `silent`, never answers at all.
class TinyDnsServer {
 public:
  TinyDnsServer(std::string name, std::string address, bool silent = false)
      : name_(std::move(name)), address_(std::move(address)), silent_(silent) {
    fd_ = ::socket(AF_INET, SOCK_DGRAM, 0);
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ::bind(fd_, reinterpret_cast<sockaddr*>(&sa), sizeof sa);
    socklen_t len = sizeof sa;
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&sa), &len);
    port_ = ntohs(sa.sin_port);
    thread_ = std::thread([this] { serve(); });
  }
  ~TinyDnsServer() {
    stop_ = true;
    thread_.join();
    ::close(fd_);
  }
  std::string server() const { return "127.0.0.1:" + std::to_string(port_); }
  int queries() const { return queries_.load(); }

 private:
  void serve() {
    while (!stop_) {
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, 50) <= 0) continue;
      unsigned char q[512];
      sockaddr_in from{};
      socklen_t from_len = sizeof from;
      const ssize_t n = ::recvfrom(fd_, q, sizeof q, 0, reinterpret_cast<sockaddr*>(&from), &from_len);
      if (n < 12) continue;
      ++queries_;
      if (silent_) continue;
      // The question: labels from offset 12 to their terminating zero, then type and class.
      size_t i = 12;
      std::string qname;
      while (i < static_cast<size_t>(n) && q[i] != 0) {
        const size_t len = q[i];
        if (i + 1 + len > static_cast<size_t>(n)) break;
        if (!qname.empty()) qname += '.';
        for (size_t k = 0; k < len; ++k) qname += static_cast<char>(std::tolower(q[i + 1 + k]));
        i += 1 + len;
      }
      if (i + 5 > static_cast<size_t>(n)) continue;
      const uint16_t qtype = static_cast<uint16_t>(q[i + 1] << 8 | q[i + 2]);
      const size_t question_end = i + 5;
      const bool known = qname == name_;
      const bool answer = known && qtype == 1;
      std::vector<unsigned char> r(q, q + question_end);
      r[2] = 0x81;                      // QR, RD
      r[3] = known ? 0x80 : 0x83;       // RA; NOERROR or NXDOMAIN
      r[4] = 0, r[5] = 1;               // one question
      r[6] = 0, r[7] = answer ? 1 : 0;  // answers
      r[8] = r[9] = r[10] = r[11] = 0;  // no authority, no additional (drops the query's EDNS)
      if (answer) {
        in_addr a{};
        ::inet_pton(AF_INET, address_.c_str(), &a);
        const auto* b = reinterpret_cast<const unsigned char*>(&a);
        const unsigned char rr[] = {0xc0, 0x0c, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4, b[0], b[1], b[2], b[3]};
        r.insert(r.end(), rr, rr + sizeof rr);
      }
      ::sendto(fd_, r.data(), r.size(), 0, reinterpret_cast<sockaddr*>(&from), from_len);
    }
  }

  std::string name_;
  std::string address_;
  bool silent_;
  int fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<int> queries_{0};
  std::thread thread_;
};

// Restores the system resolver after each test: the servers are process-wide.
class NameResolution : public ::testing::Test {
 protected:
  void TearDown() override { ASSERT_TRUE(set_dns_servers({}).ok()); }
};

TEST_F(NameResolution, DnsServersResolveTheHubsName) {
  TinyDnsServer dns("hub.cellserve.test", "10.1.2.3");
  ASSERT_TRUE(set_dns_servers({dns.server()}).ok());
  EXPECT_EQ(dns_servers(), (std::vector<std::string>{dns.server()}));
  const auto r = resolve_host("hub.cellserve.test", 8443, std::chrono::seconds(5));
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  ASSERT_EQ(r->size(), 1u);
  EXPECT_EQ((*r)[0].text, "10.1.2.3");
  EXPECT_EQ((*r)[0].family, AF_INET);
  const auto* sin = reinterpret_cast<const sockaddr_in*>(&(*r)[0].address);
  EXPECT_EQ(ntohs(sin->sin_port), 8443);
  EXPECT_GE(dns.queries(), 1) << "the answer came from our server, not the system's";
}

TEST_F(NameResolution, AnUnknownNameSaysWhichServersWereAsked) {
  TinyDnsServer dns("hub.cellserve.test", "10.1.2.3");
  ASSERT_TRUE(set_dns_servers({dns.server()}).ok());
  const auto r = resolve_host("nowhere.cellserve.test", 443, std::chrono::seconds(5));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::Unavailable);
  EXPECT_NE(r.status().message().find("nowhere.cellserve.test: cannot resolve through --dns " + dns.server()),
            std::string::npos)
      << r.status().message();
  EXPECT_EQ(r.status().message().find('\n'), std::string::npos) << "one line";
}

TEST_F(NameResolution, AServerThatNeverAnswersTimesOutAtTheDeadline) {
  TinyDnsServer dns("hub.cellserve.test", "10.1.2.3", /*silent=*/true);
  ASSERT_TRUE(set_dns_servers({dns.server()}).ok());
  const auto start = std::chrono::steady_clock::now();
  const auto r = resolve_host("hub.cellserve.test", 443, std::chrono::milliseconds(700));
  const auto took = std::chrono::steady_clock::now() - start;
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::Unavailable);
  EXPECT_GE(dns.queries(), 1);
  // A deadline, not a timing: far below the c-ares default of several tries of 5 s each.
  EXPECT_LT(took, std::chrono::seconds(30)) << r.status().message();
}

TEST_F(NameResolution, AnIpLiteralIsNeverLookedUp) {
  TinyDnsServer dns("hub.cellserve.test", "10.1.2.3");
  ASSERT_TRUE(set_dns_servers({dns.server()}).ok());
  const auto r = resolve_host("127.0.0.1", 80);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  ASSERT_EQ(r->size(), 1u);
  EXPECT_EQ((*r)[0].text, "127.0.0.1");
  const auto v6 = resolve_host("::1", 80);
  ASSERT_TRUE(v6.ok()) << v6.status().to_string();
  EXPECT_EQ((*v6)[0].family, AF_INET6);
  EXPECT_EQ(dns.queries(), 0);
}

TEST_F(NameResolution, MalformedServersAndArgumentsAreRefused) {
  for (const char* bad : {"dns.google", "1.1.1", "1.1.1.1:0", "1.1.1.1:70000", "[::1", "[::1]:x", "::1:53:", ""}) {
    const Status s = set_dns_servers({bad});
    EXPECT_EQ(s.code(), StatusCode::InvalidArgument) << bad;
    EXPECT_NE(s.message().find("--dns"), std::string::npos) << s.message();
  }
  for (const char* good : {"1.1.1.1", "1.1.1.1:53", "::1", "[2606:4700::1111]:53"}) {
    EXPECT_TRUE(set_dns_servers({good}).ok()) << good;
  }
  EXPECT_EQ(resolve_host("", 80).status().code(), StatusCode::InvalidArgument);
  EXPECT_EQ(resolve_host("127.0.0.1", 0).status().code(), StatusCode::InvalidArgument);
  EXPECT_EQ(resolve_host("127.0.0.1", 65536).status().code(), StatusCode::InvalidArgument);
}

}  // namespace
}  // namespace cellserve::fleet
