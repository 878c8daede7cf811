// A synthetic but consistent tokenizer of the size a preset asks for.
//
// It is not the real vocabulary of any model (that cannot be derived offline); it has the real
// structure: for byte-level BPE ("gpt2") the 256 byte tokens in GPT-2's bytes_to_unicode order,
// merge-built tokens each produced by one entry of tokenizer.ggml.merges, then the model's real
// added/special tokens at their real ids with their token types, then [PADn] UNUSED entries up
// to the embedding size; for SentencePiece ("llama") <unk> <s> </s>, the 256 <0xXX> byte
// tokens and scored pieces. See docs/synth.md.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "engine/gguf/gguf_value.h"
#include "engine/synth/synth_spec.h"

namespace cellserve::engine::synth {

// llama.cpp's token types (llama_token_type / gguf TokenType).
enum class TokenType : int32_t { Normal = 1, Unknown = 2, Control = 3, UserDefined = 4, Unused = 5, Byte = 6 };

struct SynthVocab {
  std::vector<std::string> tokens;  // id -> text (GPT-2 byte-level unicode for BPE)
  std::vector<int32_t> types;       // id -> TokenType
  std::vector<float> scores;        // SPM only: id -> score
  std::vector<std::string> merges;  // BPE only: "left right", rank order
};

// Builds the vocabulary of `spec` (exactly spec.n_vocab tokens, all distinct). InvalidArgument
// when the added tokens do not fit.
Result<SynthVocab> build_vocab(const VocabSpec& spec);

// The tokenizer.* metadata of `spec` in the order llama.cpp's converter writes it:
// model, [pre], tokens, [scores], token_type, [merges], special token ids (u32),
// [add_bos_token], [chat_template]. Fails like build_vocab, or Internal when a named special
// token is missing.
Result<std::vector<GgufKeyValue>> tokenizer_metadata(const VocabSpec& spec);

}  // namespace cellserve::engine::synth
