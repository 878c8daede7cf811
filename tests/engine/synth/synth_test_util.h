// Helpers shared by the synth tests.
#pragma once

#include <unistd.h>

#include <filesystem>
#include <string>

#include "engine/gguf/gguf_file.h"
#include "engine/synth/synth.h"

namespace cellserve::engine::synth::testing {

// A file name under the temp directory that is unique to this process; removed on destruction.
class TempFile {
 public:
  explicit TempFile(const std::string& name)
      : path_((std::filesystem::temp_directory_path() / ("cs_synth_" + std::to_string(::getpid()) + "_" + name))
                  .string()) {}
  ~TempFile() {
    std::error_code ec;
    std::filesystem::remove(path_, ec);
  }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// The plan of (arch, shape, type); fails the calling test when there is none.
inline ModelPlan plan_or_die(Arch arch, const std::string& shape, SynthType type,
                             PlanContents contents = PlanContents::Full) {
  auto plan = plan_model({arch, shape, type}, contents);
  EXPECT_TRUE(plan.ok()) << plan.status().to_string();
  return plan.ok() ? std::move(plan).value() : ModelPlan{};
}

// The planned tensor `name`, or nullptr.
inline const PlannedTensor* find(const ModelPlan& plan, const std::string& name) {
  for (const auto& t : plan.tensors) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

// The planned metadata value of `key`, or nullptr.
inline const GgufValue* find_value(const ModelPlan& plan, const std::string& key) {
  for (const auto& kv : plan.metadata) {
    if (kv.key == key) return &kv.value;
  }
  return nullptr;
}

}  // namespace cellserve::engine::synth::testing
