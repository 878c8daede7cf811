// Random LoRA adapters for a given base model, in llama.cpp's adapter GGUF form, so that
// adapter speed and merging can be measured on models of real shape (the shared test data has
// one tiny adapter only). Values as in that adapter: lora_a ~ N(0, 1/n_in), lora_b ~
// N(0, (0.15/sqrt(rank))^2), drawn per row from (seed, tensor name, row) like synth weights.
#pragma once

#include <string>
#include <vector>

#include "base/status.h"
#include "engine/gguf/gguf_file.h"
#include "engine/gguf/gguf_writer.h"
#include "engine/synth/synth.h"

namespace cellserve::engine::synth {

struct LoraSynthRequest {
  int64_t rank = 16;
  float alpha = 32.0f;
  GgmlType type = GgmlType::F32;  // of both factors: F32, F16, BF16 or Q8_0 (rank must then fit)
  // Weight kinds adapted in every block ("attn_q" adapts blk.N.attn_q.weight); the default is
  // the usual LoRA target set of attention and FFN projections.
  std::vector<std::string> targets = {"attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_up", "ffn_down"};
};

// A writer for the adapter of `base` (which must outlive the writer's use). InvalidArgument
// when no tensor of the base matches a target, for a rank < 1, or a type the factors cannot
// have.
Result<GgufWriter> make_lora_writer(const GgufFile& base, const LoraSynthRequest& request, const WriteOptions& options);

}  // namespace cellserve::engine::synth
