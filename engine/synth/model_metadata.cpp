#include "engine/synth/model_metadata.h"

#include "engine/synth/vocab_synth.h"

namespace cellserve::engine::synth {
namespace {

uint32_t u32(int64_t v) { return static_cast<uint32_t>(v); }

// <arch>.* keys, in the order of shared/testdata's F32 files.
void add_arch_keys(const ModelShape& s, std::vector<GgufKeyValue>* kv) {
  const std::string a(arch_name(s.arch));
  auto put = [&](const std::string& key, GgufValue v) { kv->push_back({a + "." + key, std::move(v)}); };
  put("context_length", GgufValue::u32(u32(s.n_ctx)));
  put("embedding_length", GgufValue::u32(u32(s.n_embd)));
  put("block_count", GgufValue::u32(u32(s.n_layer)));
  put("feed_forward_length", GgufValue::u32(u32(s.n_ff)));
  put("attention.head_count", GgufValue::u32(u32(s.n_head)));
  put("attention.head_count_kv", GgufValue::u32(u32(s.n_head_kv)));
  if (s.write_head_dim) {
    put("attention.key_length", GgufValue::u32(u32(s.head_dim)));
    put("attention.value_length", GgufValue::u32(u32(s.head_dim)));
  }
  put("attention.layer_norm_rms_epsilon", GgufValue::f32(s.rms_eps));
  put("rope.freq_base", GgufValue::f32(s.rope_base));
  if (s.rope_dims > 0) put("rope.dimension_count", GgufValue::u32(u32(s.rope_dims)));
  if (s.arch == Arch::Qwen35) {
    put("rope.dimension_sections",
        GgufValue::i32_array({s.rope_sections[0], s.rope_sections[1], s.rope_sections[2], s.rope_sections[3]}));
    put("ssm.conv_kernel", GgufValue::u32(u32(s.ssm_conv_kernel)));
    put("ssm.state_size", GgufValue::u32(u32(s.ssm_state_size)));
    put("ssm.group_count", GgufValue::u32(u32(s.ssm_group_count)));
    put("ssm.time_step_rank", GgufValue::u32(u32(s.ssm_time_step_rank)));
    put("ssm.inner_size", GgufValue::u32(u32(s.ssm_inner_size)));
    put("full_attention_interval", GgufValue::u32(u32(s.full_attention_interval)));
  }
  if (s.write_vocab_size) put("vocab_size", GgufValue::u32(u32(s.vocab.n_vocab)));
}

}  // namespace

std::string synth_model_name(const ModelShape& shape) {
  if (shape.preset == "tiny") return std::string(arch_name(shape.arch)) + "-tiny-synth";
  return shape.preset + "-synth";
}

Result<std::vector<GgufKeyValue>> build_metadata(const ModelShape& shape, SynthType type, bool with_tokenizer) {
  std::vector<GgufKeyValue> kv;
  kv.push_back({"general.architecture", GgufValue::string(std::string(arch_name(shape.arch)))});
  kv.push_back({"general.name", GgufValue::string(synth_model_name(shape))});
  const bool master = type == SynthType::F32;
  if (master) kv.push_back({"general.file_type", GgufValue::u32(synth_file_type(type))});
  add_arch_keys(shape, &kv);
  if (with_tokenizer) {
    CS_ASSIGN_OR_RETURN(std::vector<GgufKeyValue> tokenizer, tokenizer_metadata(shape.vocab));
    for (auto& item : tokenizer) kv.push_back(std::move(item));
  }
  if (!master) {
    // llama-quantize copies the master's keys, then sets these two (moving file_type last).
    kv.push_back({"general.quantization_version", GgufValue::u32(2)});  // GGML_QNT_VERSION
    kv.push_back({"general.file_type", GgufValue::u32(synth_file_type(type))});
  }
  return kv;
}

}  // namespace cellserve::engine::synth
