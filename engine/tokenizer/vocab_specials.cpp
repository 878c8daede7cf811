// llama.cpp's recognition of special tokens by their text (llama_vocab::impl::load, "auto-detect
// special tokens by text"): most GGUF files name only bos/eos, so end-of-turn and fill-in-the-middle
// tokens are found by the texts model families use for them.
#include <algorithm>
#include <initializer_list>
#include <string_view>

#include "engine/tokenizer/vocab_builder.h"

namespace cellserve::engine::tokenizer {
namespace {

using Names = std::initializer_list<std::string_view>;

// DeepSeek's texts use U+FF5C FULLWIDTH VERTICAL LINE and U+2581 LOWER ONE EIGHTH BLOCK.
#define CS_BAR "\xEF\xBD\x9C"
#define CS_SP "\xE2\x96\x81"

// clang-format off
const Names kEotNames = {"<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>", "<|end_of_text|>",
                         "<EOT>", "_<EOT>", "[EOT]", "<" CS_BAR "end" CS_SP "of" CS_SP "sentence" CS_BAR ">",
                         "<end_of_utterance>"};
const Names kEomNames = {"<|eom_id|>"};
const Names kFimPreNames = {"<|fim_prefix|>", "<fim-prefix>", "<fim_prefix>", "<" CS_BAR "fim" CS_SP "begin" CS_BAR ">",
                            "<PRE>", CS_SP "<PRE>", "<|code_prefix|>", "<|prefix|>"};
const Names kFimSufNames = {"<|fim_suffix|>", "<fim-suffix>", "<fim_suffix>", "<" CS_BAR "fim" CS_SP "hole" CS_BAR ">",
                            "<SUF>", CS_SP "<SUF>", "<|code_suffix|>", "<|suffix|>"};
const Names kFimMidNames = {"<|fim_middle|>", "<fim-middle>", "<fim_middle>", "<" CS_BAR "fim" CS_SP "end" CS_BAR ">",
                            "<MID>", CS_SP "<MID>", "<|code_middle|>", "<|middle|>"};
const Names kFimPadNames = {"<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>", "[PAD]"};
const Names kFimRepNames = {"<|fim_repo|>", "<|repo_name|>", "<fim-repo>", "<REPO>", "<reponame>"};
const Names kFimSepNames = {"<|file_sep|>"};

// Tokens that end generation wherever they appear in a vocabulary.
const Names kEogNames = {"<|eot_id|>", "<|im_end|>", "<|end|>", "<|return|>", "<|call|>", "<|flush|>", "<|calls|>",
                         "<end_of_turn>", "<|endoftext|>", "</s>", "<|eom_id|>", "<EOT>", "_<EOT>", "[EOT]", "[EOS]",
                         "<|end_of_text|>", "<end_of_utterance>", "<eos>", "<turn|>", "<|tool_response>",
                         "<" CS_BAR "end" CS_SP "of" CS_SP "sentence" CS_BAR ">", "[e~[",
                         "<|content_model_end_sampling|>"};
// clang-format on

#undef CS_BAR
#undef CS_SP

}  // namespace

void VocabularyBuilder::apply_special_token_rules(Vocabulary& v) {
  auto force_control = [&](int32_t id) { v.tokens_[static_cast<size_t>(id)].attr |= token_attr::kControl; };

  // Ids the file did not give. llama.cpp takes whichever candidate its hash map yields first; we take
  // the first name in the list above that the vocabulary has, which is deterministic.
  auto detect = [&](int32_t& id, Names names) {
    if (id != kNoToken) return;
    for (std::string_view name : names) {
      if (const int32_t found = v.find(name); found != kNoToken) {
        id = found;
        force_control(found);
        return;
      }
    }
  };
  detect(v.eot_, kEotNames);
  detect(v.eom_, kEomNames);
  detect(v.fim_pre_, kFimPreNames);
  detect(v.fim_suf_, kFimSufNames);
  detect(v.fim_mid_, kFimMidNames);
  detect(v.fim_pad_, kFimPadNames);
  detect(v.fim_rep_, kFimRepNames);
  detect(v.fim_sep_, kFimSepNames);

  // Control tokens that say they are unused ("<unused12>") are unused.
  for (TokenData& t : v.tokens_) {
    if ((t.attr & token_attr::kControl) != 0 && t.text.find("unused") != std::string::npos) {
      t.attr |= token_attr::kUnused;
    }
  }

  v.eog_.clear();
  for (int32_t id : {v.fim_pad_, v.fim_rep_, v.fim_sep_}) {
    if (id != kNoToken) v.eog_.insert(id);
  }
  for (std::string_view name : kEogNames) {
    if (const int32_t id = v.find(name); id != kNoToken) {
      v.eog_.insert(id);
      force_control(id);
    }
  }
  for (int32_t id : {v.eos_, v.eot_, v.eom_}) {
    if (id != kNoToken) v.eog_.insert(id);
  }

  // Special-token matching order: longest text first (llama.cpp sorts by length only, with an
  // unstable sort; ties are broken by id here).
  v.special_tokens_.clear();
  for (int32_t id = 0; id < v.n_tokens(); ++id) {
    if ((v.attr(id) & (token_attr::kControl | token_attr::kUserDefined | token_attr::kUnknown)) != 0) {
      v.special_tokens_.push_back(id);
    }
  }
  std::stable_sort(v.special_tokens_.begin(), v.special_tokens_.end(),
                   [&](int32_t a, int32_t b) { return v.token(a).text.size() > v.token(b).text.size(); });
}

}  // namespace cellserve::engine::tokenizer
