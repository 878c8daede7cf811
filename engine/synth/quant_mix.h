// Per-tensor types of a quantized model, chosen exactly as llama.cpp's llama-quantize chooses
// them (src/llama-quant.cpp: tensor_allows_quantization, llama_tensor_get_type_impl,
// tensor_type_fallback) for the types synth writes.
#pragma once

#include <string>
#include <vector>

#include "base/status.h"
#include "engine/synth/tensor_plan.h"

namespace cellserve::engine::synth {

// Whether llama-quantize converts `t` at all: 2-D+ tensors whose name ends in "weight", except
// norms ("_norm.weight") and ssm_conv1d. Everything else keeps its F32 master type.
bool quantize_allowed(const PlannedTensor& t);

// Sets the `type` of every tensor of `plan` (F32 masters, in llama-quantize's processing
// order) for output type `type`:
//  * not quantizable -> F32;
//  * F16 / BF16 -> that type;
//  * output.weight, and token_embd.weight when there is no output.weight (tied) -> Q6_K,
//    or Q8_0 when the row length is not a multiple of the default type's block or the default
//    type is Q8_0;
//  * attn_v / attn_qkv (counted together) and ffn_down of layer i of n -> Q6_K for Q4_K_M and
//    Q5_K_M when use_more_bits(i, n): i < n/8 || i >= 7n/8 || (i - n/8) % 3 == 2;
//  * anything else -> the default type;
//  then the shape fallback: a row length that is not a multiple of 256 turns Q4_K into Q5_0,
//  Q5_K into Q5_1, Q6_K into Q8_0 (F16 if even that does not fit). InvalidArgument when a row
//  fits no type (llama-quantize refuses such a model too).
Status assign_quant_types(const ModelShape& shape, SynthType type, std::vector<PlannedTensor>* plan);

}  // namespace cellserve::engine::synth
