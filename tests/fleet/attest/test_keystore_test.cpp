// Drives the built cs_test_keystore the way an agent's --attestation-command would.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <vector>

#include <gtest/gtest.h>

#include <boost/json.hpp>

#include "fleet/attest/attestation.h"
#include "fleet/attest/base64.h"

namespace cellserve::fleet::attest {
namespace {

namespace fs = std::filesystem;

struct ToolRun {
  int status = -1;
  std::string out;
};

// Runs `args` (already shell-safe) with the tool, capturing stdout; stderr is folded in.
ToolRun run_tool(const std::string& args) {
  ToolRun r;
  FILE* p = ::popen((std::string(CS_TEST_KEYSTORE) + " " + args + " 2>&1").c_str(), "r");
  if (p == nullptr) return r;
  char buf[4096];
  for (size_t n; (n = std::fread(buf, 1, sizeof buf, p)) > 0;) r.out.append(buf, n);
  const int status = ::pclose(p);
  r.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

std::string hex(std::string_view bytes) {
  std::string out;
  char b[3];
  for (const char c : bytes) {
    std::snprintf(b, sizeof b, "%02x", static_cast<unsigned char>(c));
    out += b;
  }
  return out;
}

class TestKeystoreTool : public ::testing::Test {
 protected:
  TestKeystoreTool() : dir_(fs::temp_directory_path() / ("cs-keystore-" + std::to_string(::getpid()))) {}
  ~TestKeystoreTool() override { fs::remove_all(dir_); }

  AttestationVerdict attest(const std::string& flags) {
    auto roots = load_pem_certificates((dir_ / "root.pem").string());
    EXPECT_TRUE(roots.ok()) << roots.status().to_string();
    const std::string challenge = attestation_challenge(std::string(32, 'n'), std::string(32, 'k'));
    const ToolRun r = run_tool("attest " + dir_.string() + " " + flags + " " + hex(challenge));
    EXPECT_EQ(r.status, 0) << r.out;
    auto evidence = parse_evidence(r.out);
    EXPECT_TRUE(evidence.ok()) << evidence.status().to_string();
    if (!roots.ok() || !evidence.ok()) return {};
    return verify_attestation(*evidence, challenge, AttestationPolicy{*roots, 202301, nullptr, {}}, std::time(nullptr));
  }

  fs::path dir_;
};

TEST_F(TestKeystoreTool, ItsEvidenceVerifiesAgainstItsRoot) {
  ASSERT_EQ(run_tool("init " + dir_.string()).status, 0);
  const AttestationVerdict ok = attest("--patch 202402");
  EXPECT_TRUE(ok.attested) << ok.reason;
  EXPECT_EQ(ok.os_patch_level, 202402);
  EXPECT_EQ(attest("--unlocked").refusal, Refusal::BootloaderUnlocked);
  EXPECT_EQ(attest("--software").refusal, Refusal::SoftwareOnly);
  EXPECT_EQ(attest("--patch 202212").refusal, Refusal::PatchTooOld);
}

TEST_F(TestKeystoreTool, RefusesBadInputWithOneLine) {
  ASSERT_EQ(run_tool("init " + dir_.string()).status, 0);
  const std::vector<std::string> bad_inputs = {
      "attest " + dir_.string() + " abc",                                   // not 64 hex digits
      "attest /nonexistent " + std::string(64, 'a'),                        // no keystore
      "frobnicate",                                                         // no such command
      "attest " + dir_.string() + " --patch 2024 " + std::string(64, 'a'),  // not YYYYMM
  };
  for (const std::string& args : bad_inputs) {
    const ToolRun r = run_tool(args);
    EXPECT_EQ(r.status, 2) << args;
    EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << r.out;
    EXPECT_EQ(r.out.rfind("cs_test_keystore: ", 0), 0u) << r.out;
  }
}

TEST_F(TestKeystoreTool, HelperKeepsOneKeyThatSignsTunnelDigests) {
  ASSERT_EQ(run_tool("init " + dir_.string()).status, 0);
  const std::string first = attestation_challenge(std::string(32, 'n'), std::string(32, 'k'));
  const std::string digest(32, '\x42');
  // No key yet: nothing to sign with.
  EXPECT_EQ(run_tool("helper " + dir_.string() + " sign " + hex(digest)).status, 2);
  const ToolRun a = run_tool("helper " + dir_.string() + " " + hex(first));
  const ToolRun b = run_tool("helper " + dir_.string() + " " + hex(std::string(32, 'x')));
  ASSERT_EQ(a.status, 0) << a.out;
  ASSERT_EQ(b.status, 0) << b.out;
  auto ea = parse_evidence(a.out);
  auto eb = parse_evidence(b.out);
  ASSERT_TRUE(ea.ok() && eb.ok());
  EXPECT_EQ(ea->chain_der[0], eb->chain_der[0]) << "one key, attested with the first challenge";
  auto roots = load_pem_certificates((dir_ / "root.pem").string());
  ASSERT_TRUE(roots.ok());
  const AttestationVerdict v =
      verify_attestation(*eb, first, AttestationPolicy{*roots, 0, nullptr, {}}, std::time(nullptr));
  ASSERT_TRUE(v.attested) << v.reason;
  const ToolRun s = run_tool("helper " + dir_.string() + " sign " + hex(digest));
  ASSERT_EQ(s.status, 0) << s.out;
  boost::system::error_code ec;
  const boost::json::value sig = boost::json::parse(s.out, ec);
  ASSERT_FALSE(ec);
  const std::optional<std::string> der = base64_decode(sig.at("signature").as_string());
  ASSERT_TRUE(der.has_value());
  EXPECT_EQ(signature_problem(v.key.key_spki, digest, *der), "");
  EXPECT_NE(signature_problem(v.key.key_spki, std::string(32, '\x43'), *der), "");
}

}  // namespace
}  // namespace cellserve::fleet::attest
