// Helpers for the tokenizer tests: loading (and caching) tokenizers from shared/testdata, and
// reading llama.cpp's tokenizer corpora (.inp/.out, see shared/testdata/README.md §3).
#pragma once

#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "engine/gguf/gguf_file.h"
#include "engine/tokenizer/tokenizer.h"
#include "tests/support/testdata.h"

namespace cellserve::engine::tokenizer::testing {

inline std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The tokenizer of testdata file `relative` (optionally with its pre-tokenizer replaced), loaded once
// per test binary. Fails the current test and returns nullptr when it cannot be loaded.
inline const Tokenizer* testdata_tokenizer(const std::string& relative, const std::string& pre_override = "") {
  static std::map<std::string, std::unique_ptr<Tokenizer>> cache;
  const std::string key = relative + "|" + pre_override;
  if (auto it = cache.find(key); it != cache.end()) return it->second.get();
  auto file = GgufFile::open(cellserve::testing::testdata_path(relative));
  if (!file.ok()) {
    ADD_FAILURE() << relative << ": " << file.status().to_string();
    return nullptr;
  }
  VocabularyOptions options;
  if (!pre_override.empty()) options.pre_override = pre_override;
  auto tok = Tokenizer::from_gguf(*file, options);
  if (!tok.ok()) {
    ADD_FAILURE() << relative << ": " << tok.status().to_string();
    return nullptr;
  }
  return cache.emplace(key, std::make_unique<Tokenizer>(std::move(tok).value())).first->second.get();
}

struct CorpusCase {
  std::string text;
  std::vector<int32_t> ids;
};

// Reads `<base>.inp` / `<base>.out` the way llama.cpp's test-tokenizer-0 does: inputs separated by
// "\n__ggml_vocab_test__\n", one output line of space-separated ids per input.
inline std::vector<CorpusCase> read_corpus(const std::string& base) {
  const std::string raw = read_file(base + ".inp");
  const std::string sep = "\n__ggml_vocab_test__\n";
  std::vector<std::string> inputs;
  for (size_t pos = 0; pos < raw.size();) {
    const size_t next = raw.find(sep, pos);
    if (next == std::string::npos) {
      inputs.push_back(raw.substr(pos));
      break;
    }
    inputs.push_back(raw.substr(pos, next - pos));
    pos = next + sep.size();
  }
  std::vector<std::string> outputs;
  std::istringstream out(read_file(base + ".out"));
  for (std::string line; std::getline(out, line);) outputs.push_back(line);
  EXPECT_EQ(inputs.size(), outputs.size()) << base;

  std::vector<CorpusCase> cases;
  for (size_t i = 0; i < inputs.size() && i < outputs.size(); ++i) {
    CorpusCase c{inputs[i], {}};
    std::istringstream ids(outputs[i]);
    for (int32_t id; ids >> id;) c.ids.push_back(id);
    cases.push_back(std::move(c));
  }
  return cases;
}

}  // namespace cellserve::engine::tokenizer::testing
