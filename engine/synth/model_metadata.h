// The GGUF metadata of a synthetic model: general.*, the architecture's hyperparameter keys
// and the tokenizer, with the key names and value types llama.cpp's converter writes
// (u32 for counts and ids, f32 for rope base and epsilon, an i32 array for qwen35's rope
// sections) and in the layout llama-quantize leaves: for any type but F32,
// general.quantization_version (= 2) and general.file_type come last.
#pragma once

#include <string>
#include <vector>

#include "base/status.h"
#include "engine/gguf/gguf_value.h"
#include "engine/synth/synth_spec.h"

namespace cellserve::engine::synth {

// `general.name` of a synthetic model: "<arch>-tiny-synth" or "<preset>-synth".
std::string synth_model_name(const ModelShape& shape);

// All metadata of `shape` written as `type`, in file order (without the tokenizer.* keys when
// `with_tokenizer` is false). Fails like tokenizer_metadata().
Result<std::vector<GgufKeyValue>> build_metadata(const ModelShape& shape, SynthType type, bool with_tokenizer = true);

}  // namespace cellserve::engine::synth
