// `cellserve hub --store URL_OR_PATH` and $CELLSERVE_STORE (docs/postgres.md): the flag wins over
// the environment, an unreachable PostgreSQL server ends the hub with one line that shows the URL
// with its password masked, and a build without libpq says so.
#include <stdlib.h>

#include <filesystem>
#include <string>

#include <gtest/gtest.h>

#include "tests/support/run_command.h"

namespace cellserve::testing {
namespace {

namespace fs = std::filesystem;

// Nothing listens on ports 1 and 2 of the loopback address: each start fails at once.
constexpr const char* kFlagUrl = "postgresql://hub:flagpw@127.0.0.1:1/fromflag?connect_timeout=2";
constexpr const char* kEnvUrl = "postgresql://hub:envpw@127.0.0.1:2/fromenv?connect_timeout=2";

class HubStoreCli : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/cs_hub_store_XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { fs::remove_all(dir_); }
  // Runs the hub with `env` (VAR=value ... or "") and `args` after the common ones.
  CommandResult hub(const std::string& env, const std::string& args) {
    return run_command("env -u CELLSERVE_STORE " + env + " " + cellserve_command() + " hub --listen 127.0.0.1:0 " +
                       "--data-dir " + dir_ + " " + args + " 2>&1");
  }
  std::string dir_;
};

#ifdef CELLSERVE_HAVE_POSTGRES

TEST_F(HubStoreCli, AnUnreachableServerEndsTheHubWithThePasswordMasked) {
  const CommandResult r = hub("", std::string("--store '") + kFlagUrl + "'");
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("postgresql://hub:***@127.0.0.1:1/fromflag"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("flagpw"), std::string::npos) << r.out;
}

TEST_F(HubStoreCli, TheEnvironmentNamesTheStoreAndTheFlagWins) {
  const std::string env = std::string("CELLSERVE_STORE='") + kEnvUrl + "'";
  const CommandResult from_env = hub(env, "");
  EXPECT_EQ(from_env.exit_code, 1) << from_env.out;
  EXPECT_NE(from_env.out.find("hub:***@127.0.0.1:2/fromenv"), std::string::npos) << from_env.out;
  EXPECT_EQ(from_env.out.find("envpw"), std::string::npos) << from_env.out;
  const CommandResult both = hub(env, std::string("--store '") + kFlagUrl + "'");
  EXPECT_EQ(both.exit_code, 1) << both.out;
  EXPECT_NE(both.out.find("fromflag"), std::string::npos) << both.out;
  EXPECT_EQ(both.out.find("fromenv"), std::string::npos) << both.out;
}

#else

TEST_F(HubStoreCli, ABuildWithoutLibpqSaysSo) {
  const CommandResult r = hub("", std::string("--store '") + kFlagUrl + "'");
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("this build has no PostgreSQL support"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("flagpw"), std::string::npos) << r.out;
}

#endif

}  // namespace
}  // namespace cellserve::testing
