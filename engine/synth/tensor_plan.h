// The tensor table of a synthetic model: every tensor's name, shape, stored type and how its
// values are drawn, computed without producing any data (so a 9B plan costs microseconds).
#pragma once

#include <string>
#include <vector>

#include "base/status.h"
#include "engine/gguf/tensor_view.h"
#include "engine/synth/synth_spec.h"

namespace cellserve::engine::synth {

// How a tensor's F32 master values are drawn (see docs/synth.md, "Weights").
enum class InitKind {
  Normal,     // N(0, scale^2): linear weights, embeddings, biases, ssm_conv1d
  Norm,       // 1 + 0.1 * N(0, 1): RMSNorm weights
  Uniform,    // U(-scale, scale): ssm_dt.bias
  SsmA,       // -exp(U(ln 0.1, ln 2)): ssm_a
  RopeFreqs,  // Llama 3 rope scaling factors (deterministic, as the converter computes them)
};

struct WeightInit {
  InitKind kind = InitKind::Normal;
  float scale = 1.0f;
};

struct PlannedTensor {
  std::string name;               // llama.cpp's GGUF name, "blk.3.attn_qkv.weight"
  Shape shape;                    // ggml order: ne[0] is the row length
  GgmlType type = GgmlType::F32;  // stored type
  WeightInit init;
};

// The tensors of `shape` stored as `type`, in the order the file holds them: the converter's
// order for F32 (the F32 master), llama-quantize's order (non-block tensors first, then by
// layer, each group sorted by name) for every other type. Per-tensor types follow
// llama-quantize's rules (engine/quant/quant_mix.h). Fails with InvalidArgument for an invalid shape or a
// row length no type (not even a fallback) can hold.
Result<std::vector<PlannedTensor>> build_tensor_plan(const ModelShape& shape, SynthType type);

// The F32 master table of `shape` in converter order (all types F32).
Result<std::vector<PlannedTensor>> build_master_plan(const ModelShape& shape);

}  // namespace cellserve::engine::synth
