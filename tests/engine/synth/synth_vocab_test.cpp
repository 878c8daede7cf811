// The synthetic tokenizers are consistent: the right size, distinct tokens, merges that build
// tokens from tokens, the real special tokens at their real ids.
#include <gtest/gtest.h>

#include <algorithm>
#include <tuple>
#include <unordered_map>

#include "engine/synth/presets.h"
#include "engine/synth/vocab_synth.h"

namespace cellserve::engine::synth {
namespace {

uint32_t id_of(const std::vector<GgufKeyValue>& kv, const std::string& key) {
  for (const auto& item : kv) {
    if (item.key == key) return static_cast<uint32_t>(item.value.as_int().value_or(-1));
  }
  ADD_FAILURE() << key << " missing";
  return 0;
}

TEST(SynthVocab, EveryPresetIsConsistent) {
  std::vector<std::tuple<VocabKind, int64_t, int64_t, AddedTokens>> seen;  // presets sharing a layout
  for (Arch a : all_archs()) {
    for (const ModelShape& s : presets_for(a)) {
      SCOPED_TRACE(std::string(arch_name(a)) + " " + s.preset);
      const auto layout = std::make_tuple(s.vocab.kind, s.vocab.n_vocab, s.vocab.n_ordinary, s.vocab.added);
      if (std::find(seen.begin(), seen.end(), layout) != seen.end()) continue;
      seen.push_back(layout);
      auto v = build_vocab(s.vocab);
      ASSERT_TRUE(v.ok()) << v.status().to_string();
      ASSERT_EQ(static_cast<int64_t>(v->tokens.size()), s.vocab.n_vocab);
      ASSERT_EQ(v->types.size(), v->tokens.size());
      std::unordered_map<std::string, size_t> ids;
      for (size_t i = 0; i < v->tokens.size(); ++i) {
        EXPECT_FALSE(v->tokens[i].empty());
        EXPECT_TRUE(ids.emplace(v->tokens[i], i).second) << "duplicate token " << v->tokens[i];
      }
      if (s.vocab.kind == VocabKind::Spm) {
        EXPECT_EQ(v->scores.size(), v->tokens.size());
        EXPECT_EQ(v->tokens[0], "<unk>");
        EXPECT_EQ(v->tokens[3], "<0x00>");
        EXPECT_EQ(v->types[3], static_cast<int32_t>(TokenType::Byte));
        continue;
      }
      ASSERT_EQ(static_cast<int64_t>(v->merges.size()), s.vocab.n_ordinary - 256);
      for (size_t m = 0; m < v->merges.size(); ++m) {
        const std::string& merge = v->merges[m];
        const size_t sp = merge.find(' ');
        ASSERT_NE(sp, std::string::npos);
        const std::string left = merge.substr(0, sp), right = merge.substr(sp + 1);
        ASSERT_TRUE(ids.contains(left) && ids.contains(right)) << merge;
        // Merge m produces token 256 + m, from tokens that exist before it.
        EXPECT_EQ(ids.at(left + right), 256 + m);
        EXPECT_LT(ids.at(left), 256 + m);
      }
      EXPECT_EQ(v->tokens[0], "!");
      EXPECT_EQ(v->tokens[ids.at("\xC4\x8A")], "\xC4\x8A");  // 'Ċ' (the newline byte) exists
    }
  }
}

TEST(SynthVocab, SpecialTokenIdsAreTheRealOnes) {
  struct Expect {
    Arch arch;
    const char* shape;
    uint32_t bos, eos;
    int64_t n_vocab;
  };
  for (const Expect& e : {Expect{Arch::Qwen3, "qwen3-0.6b", 151643, 151645, 151936},
                          Expect{Arch::Qwen2, "qwen2.5-0.5b", 151643, 151645, 151936},
                          Expect{Arch::Qwen35, "qwen35-9b", 248044, 248046, 248320},
                          Expect{Arch::Llama, "llama-3.2-1b", 128000, 128009, 128256},
                          Expect{Arch::Qwen3, "tiny", 1000, 1002, 1026}, Expect{Arch::Llama, "tiny", 1, 2, 512}}) {
    SCOPED_TRACE(e.shape);
    auto shape = find_preset(e.arch, e.shape);
    ASSERT_TRUE(shape.ok());
    auto kv = tokenizer_metadata(shape->vocab);
    ASSERT_TRUE(kv.ok()) << kv.status().to_string();
    EXPECT_EQ(id_of(*kv, "tokenizer.ggml.bos_token_id"), e.bos);
    EXPECT_EQ(id_of(*kv, "tokenizer.ggml.eos_token_id"), e.eos);
  }
  // Qwen3.5's vision tokens sit where config.json says (image 248056, video 248057).
  auto q = find_preset(Arch::Qwen35, "qwen35-0.8b");
  ASSERT_TRUE(q.ok());
  auto v = build_vocab(q->vocab);
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(v->tokens[248056], "<|image_pad|>");
  EXPECT_EQ(v->tokens[248057], "<|video_pad|>");
  EXPECT_EQ(v->types[248058], static_cast<int32_t>(TokenType::UserDefined));  // <tool_call>
  EXPECT_EQ(v->tokens[248319], "[PAD248319]");
  EXPECT_EQ(v->types[248319], static_cast<int32_t>(TokenType::Unused));
}

TEST(SynthVocab, RejectsAddedTokensThatDoNotFit) {
  VocabSpec spec;
  spec.kind = VocabKind::Gpt2;
  spec.n_vocab = 270;
  spec.n_ordinary = 260;
  spec.added = AddedTokens::Qwen3;  // 26 more than fit
  auto v = build_vocab(spec);
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.status().code(), StatusCode::InvalidArgument);
}

}  // namespace
}  // namespace cellserve::engine::synth
