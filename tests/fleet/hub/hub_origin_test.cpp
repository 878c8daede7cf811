// Which hub origins an agent's tunnel signature may name (fleet/hub/hub_origin.h); the attack
// itself, a relayed challenge, is HubTest.ATunnelSignatureForAnotherHubsOriginOpensNothing.
#include "fleet/hub/hub_origin.h"

#include <gtest/gtest.h>

#include <string>

#include "fleet/spec/agent_protocol.h"

namespace cellserve::fleet {
namespace {

TEST(HubOrigins, OwnOriginsFollowTheListenAddressOrThePublicUrls) {
  const HubOrigins loop{false, "127.0.0.1", 8090, {}};
  EXPECT_TRUE(is_own_origin(loop, "http://127.0.0.1:8090"));
  EXPECT_TRUE(is_own_origin(loop, "http://localhost:8090"));
  EXPECT_TRUE(is_own_origin(loop, "http://[::1]:8090"));
  EXPECT_FALSE(is_own_origin(loop, "http://evil.example:8090"));
  EXPECT_FALSE(is_own_origin(loop, "https://127.0.0.1:8090"));
  EXPECT_FALSE(is_own_origin(loop, "http://127.0.0.1:8091"));
  EXPECT_FALSE(is_own_origin(loop, "http://LOCALHOST:8090"));  // not the normal form agents sign
  const HubOrigins named{true, "0.0.0.0", 8443, {"https://hub.example:8443", "https://hub.example.org"}};
  EXPECT_TRUE(is_own_origin(named, "https://hub.example:8443"));
  EXPECT_TRUE(is_own_origin(named, "https://hub.example.org:443"));
  EXPECT_FALSE(is_own_origin(named, "https://relay.example:8443"));
  const HubOrigins loop_named{false, "127.0.0.1", 8090, {"http://hub.cellserve.test:8090"}};
  EXPECT_TRUE(is_own_origin(loop_named, "http://hub.cellserve.test:8090"));
  EXPECT_TRUE(is_own_origin(loop_named, "http://127.0.0.1:8090"));
  EXPECT_FALSE(is_own_origin(loop_named, "http://relay.example:8090"));
  EXPECT_EQ(public_url_host("HTTP://Hub.Example:8090/x"), "hub.example");
  const HubOrigins wildcard{true, "0.0.0.0", 8443, {}};
  EXPECT_TRUE(is_own_origin(wildcard, "https://anything.example:8443"));
  EXPECT_FALSE(is_own_origin(wildcard, "https://anything.example:9443"));
  EXPECT_EQ(normalized_origin("HTTPS://Hub.Example/x"), "https://hub.example:443");
  EXPECT_EQ(normalized_origin("ftp://x"), "");
  EXPECT_FALSE(valid_challenge("made-up"));
  EXPECT_FALSE(valid_challenge(std::string(64, 'A')));
  EXPECT_TRUE(valid_challenge(std::string(64, 'a')));
}

}  // namespace
}  // namespace cellserve::fleet
