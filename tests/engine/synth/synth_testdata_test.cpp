// `synth --shape tiny` reproduces the structure of shared/testdata's random models exactly:
// same metadata keys (in order) with the same value types, same hyperparameter values, same
// tensors (name, shape, type, in file order), for every architecture and type.
#include <gtest/gtest.h>

#include <cctype>
#include <string>

#include "engine/gguf/gguf_file.h"
#include "engine/synth/synth.h"
#include "tests/engine/synth/synth_test_util.h"
#include "tests/support/testdata.h"

namespace cellserve::engine::synth {
namespace {

using testing::TempFile;

// Keys whose values legitimately differ (the tokenizer contents and the model's name).
bool value_may_differ(const std::string& key) {
  return key == "general.name" || key == "tokenizer.ggml.tokens" || key == "tokenizer.ggml.merges" ||
         key == "tokenizer.ggml.scores" || key == "tokenizer.ggml.token_type" || key == "tokenizer.chat_template";
}

std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

struct Case {
  Arch arch;
  SynthType type;
};

class SynthMatchesTestdata : public ::testing::TestWithParam<Case> {};

TEST_P(SynthMatchesTestdata, SameKeysTypesAndTensors) {
  CS_REQUIRE_TESTDATA();
  const Case c = GetParam();
  const std::string stem = std::string(arch_name(c.arch)) + "-tiny-" + lower(std::string(synth_type_name(c.type)));
  auto ref = GgufFile::open(::cellserve::testing::testdata_path("models/" + stem + ".gguf"));
  ASSERT_TRUE(ref.ok()) << ref.status().to_string();

  auto plan = plan_model({c.arch, "tiny", c.type});
  ASSERT_TRUE(plan.ok()) << plan.status().to_string();
  TempFile out(stem + ".gguf");
  ASSERT_TRUE(write_model(*plan, out.path(), {.seed = 7, .n_threads = 2, .progress = {}}).ok());
  auto got = GgufFile::open(out.path());
  ASSERT_TRUE(got.ok()) << got.status().to_string();

  ASSERT_EQ(got->metadata().size(), ref->metadata().size());
  for (size_t i = 0; i < ref->metadata().size(); ++i) {
    const GgufKeyValue& r = ref->metadata()[i];
    const GgufKeyValue& g = got->metadata()[i];
    SCOPED_TRACE(r.key);
    EXPECT_EQ(g.key, r.key);
    EXPECT_EQ(g.value.type(), r.value.type());
    if (const GgufArray* ra = r.value.as_array()) {
      ASSERT_NE(g.value.as_array(), nullptr);
      EXPECT_EQ(g.value.as_array()->element_type, ra->element_type);
      EXPECT_EQ(g.value.as_array()->items.size(), ra->items.size());  // same vocabulary / merge counts
    }
    if (!value_may_differ(r.key)) {
      EXPECT_EQ(g.value, r.value);
    }
  }

  ASSERT_EQ(got->tensors().size(), ref->tensors().size());
  for (size_t i = 0; i < ref->tensors().size(); ++i) {
    const GgufTensorInfo& r = ref->tensors()[i];
    const GgufTensorInfo& g = got->tensors()[i];
    SCOPED_TRACE(r.name);
    EXPECT_EQ(g.name, r.name);
    EXPECT_EQ(g.shape, r.shape) << g.shape.to_string() << " vs " << r.shape.to_string();
    EXPECT_EQ(g.type, r.type) << ggml_type_name(g.type) << " vs " << ggml_type_name(r.type);
    EXPECT_EQ(g.size_bytes, r.size_bytes);
  }
  // Same metadata and tensor table => the files differ only by the tokenizer strings' bytes.
  EXPECT_EQ(got->file_size() - got->data_offset(), ref->file_size() - ref->data_offset());
}

std::vector<Case> all_cases() {
  std::vector<Case> cases;
  for (Arch a : {Arch::Llama, Arch::Qwen3, Arch::Qwen35}) {
    for (SynthType t : all_synth_types()) cases.push_back({a, t});
  }
  return cases;
}

// The chat templates are the real ones, byte for byte.
TEST(SynthTestdata, ChatTemplatesAreTheRealOnes) {
  CS_REQUIRE_TESTDATA();
  for (Arch a : {Arch::Qwen3, Arch::Qwen35}) {
    const std::string stem = std::string(arch_name(a)) + "-tiny-f32";
    auto ref = GgufFile::open(::cellserve::testing::testdata_path("models/" + stem + ".gguf"));
    ASSERT_TRUE(ref.ok()) << ref.status().to_string();
    auto plan = plan_model({a, "tiny", SynthType::F32});
    ASSERT_TRUE(plan.ok());
    const GgufValue* tmpl = testing::find_value(*plan, "tokenizer.chat_template");
    ASSERT_NE(tmpl, nullptr);
    EXPECT_EQ(*tmpl, *ref->find("tokenizer.chat_template")) << stem;
  }
}

INSTANTIATE_TEST_SUITE_P(AllTinyFiles, SynthMatchesTestdata, ::testing::ValuesIn(all_cases()),
                         [](const ::testing::TestParamInfo<Case>& info) {
                           return std::string(arch_name(info.param.arch)) + "_" +
                                  std::string(synth_type_name(info.param.type));
                         });

}  // namespace
}  // namespace cellserve::engine::synth
