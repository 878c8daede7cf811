// A small byte-level vocabulary for the fuzz targets that need a tokenizer (masking, prompts),
// built in memory as the grammar tests build theirs: ids 0-255 are the bytes, then a few merged
// JSON pieces and the chatml specials.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string>

#include "engine/tokenizer/tokenizer.h"
#include "tests/engine/tokenizer/synthetic_vocab.h"

namespace cellserve::fuzz {

inline const engine::tokenizer::Tokenizer& fuzz_tokenizer() {
  static const engine::tokenizer::Tokenizer tok = [] {
    namespace tk = engine::tokenizer;
    tk::testing::SyntheticVocab v = tk::testing::byte_level_vocab();
    for (const char* text : {"{\"", "\":", "\",", "\"}", "true", "false", "null", "  ", "\n  ", "12", "-0", ".5", "e+",
                             "\\u00", "ab", "\xE2\x82", "\x82\xAC", "[]", "{}"}) {
      std::string encoded;
      for (unsigned char ch : std::string(text)) encoded += tk::byte_to_utf8(ch);
      v.add(encoded);
    }
    v.add("<|endoftext|>", 3);
    v.add("<|im_start|>", 3);
    v.add("<|im_end|>", 3);
    v.extra.emplace_back("tokenizer.ggml.eos_token_id",
                         engine::GgufValue::u32(static_cast<uint32_t>(v.tokens.size() - 1)));
    auto tok = tk::testing::build_tokenizer(v);
    if (!tok.ok()) {
      std::fprintf(stderr, "the fuzz vocabulary does not load: %s\n", tok.status().to_string().c_str());
      std::abort();
    }
    return std::move(tok).value();
  }();
  return tok;
}

}  // namespace cellserve::fuzz
