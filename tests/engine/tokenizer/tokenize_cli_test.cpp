// `cellserve tokenize`: output formats, flags and one-line errors (runs the real binary).
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "tests/support/run_command.h"
#include "tests/support/testdata.h"

namespace cellserve {
namespace {

using testing::cellserve_command;
using testing::run_command;
using testing::testdata_path;

std::string tokenize(const std::string& args) { return cellserve_command() + " tokenize " + args + " 2>&1"; }

TEST(TokenizeCommand, PrintsCommaSeparatedIds) {
  CS_REQUIRE_TESTDATA();
  const std::string model = testdata_path("models/stories260K.gguf");
  const auto r = run_command(tokenize("-m " + model + " --ids 'Once upon a time'"));
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(r.out, "1,403,407,261,378\n");  // golden stories260K.once-upon-a-time.json

  const auto no_bos = run_command(tokenize("-m " + model + " --ids --no-special 'Once upon a time'"));
  EXPECT_EQ(no_bos.out, "403,407,261,378\n");
}

TEST(TokenizeCommand, PrintsIdsAndPieces) {
  CS_REQUIRE_TESTDATA();
  const auto r = run_command(tokenize("-m " + testdata_path("models/stories260K.gguf") + " 'Once upon'"));
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(r.out, "     1 -> '<s>'\n   403 -> ' Once'\n   407 -> ' upon'\n");
}

TEST(TokenizeCommand, ParsesSpecialTokensByDefault) {
  CS_REQUIRE_TESTDATA();
  const std::string model = testdata_path("models/qwen3-tiny-f32.gguf");
  EXPECT_EQ(run_command(tokenize("-m " + model + " --ids '<|im_start|>user'")).out, "1001,872\n");
  EXPECT_EQ(run_command(tokenize("-m " + model + " --ids --parse-special '<|im_start|>user'")).out, "1001,872\n");
  const auto plain = run_command(tokenize("-m " + model + " --ids --no-parse-special '<|im_start|>user'"));
  EXPECT_EQ(plain.exit_code, 0);
  EXPECT_EQ(plain.out.find("1001"), std::string::npos) << plain.out;
}

TEST(TokenizeCommand, ReadsTextFromFile) {
  CS_REQUIRE_TESTDATA();
  const auto path = std::filesystem::temp_directory_path() / "cellserve_tokenize_cli_test.txt";
  std::ofstream(path, std::ios::binary) << "<|im_start|>user\n";
  const auto r =
      run_command(tokenize("-m " + testdata_path("models/qwen3-tiny-f32.gguf") + " --ids --file " + path.string()));
  std::filesystem::remove(path);
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(r.out, "1001,872,198\n");
}

TEST(TokenizeCommand, ErrorsAreOneLine) {
  const auto missing = run_command(tokenize("-m /nonexistent/model.gguf hello"));
  EXPECT_NE(missing.exit_code, 0);
  EXPECT_EQ(missing.out.rfind("cellserve tokenize: error: ", 0), 0u) << missing.out;
  EXPECT_EQ(std::count(missing.out.begin(), missing.out.end(), '\n'), 1) << missing.out;

  const auto no_text = run_command(tokenize("-m /nonexistent/model.gguf"));
  EXPECT_NE(no_text.exit_code, 0);
  EXPECT_NE(no_text.out.find("no text"), std::string::npos) << no_text.out;
}

}  // namespace
}  // namespace cellserve
