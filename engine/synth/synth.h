// cellserve synth: GGUF models with random weights in the exact structure of a real
// architecture (metadata keys and types, tensor names, shapes, per-tensor types and order as
// llama.cpp's converter + llama-quantize produce them), so benchmarks and tests can use
// realistic sizes without downloading anything. See docs/synth.md.
//
//   CS_ASSIGN_OR_RETURN(ModelPlan plan, plan_model({Arch::Qwen35, "qwen35-9b", SynthType::Q4_K_M}));
//   CS_RETURN_IF_ERROR(write_model(plan, /*seed=*/1, "/tmp/q.gguf"));
//
// Thread safety: the functions are reentrant; write_model uses worker threads internally.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "base/status.h"
#include "engine/gguf/gguf_value.h"
#include "engine/gguf/gguf_writer.h"
#include "engine/synth/synth_spec.h"
#include "engine/synth/tensor_plan.h"

namespace cellserve::engine::synth {

struct SynthRequest {
  Arch arch = Arch::Llama;
  std::string shape = "tiny";  // a preset name (presets.h)
  SynthType type = SynthType::F32;
};

// What plan_model computes. The tokenizer arrays of a 248k-token vocabulary dominate the
// cost of a plan; sizing and shape checks can leave them out.
enum class PlanContents {
  Full,              // everything a file needs
  WithoutTokenizer,  // no tokenizer.* metadata: for inspection only, cannot be written
};

// Everything about a synthetic file except its tensor bytes.
struct ModelPlan {
  ModelShape shape;
  SynthType type = SynthType::F32;
  PlanContents contents = PlanContents::Full;
  std::vector<GgufKeyValue> metadata;  // file order
  std::vector<PlannedTensor> tensors;  // file order

  // Bytes of all tensor data (without alignment padding).
  uint64_t tensor_bytes() const;
  // Number of weights (elements over all tensors).
  uint64_t parameter_count() const;
};

// Resolves the preset and computes metadata and tensor table; writes nothing. InvalidArgument
// for an unknown shape or a shape the type cannot hold.
Result<ModelPlan> plan_model(const SynthRequest& request, PlanContents contents = PlanContents::Full);

// Called before each tensor's data is produced: (index, count, tensor).
using SynthProgress = std::function<void(size_t, size_t, const PlannedTensor&)>;

struct WriteOptions {
  uint64_t seed = 1;
  int n_threads = 0;  // 0 = hardware concurrency
  SynthProgress progress;
};

// A writer holding the plan's metadata and one streaming filler per tensor (no data is
// produced until GgufWriter::write / to_bytes). InvalidArgument for a plan made without its
// tokenizer; Unimplemented when quantize_row does not support a tensor type.
Result<GgufWriter> make_writer(const ModelPlan& plan, const WriteOptions& options);

// Writes the model to `path` (via a temporary file renamed into place). Tensor data is produced
// one tensor at a time, so memory stays near the largest tensor.
Status write_model(const ModelPlan& plan, const std::string& path, const WriteOptions& options = {});

}  // namespace cellserve::engine::synth
