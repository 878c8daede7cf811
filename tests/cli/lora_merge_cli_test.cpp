// `cellserve lora merge` as a user runs it: a merged file and a summary line on success; one
// error line on stderr, exit status 1 and no output file on failure.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>

#include "engine/gguf/gguf_file.h"
#include "engine/gguf/gguf_writer.h"
#include "tests/support/run_command.h"

namespace cellserve {
namespace {

using testing::cellserve_command;
using testing::run_command;

class LoraMergeCli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("cs_lora_merge_cli_" + std::to_string(::getpid()) + "_" +
                                                     ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    // A qwen3-named base with one 32x16 matrix, and a rank-2 adapter for it.
    engine::GgufWriter base;
    base.set("general.architecture", engine::GgufValue::string("qwen3"));
    base.set("qwen3.block_count", engine::GgufValue::u32(1));
    add_f32(base, "blk.0.attn_q.weight", engine::make_shape({32, 16}));
    ASSERT_TRUE(base.write(path("base.gguf")).ok());
    write_adapter("adapter.gguf", "qwen3", 16);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  static void add_f32(engine::GgufWriter& w, const std::string& name, engine::Shape shape) {
    std::vector<float> v(static_cast<size_t>(shape.elements()), 0.01f);
    ASSERT_TRUE(w.add_tensor(name, engine::GgmlType::F32, shape, std::as_bytes(std::span(v))).ok());
  }
  void write_adapter(const std::string& name, const std::string& arch, int64_t n_out) {
    engine::GgufWriter w;
    w.set("general.architecture", engine::GgufValue::string(arch));
    w.set("general.type", engine::GgufValue::string("adapter"));
    w.set("adapter.type", engine::GgufValue::string("lora"));
    w.set("adapter.lora.alpha", engine::GgufValue::f32(2.0f));
    add_f32(w, "blk.0.attn_q.weight.lora_a", engine::make_shape({32, 2}));
    add_f32(w, "blk.0.attn_q.weight.lora_b", engine::make_shape({2, n_out}));
    ASSERT_TRUE(w.write(path(name)).ok());
  }
  // Runs `cellserve lora merge <args>`, stderr only (stdout discarded).
  testing::CommandResult merge_stderr(const std::string& args) const {
    return run_command(cellserve_command() + " lora merge " + args + " 2>&1 >/dev/null");
  }
  void expect_one_error_line(const testing::CommandResult& r, const std::string& part) const {
    EXPECT_EQ(r.exit_code, 1) << r.out;
    EXPECT_EQ(r.out.rfind("cellserve lora merge: error: ", 0), 0u) << r.out;
    EXPECT_NE(r.out.find(part), std::string::npos) << r.out;
    EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << r.out;
    EXPECT_FALSE(std::filesystem::exists(path("out.gguf")));
    for (const auto& e : std::filesystem::directory_iterator(dir_)) {
      EXPECT_EQ(e.path().filename().string().find(".merging"), std::string::npos) << e.path();
    }
  }

  std::filesystem::path dir_;
};

TEST_F(LoraMergeCli, WritesTheMergedModel) {
  auto r = run_command(cellserve_command() + " lora merge --base " + path("base.gguf") + " --adapter " +
                       path("adapter.gguf") + ":0.5 --type Q8_0 --threads 2 --out " + path("out.gguf") + " 2>&1");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("wrote " + path("out.gguf") + ": 1 tensors, 1 adapted by 1 adapter"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("MOSTLY_Q8_0"), std::string::npos) << r.out;
  auto f = engine::GgufFile::open(path("out.gguf"));
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  EXPECT_EQ(f->find_tensor("blk.0.attn_q.weight")->type, engine::GgmlType::Q8_0);
  EXPECT_TRUE(*f->find("general.merged_lora.scales") == engine::GgufValue::f32_array({0.5f}));
}

TEST_F(LoraMergeCli, ErrorsAreOneLineAndExitOne) {
  const std::string base = " --base " + path("base.gguf");
  const std::string out = " --out " + path("out.gguf");
  write_adapter("llama.gguf", "llama", 16);
  expect_one_error_line(merge_stderr(base + " --adapter " + path("llama.gguf") + out), "architecture llama");
  write_adapter("shape.gguf", "qwen3", 8);
  expect_one_error_line(merge_stderr(base + " --adapter " + path("shape.gguf") + out), "blk.0.attn_q.weight.lora_b");
  expect_one_error_line(merge_stderr(base + " --adapter " + path("base.gguf") + out), "general.type");
  expect_one_error_line(merge_stderr(base + " --adapter " + path("adapter.gguf") + " --type Q9" + out),
                        "unknown type \"Q9\"");
  expect_one_error_line(merge_stderr(base + " --adapter " + path("absent.gguf") + out), "absent.gguf");
  expect_one_error_line(merge_stderr(" --base " + path("absent.gguf") + " --adapter " + path("adapter.gguf") + out),
                        "absent.gguf");
  expect_one_error_line(merge_stderr(base + " --adapter " + path("adapter.gguf") + ":x" + out), "not a number");
  expect_one_error_line(merge_stderr(base + out), "--adapter");
  expect_one_error_line(
      merge_stderr(base + " --adapter " + path("adapter.gguf") + " --out " + path("no-such-dir/out.gguf")),
      "no-such-dir");
}

}  // namespace
}  // namespace cellserve
