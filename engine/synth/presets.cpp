#include "engine/synth/presets.h"

namespace cellserve::engine::synth {
namespace {

// Byte-level BPE vocabulary with `added` after `n_ordinary` ordinary tokens, padded with
// [PADn] up to `n_vocab` the way convert_hf_to_gguf.py pads a config vocab_size larger than
// the tokenizer.
VocabSpec qwen_vocab(std::string pre, int64_t n_vocab, int64_t n_ordinary, AddedTokens added, ChatTemplate tmpl,
                     std::string eos) {
  VocabSpec v;
  v.kind = VocabKind::Gpt2;
  v.pre = std::move(pre);
  v.n_vocab = n_vocab;
  v.n_ordinary = n_ordinary;
  v.added = added;
  v.bos = "<|endoftext|>";
  v.pad = "<|endoftext|>";
  v.eos = std::move(eos);
  v.add_bos = false;
  v.chat_template = tmpl;
  return v;
}

// --- llama -------------------------------------------------------------------------------------

ModelShape llama_tiny() {
  ModelShape s;
  s.preset = "tiny";
  s.source = "shared/testdata llama-tiny (README 1b): random llama, SPM vocabulary of stories260K";
  s.arch = Arch::Llama;
  s.n_embd = 256, s.n_layer = 2, s.n_head = 4, s.n_head_kv = 2, s.head_dim = 64, s.n_ff = 512, s.n_ctx = 2048;
  s.rope_base = 10000.0f, s.rms_eps = 1e-5f, s.rope_dims = 64;
  s.vocab.kind = VocabKind::Spm;
  s.vocab.n_vocab = 512;
  s.vocab.bos = "<s>", s.vocab.eos = "</s>";
  s.init = {1.0f, 0.5f, 1.0f};
  return s;
}

ModelShape llama_32_1b() {
  ModelShape s;
  s.preset = "llama-3.2-1b";
  s.source = "meta-llama/Llama-3.2-1B config.json (special tokens / template of -Instruct)";
  s.arch = Arch::Llama;
  s.n_embd = 2048, s.n_layer = 16, s.n_head = 32, s.n_head_kv = 8, s.head_dim = 64, s.n_ff = 8192;
  s.n_ctx = 131072, s.rope_base = 500000.0f, s.rms_eps = 1e-5f, s.rope_dims = 64;
  s.tied_embeddings = true, s.write_vocab_size = true;
  s.llama3_rope = Llama3RopeScaling{32.0f, 1.0f, 4.0f, 8192};
  s.vocab.kind = VocabKind::Gpt2;
  s.vocab.pre = "llama-bpe";
  s.vocab.n_vocab = 128256, s.vocab.n_ordinary = 128000, s.vocab.added = AddedTokens::Llama3;
  s.vocab.bos = "<|begin_of_text|>", s.vocab.eos = "<|eot_id|>", s.vocab.add_bos = true;
  s.vocab.chat_template = ChatTemplate::Llama32;
  s.init = {0.4f, 0.5f, 1.0f};
  return s;
}

// --- qwen2 -------------------------------------------------------------------------------------

ModelShape qwen2_tiny() {
  ModelShape s;
  s.preset = "tiny";
  s.source = "cellserve: qwen3-tiny sizes with Qwen2 structure (QKV bias, no QK-norm, head_dim = n_embd/n_head)";
  s.arch = Arch::Qwen2;
  s.n_embd = 256, s.n_layer = 2, s.n_head = 4, s.n_head_kv = 2, s.head_dim = 64, s.n_ff = 512, s.n_ctx = 4096;
  s.rope_base = 1000000.0f, s.rms_eps = 1e-6f, s.tied_embeddings = true, s.write_head_dim = false;
  s.vocab = qwen_vocab("qwen2", 1026, 1004, AddedTokens::Qwen25, ChatTemplate::Qwen25, "<|im_end|>");
  s.init = {0.4f, 0.5f, 8.0f};
  return s;
}

ModelShape qwen25_05b() {
  ModelShape s;
  s.preset = "qwen2.5-0.5b";
  s.source = "Qwen/Qwen2.5-0.5B config.json (special tokens / template of -Instruct)";
  s.arch = Arch::Qwen2;
  s.n_embd = 896, s.n_layer = 24, s.n_head = 14, s.n_head_kv = 2, s.head_dim = 64, s.n_ff = 4864, s.n_ctx = 32768;
  s.rope_base = 1000000.0f, s.rms_eps = 1e-6f, s.tied_embeddings = true, s.write_head_dim = false;
  s.vocab = qwen_vocab("qwen2", 151936, 151643, AddedTokens::Qwen25, ChatTemplate::Qwen25, "<|im_end|>");
  s.init = {0.4f, 0.5f, 1.0f};
  return s;
}

// --- qwen3 -------------------------------------------------------------------------------------

ModelShape qwen3_tiny() {
  ModelShape s;
  s.preset = "tiny";
  s.source = "shared/testdata qwen3-tiny (README 1b): random qwen3, tied embeddings, q dim 512 != n_embd";
  s.arch = Arch::Qwen3;
  s.n_embd = 256, s.n_layer = 2, s.n_head = 4, s.n_head_kv = 2, s.head_dim = 128, s.n_ff = 512, s.n_ctx = 4096;
  s.rope_base = 1000000.0f, s.rms_eps = 1e-6f, s.tied_embeddings = true;
  s.vocab = qwen_vocab("qwen2", 1026, 1000, AddedTokens::Qwen3, ChatTemplate::Qwen3, "<|im_end|>");
  s.init = {0.4f, 0.5f, 8.0f};
  return s;
}

ModelShape qwen3_06b() {
  ModelShape s;
  s.preset = "qwen3-0.6b";
  s.source = "Qwen/Qwen3-0.6B config.json";
  s.arch = Arch::Qwen3;
  s.n_embd = 1024, s.n_layer = 28, s.n_head = 16, s.n_head_kv = 8, s.head_dim = 128, s.n_ff = 3072, s.n_ctx = 40960;
  s.rope_base = 1000000.0f, s.rms_eps = 1e-6f, s.tied_embeddings = true;
  s.vocab = qwen_vocab("qwen2", 151936, 151643, AddedTokens::Qwen3, ChatTemplate::Qwen3, "<|im_end|>");
  s.init = {0.4f, 0.5f, 1.0f};
  return s;
}

// --- qwen35 ------------------------------------------------------------------------------------

// Qwen3.5 (text tower of Qwen3_5ForConditionalGeneration): head_dim 256, partial rotary 0.25
// (rope dims 64), interleaved MRoPE sections [11, 11, 10], rope_theta 1e7, DeltaNet key/value
// head dims 128, conv kernel 4, a full-attention layer every 4th layer, 262144 context.
ModelShape qwen35_base(std::string preset, int64_t n_embd, int64_t n_ff, int64_t n_layer, int64_t n_head,
                       int64_t n_head_kv, int64_t v_heads, bool tied) {
  ModelShape s;
  s.preset = std::move(preset);
  s.arch = Arch::Qwen35;
  s.n_embd = n_embd, s.n_layer = n_layer, s.n_head = n_head, s.n_head_kv = n_head_kv, s.head_dim = 256;
  s.n_ff = n_ff, s.n_ctx = 262144, s.rope_base = 10000000.0f, s.rms_eps = 1e-6f, s.tied_embeddings = tied;
  s.rope_dims = 64, s.rope_sections = {11, 11, 10, 0};
  s.ssm_conv_kernel = 4, s.ssm_state_size = 128, s.ssm_group_count = 16, s.ssm_time_step_rank = v_heads;
  s.ssm_inner_size = 128 * v_heads, s.full_attention_interval = 4;
  // 248044 ordinary tokens: <|endoftext|> is id 248044 in Qwen3.5's tokenizer.
  s.vocab = qwen_vocab("qwen35", 248320, 248044, AddedTokens::Qwen3, ChatTemplate::Qwen35, "<|im_end|>");
  s.init = tied ? InitScales{0.4f, 0.5f, 1.0f} : InitScales{1.0f, 0.5f, 1.0f};
  return s;
}

ModelShape qwen35_tiny() {
  ModelShape s;
  s.preset = "tiny";
  s.source = "shared/testdata qwen35-tiny (README 1b): 3 Gated-DeltaNet + 1 gated attention layer";
  s.arch = Arch::Qwen35;
  s.n_embd = 256, s.n_layer = 4, s.n_head = 4, s.n_head_kv = 2, s.head_dim = 64, s.n_ff = 512, s.n_ctx = 4096;
  s.rope_base = 10000000.0f, s.rms_eps = 1e-6f, s.rope_dims = 16, s.rope_sections = {3, 3, 2, 0};
  s.ssm_conv_kernel = 4, s.ssm_state_size = 64, s.ssm_group_count = 2, s.ssm_time_step_rank = 4;
  s.ssm_inner_size = 256, s.full_attention_interval = 4;
  s.vocab = qwen_vocab("qwen35", 1026, 1000, AddedTokens::Qwen3, ChatTemplate::Qwen35, "<|im_end|>");
  s.init = {1.0f, 0.5f, 1.0f};
  return s;
}

std::vector<ModelShape> make_presets(Arch arch) {
  switch (arch) {
    case Arch::Llama:
      return {llama_tiny(), llama_32_1b()};
    case Arch::Qwen2:
      return {qwen2_tiny(), qwen25_05b()};
    case Arch::Qwen3:
      return {qwen3_tiny(), qwen3_06b()};
    case Arch::Qwen35: {
      ModelShape s08 = qwen35_base("qwen35-0.8b", 1024, 3584, 24, 8, 2, 16, true);
      s08.source = "Qwen/Qwen3.5-0.8B config.json (text_config)";
      ModelShape s4 = qwen35_base("qwen35-4b", 2560, 9216, 32, 16, 4, 32, true);
      s4.source = "Qwen/Qwen3.5-4B config.json (text_config)";
      ModelShape s9 = qwen35_base("qwen35-9b", 4096, 12288, 32, 16, 4, 32, false);
      s9.source = "Qwen/Qwen3.5-9B config.json (text_config)";
      return {qwen35_tiny(), s08, s4, s9};
    }
  }
  return {};
}

}  // namespace

const std::vector<ModelShape>& presets_for(Arch arch) {
  static const std::vector<ModelShape> kLlama = make_presets(Arch::Llama);
  static const std::vector<ModelShape> kQwen2 = make_presets(Arch::Qwen2);
  static const std::vector<ModelShape> kQwen3 = make_presets(Arch::Qwen3);
  static const std::vector<ModelShape> kQwen35 = make_presets(Arch::Qwen35);
  switch (arch) {
    case Arch::Llama:
      return kLlama;
    case Arch::Qwen2:
      return kQwen2;
    case Arch::Qwen3:
      return kQwen3;
    case Arch::Qwen35:
      return kQwen35;
  }
  return kLlama;
}

Result<ModelShape> find_preset(Arch arch, std::string_view name) {
  std::string known;
  for (const ModelShape& s : presets_for(arch)) {
    if (s.preset == name) return s;
    known += (known.empty() ? "" : ", ") + s.preset;
  }
  return Status::invalid_argument("unknown shape '" + std::string(name) + "' for arch " + std::string(arch_name(arch)) +
                                  " (known: " + known + ")");
}

}  // namespace cellserve::engine::synth
