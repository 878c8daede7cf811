// Per-tensor types of a quantized model, chosen exactly as llama.cpp's llama-quantize chooses
// them (src/llama-quant.cpp: tensor_allows_quantization, llama_tensor_get_type_impl,
// tensor_type_fallback) for the file types synth writes and `lora merge` produces.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "engine/quant/ggml_type.h"

namespace cellserve::engine {

// The rules of one llama-quantize file type (llama_ftype).
struct QuantMix {
  GgmlType default_type = GgmlType::F32;  // llama_ftype_get_default_type(): most weight matrices
  bool more_bits = false;                 // Q4_K_M, Q5_K_M: Q6_K for some attn_v and ffn_down layers
};

// A tensor as llama-quantize sees it: its GGUF name, dimensions and row length (ne[0]), and the
// type chosen for it.
struct QuantMixTensor {
  std::string name;  // "blk.3.attn_qkv.weight"
  int n_dims = 0;
  int64_t row_length = 0;
  GgmlType type = GgmlType::F32;
};

// Whether llama-quantize converts a tensor at all: 2-D+ tensors whose name ends in "weight",
// except norms ("_norm.weight") and ssm_conv1d. Everything else keeps its F32 master type.
bool quantize_allowed(std::string_view name, int n_dims);

// Sets the `type` of every tensor of `tensors` (F32 masters, in llama-quantize's processing
// order) for the file type `mix` of a model with `n_layer` blocks:
//  * not quantizable -> F32;
//  * F16 / BF16 -> that type;
//  * output.weight, and token_embd.weight when there is no output.weight (tied) -> Q6_K,
//    or Q8_0 when the row length is not a multiple of the default type's block or the default
//    type is Q8_0;
//  * attn_v / attn_qkv (counted together) and ffn_down of layer i of n -> Q6_K for Q4_K_M and
//    Q5_K_M (more_bits) when use_more_bits(i, n): i < n/8 || i >= 7n/8 || (i - n/8) % 3 == 2;
//  * anything else -> the default type;
//  then the shape fallback: a row length that is not a multiple of 256 turns Q4_K into Q5_0,
//  Q5_K into Q5_1, Q6_K into Q8_0 (F16 if even that does not fit). InvalidArgument when a row
//  fits no type (llama-quantize refuses such a model too).
Status assign_quant_types(const QuantMix& mix, int64_t n_layer, std::vector<QuantMixTensor>* tensors);

}  // namespace cellserve::engine
