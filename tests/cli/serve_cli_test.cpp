// `cellserve serve` refuses bad options and unloadable models with one line and a non-zero exit.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>

#include "tests/support/run_command.h"
#include "tests/support/testdata.h"

namespace cellserve {
namespace {

using testing::cellserve_command;
using testing::run_command;

TEST(ServeCli, BadOptionsExitWithOneLine) {
  for (const std::string args : {"--parallel 0", "--port 70000", "--prefill-chunk 0", "--timeout -1", "--max-body-mb 0",
                                 "--ctx-size 8 --parallel 4", "--api-key-file /nonexistent/key",
                                 "--chat-template vicuna", "--chat-template-file /nonexistent/t.jinja",
                                 "--chat-template chatml --chat-template-file /nonexistent/t.jinja"}) {
    const auto r = run_command(cellserve_command() + " serve -m /nonexistent.gguf " + args + " 2>&1");
    EXPECT_EQ(r.exit_code, 1) << args << ": " << r.out;
    EXPECT_EQ(r.out.rfind("cellserve serve: error: ", 0), 0u) << args << ": " << r.out;
    EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << args << ": " << r.out;
  }
}

TEST(ServeCli, AnUnknownTemplateNameListsTheBuiltins) {
  const auto r = run_command(cellserve_command() + " serve -m /nonexistent.gguf --chat-template vicuna 2>&1");
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_EQ(r.out,
            "cellserve serve: error: --chat-template vicuna: no such built-in template; the built-in templates are "
            "chatml, llama3, mistral, qwen3\n");
}

TEST(ServeCli, AModelThatCannotLoadEndsTheServer) {
  const auto r = run_command(cellserve_command() + " serve -m /nonexistent.gguf --port 0 2>&1");
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("cellserve serve: error: "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("/nonexistent.gguf"), std::string::npos) << r.out;
}

TEST(ServeCli, AModelThatCannotFitInTheFreeMemoryIsRefusedWithTheNumbers) {
  CS_REQUIRE_TESTDATA();
  // 2^34 KV cells of qwen3-tiny: terabytes of cache, more than any machine has free.
  const std::string model = testing::testdata_path("models/qwen3-tiny-q8_0.gguf");
  const auto r =
      run_command(cellserve_command() + " serve -m " + model + " --port 0 --parallel 1 --ctx-size 17179869184 2>&1");
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("cellserve serve: error: insufficient_memory: needs "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("(weights "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(" + KV cache "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(" free (--no-memory-check starts anyway)"), std::string::npos) << r.out;
}

TEST(ServeCli, MlockBeyondTheLockLimitIsRefusedWithTheNumbers) {
  CS_REQUIRE_TESTDATA();
  // No locked memory allowed: RLIMIT_MEMLOCK 0 and, for root, CAP_IPC_LOCK dropped (it overrides the limit).
  const std::string drop_cap = geteuid() == 0 ? "setpriv --bounding-set -ipc_lock --inh-caps -ipc_lock " : "";
  const std::string model = testing::testdata_path("models/qwen3-tiny-q8_0.gguf");
  // `timeout`: a server that wrongly starts would otherwise serve until killed.
  const auto r = run_command("timeout 60 prlimit --memlock=0:0 " + drop_cap + cellserve_command() + " serve -m " +
                             model + " --port 0 --parallel 1 --ctx-size 256 --mlock 2>&1");
  EXPECT_EQ(r.exit_code, 1) << r.out;
  if (r.out.find("a sanitizer build cannot lock memory") != std::string::npos) {
    // AddressSanitizer makes mlock a no-op that reports success: the server must still refuse.
    EXPECT_NE(r.out.find("cellserve serve: error: --mlock: mlock succeeded but the kernel reports "), std::string::npos)
        << r.out;
    return;
  }
  EXPECT_NE(r.out.find("cellserve serve: error: --mlock: cannot lock the weights' "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("RLIMIT_MEMLOCK allows 0 MiB"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace cellserve
