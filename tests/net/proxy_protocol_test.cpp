// The PROXY v1 header between the TLS terminator and the HTTP server behind it: parsing, and a
// server with proxy_protocol on taking the client's address from it (and refusing a connection
// that does not start with one).
#include "net/proxy_protocol.h"

#include <gtest/gtest.h>

#include "tests/net/raw_http_client.h"
#include "tests/support/sockets.h"

namespace cellserve::net {
namespace {

using namespace cellserve::net::rawhttp;

TEST(ProxyProtocol, ParsesTheSourceOfTcp4AndTcp6Headers) {
  EXPECT_EQ(parse_proxy_v1_source("PROXY TCP4 203.0.113.7 192.0.2.1 51234 443"), "203.0.113.7");
  EXPECT_EQ(parse_proxy_v1_source("PROXY TCP6 2001:db8::1 2001:db8::2 51234 443"), "2001:db8::1");
  // One spelling per client, as address_text() gives for accepted sockets.
  EXPECT_EQ(parse_proxy_v1_source("PROXY TCP6 2001:DB8:0::1 ::1 1 2"), "2001:db8::1");
  EXPECT_EQ(parse_proxy_v1_source("PROXY TCP6 ::ffff:198.51.100.4 ::ffff:127.0.0.1 1 2"), "198.51.100.4");
  EXPECT_EQ(parse_proxy_v1_source("PROXY UNKNOWN"), "");
  EXPECT_EQ(parse_proxy_v1_source("PROXY UNKNOWN ffff:f...f:ffff 1 2"), "");
}

TEST(ProxyProtocol, RefusesMalformedHeaders) {
  for (const char* line : {"", "PROXY", "GET / HTTP/1.1", "PROXY TCP4 203.0.113.7 192.0.2.1 51234",
                           "PROXY TCP4 203.0.113.7 192.0.2.1 51234 443 extra", "PROXY TCP4 2001:db8::1 ::1 1 2",
                           "PROXY TCP6 203.0.113.7 192.0.2.1 1 2", "PROXY TCP4 203.0.113.7 192.0.2.1 65536 443",
                           "PROXY TCP4 203.0.113.7 192.0.2.1 -1 443", "PROXY TCP4 203.0.113.7 192.0.2.1 01 443",
                           "PROXY TCP4  203.0.113.7 192.0.2.1 1 443", "PROXY UDP4 203.0.113.7 192.0.2.1 1 443",
                           "proxy TCP4 203.0.113.7 192.0.2.1 1 443"}) {
    EXPECT_EQ(parse_proxy_v1_source(line), std::nullopt) << line;
  }
  EXPECT_EQ(parse_proxy_v1_source("PROXY TCP4 1.2.3.4 5.6.7.8 1 " + std::string(100, '1')), std::nullopt);
}

TEST(ProxyProtocol, TheHeaderForASocketNamesItsPeer) {
  auto server = start_server(echo_handler);
  ASSERT_TRUE(server);
  Client c(server->port(), "127.0.0.9");
  ASSERT_TRUE(c.connected());
  // The accepted side as the terminator sees it: our client socket's peer is the server, so the
  // header built from it names the server's address as the source.
  const std::string header = proxy_v1_header(c.fd());
  ASSERT_TRUE(header.ends_with("\r\n")) << header;
  EXPECT_TRUE(header.starts_with("PROXY TCP4 127.0.0.1 127.0.0.9 " + std::to_string(server->port()) + " ")) << header;
  EXPECT_EQ(parse_proxy_v1_source(header.substr(0, header.size() - 2)), "127.0.0.1");
  EXPECT_EQ(proxy_v1_header(-1), "PROXY UNKNOWN\r\n");
}

HttpServerOptions behind_a_proxy() {
  HttpServerOptions o;
  o.proxy_protocol = true;
  o.max_connections_per_address = 0;
  o.header_timeout = std::chrono::seconds(2);
  return o;
}

void address_handler(const HttpRequest& req, ResponseWriter& w) { w.send(200, "text/plain", req.remote_address); }

TEST(ProxyProtocol, TheServerTakesTheClientAddressFromTheHeader) {
  auto server = start_server(address_handler, behind_a_proxy());
  ASSERT_TRUE(server);
  Client c(server->port());
  ASSERT_TRUE(c.connected());
  // Header and request in one write, as the terminator sends them, then a keep-alive request.
  ASSERT_TRUE(c.send("PROXY TCP4 203.0.113.7 192.0.2.1 51234 443\r\n" + get("/")));
  auto r = c.read_response();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->body, "203.0.113.7");
  ASSERT_TRUE(c.send(get("/again")));
  r = c.read_response();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->body, "203.0.113.7");

  Client unknown(server->port());
  ASSERT_TRUE(unknown.send("PROXY UNKNOWN\r\n" + get("/")));
  r = unknown.read_response();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->body, "127.0.0.1");  // the peer's own address stands
}

TEST(ProxyProtocol, AConnectionWithoutAValidHeaderIsClosedUnanswered) {
  auto server = start_server(address_handler, behind_a_proxy());
  ASSERT_TRUE(server);
  for (const std::string& first :
       {get("/"), std::string("PROXY TCP4 999.0.0.1 1.2.3.4 1 2\r\n") + get("/"), std::string(200, 'P')}) {
    Client c(server->port());
    ASSERT_TRUE(c.connected());
    ASSERT_TRUE(c.send(first));
    EXPECT_EQ(c.read_to_eof(), "") << first;
  }
  // One that sends nothing is closed at the header timeout.
  Client silent(server->port());
  ASSERT_TRUE(silent.connected());
  EXPECT_TRUE(cellserve::testing::closed_within(silent.fd(), std::chrono::milliseconds(5000)));
}

}  // namespace
}  // namespace cellserve::net
