#include "engine/synth/synth_spec.h"

#include <cctype>

namespace cellserve::engine::synth {
namespace {

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i]))) return false;
  }
  return true;
}

template <typename T, typename NameFn>
std::string known_names(const std::vector<T>& values, NameFn name) {
  std::string out;
  for (const T& v : values) {
    if (!out.empty()) out += ", ";
    out += name(v);
  }
  return out;
}

}  // namespace

std::string_view arch_name(Arch arch) {
  switch (arch) {
    case Arch::Llama:
      return "llama";
    case Arch::Qwen2:
      return "qwen2";
    case Arch::Qwen3:
      return "qwen3";
    case Arch::Qwen35:
      return "qwen35";
  }
  return "?";
}

const std::vector<Arch>& all_archs() {
  static const std::vector<Arch> kAll = {Arch::Llama, Arch::Qwen2, Arch::Qwen3, Arch::Qwen35};
  return kAll;
}

Result<Arch> arch_from_name(std::string_view name) {
  for (Arch a : all_archs()) {
    if (iequals(name, arch_name(a))) return a;
  }
  return Status::invalid_argument("unknown architecture '" + std::string(name) +
                                  "' (known: " + known_names(all_archs(), arch_name) + ")");
}

std::string_view synth_type_name(SynthType type) {
  switch (type) {
    case SynthType::F32:
      return "F32";
    case SynthType::F16:
      return "F16";
    case SynthType::BF16:
      return "BF16";
    case SynthType::Q8_0:
      return "Q8_0";
    case SynthType::Q4_0:
      return "Q4_0";
    case SynthType::Q4_K_M:
      return "Q4_K_M";
    case SynthType::Q5_K_M:
      return "Q5_K_M";
    case SynthType::Q6_K:
      return "Q6_K";
  }
  return "?";
}

const std::vector<SynthType>& all_synth_types() {
  static const std::vector<SynthType> kAll = {SynthType::F32,  SynthType::F16,    SynthType::BF16,   SynthType::Q8_0,
                                              SynthType::Q4_0, SynthType::Q4_K_M, SynthType::Q5_K_M, SynthType::Q6_K};
  return kAll;
}

Result<SynthType> synth_type_from_name(std::string_view name) {
  for (SynthType t : all_synth_types()) {
    if (iequals(name, synth_type_name(t))) return t;
  }
  return Status::invalid_argument("unknown type '" + std::string(name) +
                                  "' (known: " + known_names(all_synth_types(), synth_type_name) + ")");
}

uint32_t synth_file_type(SynthType type) {
  switch (type) {
    case SynthType::F32:
      return 0;  // LLAMA_FTYPE_ALL_F32
    case SynthType::F16:
      return 1;  // LLAMA_FTYPE_MOSTLY_F16
    case SynthType::Q4_0:
      return 2;  // LLAMA_FTYPE_MOSTLY_Q4_0
    case SynthType::Q8_0:
      return 7;  // LLAMA_FTYPE_MOSTLY_Q8_0
    case SynthType::Q4_K_M:
      return 15;
    case SynthType::Q5_K_M:
      return 17;
    case SynthType::Q6_K:
      return 18;
    case SynthType::BF16:
      return 32;  // LLAMA_FTYPE_MOSTLY_BF16
  }
  return 0;
}

GgmlType synth_default_tensor_type(SynthType type) {
  switch (type) {
    case SynthType::F32:
      return GgmlType::F32;
    case SynthType::F16:
      return GgmlType::F16;
    case SynthType::BF16:
      return GgmlType::BF16;
    case SynthType::Q8_0:
      return GgmlType::Q8_0;
    case SynthType::Q4_0:
      return GgmlType::Q4_0;
    case SynthType::Q4_K_M:
      return GgmlType::Q4_K;
    case SynthType::Q5_K_M:
      return GgmlType::Q5_K;
    case SynthType::Q6_K:
      return GgmlType::Q6_K;
  }
  return GgmlType::F32;
}

QuantMix synth_quant_mix(SynthType type) {
  return {synth_default_tensor_type(type), type == SynthType::Q4_K_M || type == SynthType::Q5_K_M};
}

Status ModelShape::validate() const {
  const std::string where = "shape '" + preset + "'";
  if (n_embd <= 0 || n_layer <= 0 || n_head <= 0 || n_head_kv <= 0 || head_dim <= 0 || n_ff <= 0 || n_ctx <= 0) {
    return Status::invalid_argument(where + ": sizes must be positive");
  }
  if (n_head % n_head_kv != 0) return Status::invalid_argument(where + ": n_head is not a multiple of n_head_kv");
  if (rope_dims < 0 || rope_dims > head_dim || rope_dims % 2 != 0) {
    return Status::invalid_argument(where + ": rope dimension count must be even and at most head_dim");
  }
  if (arch == Arch::Qwen35) {
    if (full_attention_interval <= 0 || ssm_conv_kernel <= 0 || ssm_state_size <= 0 || ssm_group_count <= 0 ||
        ssm_time_step_rank <= 0 || ssm_inner_size <= 0) {
      return Status::invalid_argument(where + ": qwen35 linear-attention sizes must be positive");
    }
    if (ssm_time_step_rank % ssm_group_count != 0 || ssm_inner_size % ssm_time_step_rank != 0) {
      return Status::invalid_argument(where + ": V heads must be a multiple of K heads and divide inner size");
    }
  }
  if (vocab.kind == VocabKind::Spm) {
    if (vocab.n_vocab < 3 + 256 + 1) return Status::invalid_argument(where + ": SPM vocabulary below 260 tokens");
  } else if (vocab.n_ordinary < 256 || vocab.n_ordinary > vocab.n_vocab) {
    return Status::invalid_argument(where + ": BPE vocabulary needs 256 byte tokens within n_vocab");
  }
  return {};
}

}  // namespace cellserve::engine::synth
