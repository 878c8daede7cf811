// The built `cellserve pull` against a file server on 127.0.0.1: the printed path, the cache
// layout, hf:// through $HF_ENDPOINT with $HF_TOKEN, and one-line errors with their exit codes.
#include <algorithm>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "fleet/crypto/sha256.h"
#include "tests/fleet/download/test_support.h"
#include "tests/support/run_command.h"

namespace cellserve::fleet {
namespace {

using cellserve::testing::cellserve_command;
using cellserve::testing::run_command;
using testing::exists;
using testing::FileServerFixture;
using testing::read_file;
using testing::TempDir;
using testing::test_bytes;
using testing::write_file;

std::string sha256_of(const std::string& data) {
  Sha256 h;
  h.update(data);
  return h.hex_digest();
}

class PullCliTest : public ::testing::Test {
 protected:
  void SetUp() override { write_file(server_.root() / "model.gguf", data_); }
  // `cellserve pull ARGS`, environment `env` ("A=1 B=2"), stderr to `stderr_to`.
  cellserve::testing::CommandResult pull(const std::string& args, const std::string& env = "",
                                         const std::string& stderr_to = "2>/dev/null") {
    return run_command("env -u HF_TOKEN -u HF_ENDPOINT -u CELLSERVE_CACHE " + env + " " + cellserve_command() +
                       " pull " + args + " " + stderr_to);
  }

  FileServerFixture server_;
  TempDir out_;
  const std::string data_ = test_bytes(300000, 5);
};

TEST_F(PullCliTest, DownloadsToOutputAndPrintsThePath) {
  const std::string dest = out_ / "m.gguf";
  const auto r = pull(server_.url("/files/model.gguf") + " -o " + dest + " --sha256 " + sha256_of(data_));
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(r.out, dest + "\n");
  EXPECT_TRUE(read_file(dest) == data_);
}

TEST_F(PullCliTest, CacheFolderFromOptionOrEnvironment) {
  const std::string url = server_.url("/files/model.gguf");
  const std::string expected = out_.path() + "/127.0.0.1_" + std::to_string(server_.port()) + "/files/model.gguf";
  auto r = pull(url + " --cache-dir " + out_.path() + " --quiet");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(r.out, expected + "\n");
  EXPECT_TRUE(read_file(expected) == data_);

  TempDir cache;
  r = pull(url, "CELLSERVE_CACHE=" + cache.path());
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(r.out.rfind(cache.path() + "/127.0.0.1_", 0), 0u) << r.out;

  TempDir xdg;
  r = pull(url, "XDG_CACHE_HOME=" + xdg.path());
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(r.out.rfind(xdg.path() + "/cellserve/127.0.0.1_", 0), 0u) << r.out;
}

TEST_F(PullCliTest, SummaryOnStderrUnlessQuiet) {
  const std::string dest = out_ / "m.gguf";
  auto r = pull(server_.url("/files/model.gguf") + " -o " + dest, "", "2>&1 >/dev/null");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(r.out.rfind("cellserve pull: " + dest, 0), 0u) << r.out;
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << r.out;
  r = pull(server_.url("/files/model.gguf") + " -o " + dest + " -q", "", "2>&1 >/dev/null");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(r.out, "");
}

TEST_F(PullCliTest, HuggingFaceUrlThroughHfEndpointWithToken) {
  write_file(server_.root() / "owner/repo/resolve/v1/sub/f.gguf", data_);
  const std::string env = "HF_ENDPOINT=" + server_.url("/files") + " HF_TOKEN=hf_test";
  const auto r = pull("hf://owner/repo@v1/sub/f.gguf --cache-dir " + out_.path(), env);
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(r.out, out_.path() + "/hf/owner/repo/v1/sub/f.gguf\n");
  EXPECT_TRUE(read_file(out_ / "hf/owner/repo/v1/sub/f.gguf") == data_);
  const auto seen = server_.seen_headers();
  ASSERT_FALSE(seen.empty());
  EXPECT_EQ(seen.back().at("authorization"), "Bearer hf_test");
}

TEST_F(PullCliTest, TokenOnlyForHuggingFace) {
  const auto r = pull(server_.url("/files/model.gguf") + " -o " + (out_ / "m.gguf"), "HF_TOKEN=hf_test");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  ASSERT_FALSE(server_.seen_headers().empty());
  EXPECT_EQ(server_.seen_headers().back().count("authorization"), 0u);
}

TEST_F(PullCliTest, ShaMismatchExitsWithOneLine) {
  const std::string dest = out_ / "m.gguf";
  const std::string wrong = sha256_of("other");
  const auto r = pull(server_.url("/files/model.gguf") + " -o " + dest + " --sha256 " + wrong, "", "2>&1");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_EQ(r.out, "cellserve pull: error: sha256 mismatch: expected " + wrong + "; the file fetched from " +
                       server_.url("/files/model.gguf") + " differs\n");
  EXPECT_FALSE(exists(dest));
  EXPECT_FALSE(exists(dest + ".partial"));
}

TEST_F(PullCliTest, ErrorsExitWithOneLine) {
  const std::string dest = out_ / "m.gguf";
  for (const std::string& args :
       std::vector<std::string>{"ftp://example.com/m.gguf -o " + dest, "hf://owner-only -o " + dest,
                                server_.url("/files/missing.gguf") + " -o " + dest,
                                server_.url("/files/model.gguf") + " -o " + dest + " --sha256 xyz"}) {
    const auto r = pull(args, "", "2>&1");
    EXPECT_EQ(r.exit_code, 1) << args << ": " << r.out;
    EXPECT_EQ(r.out.rfind("cellserve pull: error: ", 0), 0u) << args << ": " << r.out;
    EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << args << ": " << r.out;
  }
  const auto bad = pull("ftp://example.com/m.gguf", "", "2>&1");
  EXPECT_NE(bad.out.find("expected http://, https:// or hf://owner/repo"), std::string::npos) << bad.out;
  const auto missing = pull(server_.url("/files/missing.gguf") + " -o " + dest, "", "2>&1");
  EXPECT_NE(missing.out.find("HTTP 404"), std::string::npos) << missing.out;
  EXPECT_FALSE(exists(dest));
}

}  // namespace
}  // namespace cellserve::fleet
