// Merging LoRA adapters into a base model's weights (`cellserve lora merge`, llama.cpp's
// llama-export-lora): for every weight W an adapter adapts, W' = W + s·B·A with
// s = scale · alpha / rank (scale when the adapter has no alpha), the adapters applied in the
// order given, and the result written as a new GGUF file that loads like any model file.
// See docs/lora_merge.md.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "engine/lora/lora_adapter.h"

namespace cellserve::engine {

// The values MergeOptions::type accepts, as llama-quantize spells them: F32 F16 BF16 Q8_0 Q4_0
// Q4_1 Q5_0 Q5_1 Q4_K_M Q5_K_M Q6_K.
const std::vector<std::string_view>& merge_type_names();

struct MergeOptions {
  // Empty: adapted tensors keep their type (dequantized, updated, requantized), every other
  // tensor is copied byte for byte and general.file_type is kept. Otherwise (case-insensitive,
  // one of merge_type_names()): every tensor gets the type llama-quantize would give it for this
  // file type (engine/quant/quant_mix.h), and general.file_type says so.
  std::string type;
  // Threads for the per-tensor work; 0 = one per hardware thread.
  int n_threads = 0;
  // Called on the calling thread before each tensor's data is produced (i of n, in file order).
  std::function<void(size_t i, size_t n, const std::string& name)> progress;
};

struct MergeSummary {
  size_t n_tensors = 0;    // tensors written
  size_t n_adapted = 0;    // tensors that received at least one update with a non-zero scale
  size_t n_converted = 0;  // tensors dequantized and re-encoded (the rest were copied as stored)
  uint32_t file_type = 0;  // general.file_type of the output (0 when the base has none)
};

// Writes to `out_path` the model at `base_path` with `adapters` (FILE[:SCALE], see
// parse_lora_arg) merged in the order given. Every adapter is validated against the base first
// (LoraAdapter::open: architecture, tensor names, shapes). All metadata is carried over, plus
// general.merged_lora.adapters (file base names) and .scales (f32); a base that already
// records merges gets the new entries appended.
//
// Errors (nothing is written under `out_path` on any of them; an existing file there is left
// as it was): NotFound for a missing file, DataLoss for a malformed one, InvalidArgument for no
// adapter, an adapter that does not fit the base (the message names the file and tensor), an
// unknown type, a tensor whose row length the type cannot hold, or an update that makes a
// weight non-finite (names the tensor); Unimplemented for an adapted or converted tensor whose
// stored type cannot be dequantized; Internal for an I/O failure writing `out_path`.
// Memory: one tensor's output at a time plus the adapters' F32 factors of that tensor.
Result<MergeSummary> merge_lora(const std::string& base_path, const std::vector<LoraArg>& adapters,
                                const MergeOptions& options, const std::string& out_path);

}  // namespace cellserve::engine
