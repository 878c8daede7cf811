// The vocabulary of `cellserve synth`: architectures, output weight types and model shapes.
//
// A ModelShape is everything that fixes the tensor table and the metadata of a synthetic model:
// the hyperparameters of a real (or tiny test) architecture, its vocabulary layout and the
// scales its random weights are drawn with. Presets (presets.h) are ModelShapes whose numbers
// come from published Hugging Face configs; docs/synth.md names the source of each.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "engine/quant/ggml_type.h"
#include "engine/quant/quant_mix.h"

namespace cellserve::engine::synth {

// Architectures synth can write; the spelling is the GGUF `general.architecture` value.
enum class Arch { Llama, Qwen2, Qwen3, Qwen35 };

std::string_view arch_name(Arch arch);  // "llama", "qwen2", "qwen3", "qwen35"
// InvalidArgument (listing the known names) for anything else.
Result<Arch> arch_from_name(std::string_view name);
const std::vector<Arch>& all_archs();

// Output types, named as llama-quantize names them. Each maps to llama.cpp's llama_ftype
// (the `general.file_type` value) and a default tensor type.
enum class SynthType { F32, F16, BF16, Q8_0, Q4_0, Q4_K_M, Q5_K_M, Q6_K };

std::string_view synth_type_name(SynthType type);  // "F32", "Q4_K_M", ...
// Case-insensitive; InvalidArgument (listing the known names) for anything else.
Result<SynthType> synth_type_from_name(std::string_view name);
const std::vector<SynthType>& all_synth_types();
// llama_ftype: F32 0, F16 1, Q4_0 2, Q8_0 7, Q4_K_M 15, Q5_K_M 17, Q6_K 18, BF16 32.
uint32_t synth_file_type(SynthType type);
// llama_ftype_get_default_type(): the type most weight matrices get.
GgmlType synth_default_tensor_type(SynthType type);
// llama-quantize's per-tensor rules for `type` (engine/quant/quant_mix.h).
QuantMix synth_quant_mix(SynthType type);

enum class VocabKind {
  Spm,   // tokenizer.ggml.model "llama": <unk> <s> </s>, 256 byte tokens, scored pieces
  Gpt2,  // tokenizer.ggml.model "gpt2": 256 byte-level tokens, merge-built tokens, added tokens
};

// Which real added/special tokens follow the ordinary tokens (in their published order).
enum class AddedTokens {
  None,    // SPM: the three specials are part of the piece list
  Qwen25,  // Qwen2.5's 22: <|endoftext|> ... <|file_sep|>
  Qwen3,   // Qwen3's 26: Qwen2.5's 22 + <tool_response> </tool_response> <think> </think>
  Llama3,  // Llama 3's 256: <|begin_of_text|> ... <|reserved_special_token_247|>
};

enum class ChatTemplate { None, Qwen25, Qwen3, Qwen35, Llama32 };

struct VocabSpec {
  VocabKind kind = VocabKind::Gpt2;
  std::string pre;         // tokenizer.ggml.pre ("qwen2", "qwen35", "llama-bpe"); empty for SPM
  int64_t n_vocab = 0;     // rows of token_embd: every id below this has a token
  int64_t n_ordinary = 0;  // Gpt2: byte + merge-built tokens before the added tokens (>= 256)
  AddedTokens added = AddedTokens::None;
  std::string bos, eos, pad;    // token texts ("" = key not written); SPM uses <s> </s> <unk>
  std::optional<bool> add_bos;  // tokenizer.ggml.add_bos_token when set
  ChatTemplate chat_template = ChatTemplate::None;
};

// Scales of the random weights (see docs/synth.md): W ~ N(0, (g/sqrt(n_in))^2) with g = 1, or
// g = res_gain for the residual-branch outputs (attn_output, ssm_out, ffn_down).
struct InitScales {
  float emb_std = 1.0f;  // token_embd
  float out_std = 0.5f;  // output (untied only)
  float res_gain = 1.0f;
};

// Llama 3 "rope_type": "llama3" scaling; the converter stores it as the rope_freqs.weight tensor.
struct Llama3RopeScaling {
  float factor = 8.0f;
  float low_freq_factor = 1.0f;
  float high_freq_factor = 4.0f;
  int64_t original_context = 8192;
};

struct ModelShape {
  std::string preset;  // "tiny", "qwen3-0.6b", ...
  std::string source;  // where the numbers come from (one line)
  Arch arch = Arch::Llama;
  int64_t n_embd = 0;
  int64_t n_layer = 0;
  int64_t n_head = 0;
  int64_t n_head_kv = 0;
  int64_t head_dim = 0;
  int64_t n_ff = 0;
  int64_t n_ctx = 0;
  float rope_base = 10000.0f;
  float rms_eps = 1e-6f;
  bool tied_embeddings = false;
  bool write_head_dim = true;     // <arch>.attention.key_length / value_length (HF config has head_dim)
  bool write_vocab_size = false;  // llama.vocab_size (written by the llama converter)
  int64_t rope_dims = 0;          // <arch>.rope.dimension_count; 0 = key not written
  std::optional<Llama3RopeScaling> llama3_rope;

  // qwen35 only: gated DeltaNet ("linear attention") layers and the hybrid layout.
  std::array<int32_t, 4> rope_sections{0, 0, 0, 0};  // qwen35.rope.dimension_sections
  int64_t ssm_conv_kernel = 0;                       // linear_conv_kernel_dim
  int64_t ssm_state_size = 0;                        // linear_key_head_dim
  int64_t ssm_group_count = 0;                       // linear_num_key_heads
  int64_t ssm_time_step_rank = 0;                    // linear_num_value_heads
  int64_t ssm_inner_size = 0;                        // linear_value_head_dim * linear_num_value_heads
  int64_t full_attention_interval = 0;

  VocabSpec vocab;
  InitScales init;

  // qwen35: layer `il` is a full (gated softmax) attention layer; all layers for other archs.
  bool is_full_attention(int64_t il) const { return arch != Arch::Qwen35 || (il + 1) % full_attention_interval == 0; }
  // Checks the internal consistency (positive sizes, divisibility, vocabulary large enough).
  Status validate() const;
};

}  // namespace cellserve::engine::synth
