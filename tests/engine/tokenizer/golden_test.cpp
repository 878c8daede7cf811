// The tokenizer inside every test model against llama.cpp's goldens (shared/testdata/golden/*.json):
// the prompt tokenizes to exactly prompt_tokens with the recorded flags, and the recorded detokenized
// prompt and greedy continuation are reproduced byte for byte.
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <filesystem>
#include <iostream>

#include "tests/engine/tokenizer/tokenizer_test_util.h"

namespace cellserve::engine::tokenizer {
namespace {

namespace json = boost::json;
using testing::testdata_tokenizer;

std::vector<int32_t> ids_of(const json::value& v) {
  std::vector<int32_t> ids;
  for (const auto& x : v.as_array()) ids.push_back(static_cast<int32_t>(x.to_number<int64_t>()));
  return ids;
}

std::string from_hex(std::string_view hex) {
  std::string out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2)
    out.push_back(static_cast<char>(std::stoi(std::string(hex.substr(i, 2)), nullptr, 16)));
  return out;
}

std::vector<std::filesystem::path> golden_files() {
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::directory_iterator(cellserve::testing::testdata_path("golden"))) {
    if (e.path().extension() == ".json") files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

TEST(TokenizerGolden, PromptTokensMatchLlamaCpp) {
  CS_REQUIRE_TESTDATA();
  size_t checked = 0;
  for (const auto& path : golden_files()) {
    const json::object g = json::parse(testing::read_file(path.string())).as_object();
    const std::string name = path.filename().string();
    if (!g.at("prompt_text").is_string()) continue;
    const Tokenizer* tok = testdata_tokenizer(std::string(g.at("model").at("file").as_string()));
    ASSERT_NE(tok, nullptr) << name;
    const json::object& flags = g.at("prompt_tokenize").as_object();
    const std::vector<int32_t> expected = ids_of(g.at("prompt_tokens"));
    const std::vector<int32_t> got =
        tok->tokenize(std::string(g.at("prompt_text").as_string()), flags.at("add_special").as_bool(),
                      flags.at("parse_special").as_bool());
    EXPECT_EQ(got, expected) << name;
    EXPECT_EQ(tok->n_vocab(), g.at("n_vocab").to_number<int32_t>()) << name;
    ++checked;
  }
  std::cout << "[ golden   ] " << checked << " golden prompts tokenized\n";
  EXPECT_GT(checked, 0u);
}

// llama_detokenize(tokens, remove_special = false, unparse_special = true), as the goldens record it.
TEST(TokenizerGolden, DetokenizedTextMatchesLlamaCpp) {
  CS_REQUIRE_TESTDATA();
  for (const auto& path : golden_files()) {
    const json::object g = json::parse(testing::read_file(path.string())).as_object();
    const std::string name = path.filename().string();
    const Tokenizer* tok = testdata_tokenizer(std::string(g.at("model").at("file").as_string()));
    ASSERT_NE(tok, nullptr) << name;
    EXPECT_EQ(tok->detokenize(ids_of(g.at("prompt_tokens")), false, true),
              from_hex(g.at("prompt_detokenized_hex").as_string()))
        << name;
    const json::object& greedy = g.at("greedy").as_object();
    EXPECT_EQ(tok->detokenize(ids_of(greedy.at("tokens")), false, true), from_hex(greedy.at("text_hex").as_string()))
        << name;
  }
}

}  // namespace
}  // namespace cellserve::engine::tokenizer
