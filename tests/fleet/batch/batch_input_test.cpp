// Batch input validation: every line is checked before any work, and each error names its line.
#include "fleet/batch/batch_input.h"

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "fleet/crypto/identity.h"

namespace cellserve::fleet {
namespace {

namespace fs = std::filesystem;

Result<BatchInput> read_text(const std::string& text) {
  const fs::path p = fs::temp_directory_path() / ("cs-batchin-" + random_hex(6));
  std::ofstream(p, std::ios::binary) << text;
  auto r = read_batch_input(p.string(), "/v1/chat/completions", [](std::string_view body) -> Status {
    if (body.find("\"refuse\"") != std::string_view::npos) return Status::invalid_argument("the deployment says no");
    return {};
  });
  fs::remove(p);
  return r;
}

std::string line(const std::string& id, const std::string& extra = "") {
  return R"({"custom_id":")" + id + R"(","method":"POST","url":"/v1/chat/completions","body":{"messages":[]})" + extra +
         "}\n";
}

TEST(BatchInput, AValidFileBecomesLinesWithTheirPlaceInTheFile) {
  const std::string a = line("a");
  const std::string text = a + "\n" + line("b");  // a blank line between
  auto in = read_text(text);
  ASSERT_TRUE(in.ok());
  ASSERT_TRUE(in->errors.empty()) << in->errors[0].message;
  ASSERT_EQ(in->lines.size(), 2u);
  EXPECT_EQ(in->lines[0].custom_id, "a");
  EXPECT_EQ(in->lines[0].offset, 0u);
  EXPECT_EQ(in->lines[0].length, a.size() - 1);
  EXPECT_EQ(in->lines[1].line, 3);
  EXPECT_EQ(in->lines[1].offset, a.size() + 1);
  EXPECT_EQ(text.substr(in->lines[1].offset, in->lines[1].length), line("b").substr(0, line("b").size() - 1));
  // No newline at the end of the file is fine.
  auto last = read_text(line("z").substr(0, line("z").size() - 1));
  ASSERT_TRUE(last.ok());
  EXPECT_EQ(last->lines.size(), 1u);
}

TEST(BatchInput, EveryBadLineIsNamed) {
  const std::string text = line("a") + "{not json\n" + line("a") +
                           R"({"custom_id":"m","method":"GET","url":"/v1/chat/completions","body":{}})"
                           "\n" +
                           R"({"custom_id":"u","method":"POST","url":"/v1/embeddings","body":{}})"
                           "\n" +
                           R"({"custom_id":"n","method":"POST","url":"/v1/chat/completions"})"
                           "\n" +
                           R"({"custom_id":"r","method":"POST","url":"/v1/chat/completions","body":{"x":"refuse"}})"
                           "\n" +
                           R"({"method":"POST","url":"/v1/chat/completions","body":{}})"
                           "\n" +
                           "[1,2]\n";
  auto in = read_text(text);
  ASSERT_TRUE(in.ok());
  ASSERT_EQ(in->errors.size(), 8u);
  const auto at = [&](int n) { return in->errors[static_cast<size_t>(n)]; };
  EXPECT_EQ(at(0).line, 2);
  EXPECT_NE(at(0).message.find("not valid JSON"), std::string::npos);
  EXPECT_EQ(at(1).line, 3);
  EXPECT_EQ(at(1).code, "duplicate_custom_id");
  EXPECT_NE(at(2).message.find("method"), std::string::npos);
  EXPECT_NE(at(3).message.find("url must be"), std::string::npos);
  EXPECT_NE(at(4).message.find("body must be"), std::string::npos);
  EXPECT_NE(at(5).message.find("the deployment says no"), std::string::npos);
  EXPECT_NE(at(6).message.find("custom_id"), std::string::npos);
  EXPECT_EQ(at(7).line, 9);
}

TEST(BatchInput, ALongLineEmptyFileAndManyErrorsAreBounded) {
  auto empty = read_text("\n\n");
  ASSERT_TRUE(empty.ok());
  ASSERT_EQ(empty->errors.size(), 1u);
  EXPECT_EQ(empty->errors[0].code, "empty_file");
  const std::string huge = R"({"custom_id":"h","method":"POST","url":"/v1/chat/completions","body":{"p":")" +
                           std::string(kMaxBatchLineBytes, 'x') + "\"}}\n" + line("ok");
  auto in = read_text(huge);
  ASSERT_TRUE(in.ok());
  ASSERT_EQ(in->errors.size(), 1u);
  EXPECT_EQ(in->errors[0].line, 1);
  EXPECT_NE(in->errors[0].message.find("longer than"), std::string::npos);
  std::string bad;
  for (int i = 0; i < 150; ++i) bad += "nope\n";
  auto many = read_text(bad);
  ASSERT_TRUE(many.ok());
  EXPECT_EQ(many->errors.size(), kMaxReportedBatchErrors + 1);
  EXPECT_EQ(many->errors.back().code, "too_many_errors");
}

}  // namespace
}  // namespace cellserve::fleet
