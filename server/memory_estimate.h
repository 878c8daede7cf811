// What serving a model will take in memory, read from its GGUF header before anything is
// loaded: the weights (every tensor's bytes), the KV cache (attention layers × cells × KV heads ×
// head sizes in the cache's type), the recurrent state of Gated DeltaNet layers (F32: one per
// slot, and the snapshots the prefix cache keeps, one per 1,024 prompt tokens and one per finished
// sequence, within --prefix-cache-mb) and the forward pass's scratch (activations and logits of
// one batch). A
// device whose free memory is below the total refuses the model with the numbers rather than
// letting Android's low-memory killer end the process without a word (docs/phones.md).
#pragma once

#include <cstdint>
#include <string>

#include "base/status.h"
#include "engine/runtime/kv_type.h"

namespace cellserve::server {

struct MemoryEstimate {
  uint64_t weights_bytes = 0;
  uint64_t kv_bytes = 0;
  uint64_t recurrent_bytes = 0;
  uint64_t scratch_bytes = 0;
  uint64_t total() const { return weights_bytes + kv_bytes + recurrent_bytes + scratch_bytes; }
  // "1.9 GiB (weights 1.6 GiB + KV cache 256 MiB + recurrent state 19 MiB + scratch 45 MiB)"
  std::string describe() const;
};

struct MemoryEstimateInput {
  std::string model_path;
  int64_t ctx_size = 0;  // KV cells shared by all slots
  int parallel = 1;      // slots (sequences with a recurrent state; one more for the prefix cache)
  int64_t batch_size = 512;
  std::string kv_type = std::string(engine::kDefaultKvType);
  int64_t prefix_cache_mb = 1024;  // the prefix cache's budget: it bounds the state snapshots kept
};

// Errors: those of opening the GGUF file, InvalidArgument for an unknown kv_type.
Result<MemoryEstimate> estimate_serve_memory(const MemoryEstimateInput& input);

// "insufficient_memory: needs <describe()>; <free> free" when the estimate exceeds
// `available_bytes`, else "".
std::string insufficient_memory(const MemoryEstimate& estimate, uint64_t available_bytes);

// Bytes as "812 MiB", "5.6 GiB" or "32.0 TiB".
std::string human_bytes(uint64_t bytes);

}  // namespace cellserve::server
