// DNS rebinding: which Host headers a server without authentication answers.
#include "net/host_check.h"

#include <gtest/gtest.h>

namespace cellserve::net {
namespace {

TEST(HostCheckTest, AcceptsAddressLiteralsAndLocalhost) {
  for (const char* host : {"127.0.0.1", "127.0.0.1:8080", "[::1]:8080", "[::1]", "localhost", "LOCALHOST:9000",
                           "app.localhost:80", "10.0.0.7:443"}) {
    EXPECT_TRUE(literal_or_localhost_host(host)) << host;
  }
}

TEST(HostCheckTest, RefusesNamesARebindingPageCouldUse) {
  for (const char* host : {"", "attacker.example", "attacker.example:8080", "localhost.attacker.example",
                           "127.0.0.1.nip.io", "[::1", "[::1]x", "a:b:c", "localhost:80:80"}) {
    EXPECT_FALSE(literal_or_localhost_host(host)) << host;
  }
}

TEST(HostCheckTest, NameOfDropsPortAndBrackets) {
  EXPECT_EQ(host_name_of("Example.COM:80"), "example.com");
  EXPECT_EQ(host_name_of("[::1]:80"), "::1");
  EXPECT_EQ(host_name_of("[::1"), "");
}

}  // namespace
}  // namespace cellserve::net
