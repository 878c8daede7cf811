// Drives the built cs_test_keystore the way an agent's --attestation-command would.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <vector>

#include <gtest/gtest.h>

#include "fleet/attest/attestation.h"

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

}  // namespace
}  // namespace cellserve::fleet::attest
