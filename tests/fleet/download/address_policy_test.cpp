// Which addresses a download named by a hub may reach: every non-public IPv4 and IPv6 range,
// IPv4 hidden inside IPv6, and the cloud metadata endpoints, are named; public ones pass.
#include "fleet/download/address_policy.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <gtest/gtest.h>

namespace cellserve::fleet {
namespace {

std::optional<std::string> kind_of(const std::string& text) {
  sockaddr_in in{};
  sockaddr_in6 in6{};
  if (::inet_pton(AF_INET, text.c_str(), &in.sin_addr) == 1) {
    in.sin_family = AF_INET;
    return non_public_address_kind(reinterpret_cast<const sockaddr*>(&in), sizeof(in));
  }
  EXPECT_EQ(::inet_pton(AF_INET6, text.c_str(), &in6.sin6_addr), 1) << text;
  in6.sin6_family = AF_INET6;
  return non_public_address_kind(reinterpret_cast<const sockaddr*>(&in6), sizeof(in6));
}

TEST(AddressPolicy, NamesEveryNonPublicRange) {
  const std::pair<const char*, const char*> cases[] = {
      {"127.0.0.1", "loopback"},
      {"127.255.255.254", "loopback"},
      {"0.0.0.0", "unspecified"},
      {"10.1.2.3", "private"},
      {"172.16.0.1", "private"},
      {"172.31.255.255", "private"},
      {"192.168.1.1", "private"},
      {"100.64.0.1", "shared (CGNAT)"},
      {"100.127.255.255", "shared (CGNAT)"},
      {"169.254.169.254", "link-local"},  // the cloud metadata endpoint
      {"224.0.0.1", "multicast"},
      {"239.255.255.250", "multicast"},
      {"255.255.255.255", "reserved"},
      {"240.0.0.1", "reserved"},
      {"192.0.2.1", "reserved"},
      {"198.18.0.1", "reserved"},
      {"::", "unspecified"},
      {"::1", "loopback"},
      {"::ffff:127.0.0.1", "loopback"},
      {"::ffff:169.254.169.254", "link-local"},
      {"::127.0.0.1", "loopback"},
      {"64:ff9b::10.0.0.1", "private"},
      {"2002:7f00:1::", "loopback"},      // 6to4 of 127.0.0.1
      {"fd00:ec2::254", "unique local"},  // AWS's IPv6 metadata endpoint
      {"fc00::1", "unique local"},
      {"fe80::1", "link-local"},
      {"fec0::1", "site-local"},
      {"ff02::1", "multicast"},
      {"2001:db8::1", "reserved"},
      {"2001:0:4136:e378::1", "reserved"},  // Teredo
      {"100::1", "reserved"},
  };
  for (const auto& [address, kind] : cases) {
    const auto got = kind_of(address);
    ASSERT_TRUE(got.has_value()) << address << " passed as public";
    EXPECT_EQ(*got, kind) << address;
  }
}

TEST(AddressPolicy, PassesPublicAddresses) {
  for (const char* address :
       {"1.1.1.1", "8.8.8.8", "172.32.0.1", "172.15.255.255", "100.128.0.1", "100.63.255.255", "192.169.0.1",
        "2606:4700:4700::1111", "2a00:1450:4001::200e", "::ffff:8.8.8.8", "2002:808:808::"}) {
    EXPECT_FALSE(kind_of(address).has_value()) << address << " refused as " << kind_of(address).value_or("");
  }
}

TEST(AddressPolicy, ComparesAddressAndPort) {
  sockaddr_in a{}, b{};
  a.sin_family = b.sin_family = AF_INET;
  ::inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
  ::inet_pton(AF_INET, "127.0.0.1", &b.sin_addr);
  a.sin_port = b.sin_port = htons(8090);
  EXPECT_TRUE(same_endpoint(reinterpret_cast<sockaddr*>(&a), reinterpret_cast<sockaddr*>(&b)));
  b.sin_port = htons(8091);
  EXPECT_FALSE(same_endpoint(reinterpret_cast<sockaddr*>(&a), reinterpret_cast<sockaddr*>(&b)));
  EXPECT_EQ(address_text(reinterpret_cast<sockaddr*>(&a), sizeof(a)), "127.0.0.1");
}

}  // namespace
}  // namespace cellserve::fleet
