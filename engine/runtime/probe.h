// Probe points: named intermediate tensors the forward pass can report, so a test can find the
// first layer where two implementations diverge (llama.cpp's `cb(cur, "attn_norm", il)`).
#pragma once

#include <cstdint>
#include <string_view>

namespace cellserve::engine {

// Receives intermediate activations. `data` holds `n_tokens` rows of `width` floats (batch
// order) and is only valid during the call. `layer` is -1 for tensors outside the layers.
// Names: "attn_norm", "attn_out", "ffn_out", "layer_out" per layer; "result_norm", "logits".
// In hybrid models (qwen35) "attn_out" is the token mixer's output of either kind: gated
// attention or Gated DeltaNet.
class ProbeSink {
 public:
  virtual ~ProbeSink() = default;
  virtual void record(std::string_view name, int layer, const float* data, int64_t n_tokens, int64_t width) = 0;
};

}  // namespace cellserve::engine
