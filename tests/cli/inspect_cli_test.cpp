// `cellserve inspect` as a user runs it: text, JSON, and a one-line error with exit status 2.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <boost/json.hpp>

#include "engine/gguf/gguf_writer.h"
#include "tests/support/run_command.h"
#include "tests/support/testdata.h"

namespace cellserve {
namespace {

using testing::cellserve_command;
using testing::run_command;

std::string temp_path(const std::string& name) { return (std::filesystem::temp_directory_path() / name).string(); }

TEST(InspectCli, BadFileIsOneLineAndExitTwo) {
  const std::string path = temp_path("cs_inspect_bad.gguf");
  {
    std::ofstream out(path, std::ios::binary);
    out << "NOTAGGUFFILE-----------------------";
  }
  auto r = run_command(cellserve_command() + " inspect " + path + " 2>&1");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.out.find("bad magic"), std::string::npos) << r.out;
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << r.out;
  std::filesystem::remove(path);

  r = run_command(cellserve_command() + " inspect /nonexistent/x.gguf 2>&1");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.out.find("No such file"), std::string::npos) << r.out;
}

TEST(InspectCli, MissingArgumentIsAUsageError) {
  auto r = run_command(cellserve_command() + " inspect 2>&1");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.out.find("file is required"), std::string::npos) << r.out;
}

TEST(InspectCli, PrintsTensorTableAndJson) {
  const std::string path = temp_path("cs_inspect_small.gguf");
  engine::GgufWriter w;
  w.set("general.architecture", engine::GgufValue::string("llama"));
  w.set("llama.block_count", engine::GgufValue::u32(2));
  w.set("tokenizer.ggml.model", engine::GgufValue::string("llama"));
  w.set("tokenizer.ggml.tokens", engine::GgufValue::string_array({"<unk>", "<s>", "</s>", "a"}));
  w.set("tokenizer.ggml.bos_token_id", engine::GgufValue::u32(1));
  std::vector<float> data(16, 1.0f);
  ASSERT_TRUE(w.add_tensor("token_embd.weight", engine::GgmlType::F32, engine::make_shape({4, 4}),
                           std::as_bytes(std::span(data)))
                  .ok());
  ASSERT_TRUE(w.write(path).ok());

  auto r = run_command(cellserve_command() + " inspect " + path);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("architecture:  llama"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("llama.block_count"), std::string::npos);
  EXPECT_NE(r.out.find("token_embd.weight"), std::string::npos);
  EXPECT_NE(r.out.find("bos      1 <s>"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("chat template: absent"), std::string::npos);

  r = run_command(cellserve_command() + " inspect --json " + path);
  ASSERT_EQ(r.exit_code, 0);
  const auto j = boost::json::parse(r.out).as_object();
  EXPECT_EQ(j.at("architecture").as_string(), "llama");
  EXPECT_EQ(j.at("parameter_count").to_number<int64_t>(), 16);
  ASSERT_EQ(j.at("tensors").as_array().size(), 1u);
  EXPECT_EQ(j.at("tensors").as_array()[0].as_object().at("type").as_string(), "f32");
  EXPECT_EQ(j.at("tokenizer").as_object().at("vocab_size").to_number<int64_t>(), 4);
  std::filesystem::remove(path);
}

TEST(InspectCli, InspectsEveryTestdataModel) {
  CS_REQUIRE_TESTDATA();
  for (const auto& e : std::filesystem::directory_iterator(testing::testdata_path("models"))) {
    auto r = run_command(cellserve_command() + " inspect --json " + e.path().string() + " 2>&1");
    ASSERT_EQ(r.exit_code, 0) << e.path() << ": " << r.out;
    const auto j = boost::json::parse(r.out).as_object();
    EXPECT_FALSE(j.at("architecture").as_string().empty()) << e.path();
  }
}

}  // namespace
}  // namespace cellserve
