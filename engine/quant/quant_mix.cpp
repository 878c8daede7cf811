// A port of the parts of llama.cpp's src/llama-quant.cpp that decide tensor types, restricted
// to the file types synth writes (no imatrix, no MoE, no Falcon, no 70B special case).
#include "engine/quant/quant_mix.h"

#include <string_view>

namespace cellserve::engine {
namespace {

enum class Category {
  TokenEmbd,
  AttnQ,
  AttnV,
  AttnK,
  AttnQkv,
  AttnKvB,
  AttnOutput,
  FfnUp,
  FfnGate,
  FfnDown,
  Output,
  Other
};

bool contains(std::string_view s, std::string_view part) { return s.find(part) != std::string_view::npos; }

// tensor_get_category(): substring tests in llama.cpp's order.
Category category_of(const std::string& name) {
  if (name == "output.weight") return Category::Output;
  if (name == "token_embd.weight" || name == "per_layer_token_embd.weight") return Category::TokenEmbd;
  if (contains(name, "attn_qkv.weight")) return Category::AttnQkv;
  if (contains(name, "attn_kv_b.weight")) return Category::AttnKvB;
  if (contains(name, "attn_v.weight")) return Category::AttnV;
  if (contains(name, "attn_k.weight")) return Category::AttnK;
  if (contains(name, "attn_q.weight")) return Category::AttnQ;
  if (contains(name, "attn_output.weight")) return Category::AttnOutput;
  if (contains(name, "ffn_up")) return Category::FfnUp;
  if (contains(name, "ffn_gate")) return Category::FfnGate;
  if (contains(name, "ffn_down")) return Category::FfnDown;
  return Category::Other;
}

// category_is_attn_v(): attn_v, attn_qkv and attn_kv_b share one counter and one rule.
bool is_attn_v_like(Category c) { return c == Category::AttnV || c == Category::AttnQkv || c == Category::AttnKvB; }

bool use_more_bits(int64_t i, int64_t n) { return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2; }

bool is_quantized_type(GgmlType t) { return t != GgmlType::F32 && t != GgmlType::F16 && t != GgmlType::BF16; }

struct Counters {
  int64_t n_attention_wv = 0;
  int64_t i_attention_wv = 0;
  int64_t n_ffn_down = 0;
  int64_t i_ffn_down = 0;
  bool tied = true;  // until output.weight is seen
};

// llama_tensor_get_type_impl() for Q4_0, Q8_0, Q6_K, Q4_K_M, Q5_K_M.
GgmlType choose(const QuantMixTensor& t, Category cat, const QuantMix& mix, GgmlType new_type, Counters& c) {
  const bool k_m = mix.more_bits;
  if (cat == Category::Output || (c.tied && cat == Category::TokenEmbd)) {
    if (t.row_length % ggml_block_size(new_type) != 0) return GgmlType::Q8_0;
    return new_type != GgmlType::Q8_0 ? GgmlType::Q6_K : new_type;
  }
  if (is_attn_v_like(cat)) {
    if (k_m && use_more_bits(c.i_attention_wv, c.n_attention_wv)) new_type = GgmlType::Q6_K;
    ++c.i_attention_wv;
  } else if (cat == Category::FfnDown) {
    if (k_m && use_more_bits(c.i_ffn_down, c.n_ffn_down)) new_type = GgmlType::Q6_K;
    ++c.i_ffn_down;
  }
  return new_type;
}

// tensor_type_fallback().
Result<GgmlType> fallback(const QuantMixTensor& t, GgmlType target) {
  const int64_t ncols = t.row_length;
  if (ncols % ggml_block_size(target) == 0) return target;
  GgmlType alt;
  switch (target) {
    case GgmlType::Q4_K:
      alt = GgmlType::Q5_0;
      break;
    case GgmlType::Q5_K:
      alt = GgmlType::Q5_1;
      break;
    case GgmlType::Q6_K:
      alt = GgmlType::Q8_0;
      break;
    default:
      return Status::invalid_argument(t.name + ": row length " + std::to_string(ncols) + " is not a multiple of the " +
                                      std::string(ggml_type_name(target)) +
                                      " block size and llama-quantize defines no fallback for it");
  }
  if (ncols % ggml_block_size(alt) != 0) alt = GgmlType::F16;
  return alt;
}

}  // namespace

bool quantize_allowed(std::string_view n, int n_dims) {
  if (n_dims < 2) return false;
  if (n.size() < 6 || n.compare(n.size() - 6, 6, "weight") != 0) return false;
  if (contains(n, "_norm.weight")) return false;
  if (contains(n, "ssm_conv1d")) return false;
  return true;
}

Status assign_quant_types(const QuantMix& mix, int64_t n_layer, std::vector<QuantMixTensor>* tensors) {
  const GgmlType default_type = mix.default_type;
  Counters c;
  for (const QuantMixTensor& t : *tensors) {
    const Category cat = category_of(t.name);
    if (is_attn_v_like(cat)) ++c.n_attention_wv;
    if (cat == Category::Output) c.tied = false;
  }
  c.n_ffn_down = n_layer;  // hparams.n_layer_all
  for (QuantMixTensor& t : *tensors) {
    if (!quantize_allowed(t.name, t.n_dims)) {
      t.type = GgmlType::F32;
      continue;
    }
    if (!is_quantized_type(default_type)) {
      t.type = default_type;
      continue;
    }
    const GgmlType chosen = choose(t, category_of(t.name), mix, default_type, c);
    CS_ASSIGN_OR_RETURN(t.type, fallback(t, chosen));
  }
  return {};
}

}  // namespace cellserve::engine
