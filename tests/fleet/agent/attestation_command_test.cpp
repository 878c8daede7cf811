// The agent's --attestation-command runner: the challenge reaches the helper as one argument the
// shell never parses; a helper that fails, hangs, floods or prints other than JSON gives one
// line, never a hang.
#include "fleet/agent/attestation_command.h"

#include <unistd.h>

#include <cstdio>

#include <gtest/gtest.h>
#include <boost/json.hpp>

namespace cellserve::fleet {
namespace {

using namespace std::chrono_literals;

TEST(AttestationCommand, PassesTheChallengeAsItsLastArgument) {
  auto v = run_attestation_command("printf '{\"flag\":\"%s\",\"challenge\":\"%s\"}' --x", "ab01");
  ASSERT_TRUE(v.ok()) << v.status().message();
  EXPECT_EQ(v->at("flag").as_string(), "--x");
  EXPECT_EQ(v->at("challenge").as_string(), "ab01");
  // Whatever the challenge holds, it is data: nothing in it runs.
  auto quoted = run_attestation_command("printf '{\"c\":\"%s\"}'", "x; echo {}; exit 3");
  ASSERT_TRUE(quoted.ok()) << quoted.status().message();
  EXPECT_EQ(quoted->at("c").as_string(), "x; echo {}; exit 3");
}

TEST(AttestationCommand, EveryFailureIsOneLine) {
  auto failed = run_attestation_command("echo 'keystore locked' >&2; exit 4;", "00");
  ASSERT_FALSE(failed.ok());
  EXPECT_NE(failed.status().message().find("exit status 4: keystore locked"), std::string::npos)
      << failed.status().message();
  auto missing = run_attestation_command("/no/such/helper", "00");
  EXPECT_FALSE(missing.ok());
  auto not_json = run_attestation_command("echo hello", "00");
  ASSERT_FALSE(not_json.ok());
  EXPECT_NE(not_json.status().message().find("not a JSON object"), std::string::npos);
  auto flood = run_attestation_command("head -c 400000 /dev/zero", "00");
  ASSERT_FALSE(flood.ok());
  EXPECT_NE(flood.status().message().find("KiB on stdout"), std::string::npos);
  const auto start = std::chrono::steady_clock::now();
  auto hung = run_attestation_command("sleep 30", "00", 300ms);
  ASSERT_FALSE(hung.ok());
  EXPECT_NE(hung.status().message().find("killed"), std::string::npos) << hung.status().message();
  EXPECT_LT(std::chrono::steady_clock::now() - start, 10s);
  // A helper that closes its output but keeps running is killed at the deadline too.
  auto lingering = run_attestation_command("exec >&- 2>&-; sleep 30", "00", 300ms);
  EXPECT_FALSE(lingering.ok());
}

TEST(AttestationCommand, SignAsksTheHelperWithTheDigestInHex) {
  // The helper gets "sign" and the digest as its last two arguments.
  auto ok =
      sign_with_attested_key("f() { [ \"$1\" = sign ] && [ \"$2\" = 0102ff ] && echo '{\"signature\":\"AQID\"}'; }; f",
                             std::string("\x01\x02\xff", 3));
  ASSERT_TRUE(ok.ok()) << ok.status().message();
  EXPECT_EQ(*ok, "AQID");
  // A helper without the verb, or one printing something else, gives no signature.
  EXPECT_FALSE(sign_with_attested_key("f() { exit 2; }; f", "x").ok());
  EXPECT_FALSE(sign_with_attested_key("echo '{\"signature\": 5}' #", "x").ok());
  EXPECT_FALSE(sign_with_attested_key("echo '{\"signature\": \"not base64\"}' #", "x").ok());
  const std::string big(2000, 'A');
  EXPECT_FALSE(sign_with_attested_key("echo '{\"signature\": \"" + big + "\"}' #", "x").ok());
}

TEST(AttestationCommand, RemembersTheNonceItsKeyWasMadeAt) {
  const std::string path = ::testing::TempDir() + "/attested-key-" + std::to_string(::getpid()) + ".json";
  std::remove(path.c_str());
  const boost::json::value first = boost::json::parse(R"({"chain": ["LEAF1", "CA"], "signature": "x"})");
  const boost::json::value second = boost::json::parse(R"({"chain": ["LEAF2", "CA"], "signature": "x"})");
  EXPECT_EQ(key_creation_nonce(path, first, "n1").value(), "n1");
  EXPECT_EQ(key_creation_nonce(path, first, "n2").value(), "n1");   // the same key: made at n1
  EXPECT_EQ(key_creation_nonce(path, second, "n3").value(), "n3");  // a new key: made now
  EXPECT_EQ(key_creation_nonce(path, second, "n4").value(), "n3");
  EXPECT_FALSE(key_creation_nonce(path, boost::json::parse("{}"), "n5").ok());
  std::remove(path.c_str());
}

}  // namespace
}  // namespace cellserve::fleet
