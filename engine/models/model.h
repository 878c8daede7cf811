// Model: a loaded architecture that can run a forward pass over a batch.
#pragma once

#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <unordered_set>
#include <vector>

#include "base/status.h"
#include "engine/gguf/gguf_file.h"
#include "engine/lora/lora_adapter.h"
#include "engine/runtime/batch.h"
#include "engine/runtime/kv_cache.h"
#include "engine/runtime/probe.h"
#include "engine/runtime/recurrent_state.h"
#include "engine/runtime/thread_pool.h"

namespace cellserve::engine {

// What every architecture reports about itself.
struct ModelInfo {
  std::string architecture;
  std::string name;
  int64_t n_vocab = 0;
  int64_t n_embd = 0;
  int64_t n_layer = 0;
  int64_t n_ctx_train = 0;
  KvCacheShape kv_shape;           // n_layer counts the layers that keep keys and values
  RecurrentShape recurrent_shape;  // n_layer counts the layers with a per-sequence state (0: none)
};

// Everything a forward pass needs besides the weights: the batch, where its tokens' KV cells
// are, which rows want logits, the cache, threads and an optional probe.
struct ForwardArgs {
  const Batch* batch = nullptr;
  const std::vector<int32_t>* cells = nullptr;  // KV cell of each batch token
  KvCache* kv = nullptr;
  RecurrentState* recurrent = nullptr;  // per-sequence state; required when the model has recurrent layers
  ThreadPool* pool = nullptr;
  ProbeSink* probe = nullptr;
  float* logits = nullptr;  // [n_outputs][n_vocab], rows in batch order of tokens with output set
  // LoRA adapters per batch token (nullptr or empty: none). Tokens with different sets may
  // share a batch: each token's rows get exactly its own adapters' updates.
  const std::vector<const LoraSet*>* lora = nullptr;
};

// A model holds its GgufFile (weights are views into its memory map) and is immutable after
// load, so one model can serve many contexts from several threads.
class Model {
 public:
  virtual ~Model() = default;
  const ModelInfo& info() const { return info_; }
  const GgufFile& file() const { return *file_; }

  // Runs the batch through the network, writing keys/values into args.cells and logits for the
  // tokens whose output flag is set. A recurrent model advances each sequence's state in
  // args.recurrent over that sequence's tokens, in batch order. REQUIRES: the batch was
  // validated by the Context (token ids < n_vocab, cells allocated).
  virtual void forward(const ForwardArgs& args) const = 0;

  // Whether `tensor_name` is a weight the forward pass multiplies activations with (a
  // projection), i.e. one a LoRA adapter can adapt at run time.
  bool multiplies_with(const std::string& tensor_name) const { return projections_.count(tensor_name) != 0; }

  // The memory the forward pass reads the weights from (TensorBinder::resident()): packed copies
  // and mapped tensors. Small F32 vectors (norms, biases) are owned copies and not listed.
  const std::vector<std::span<const std::byte>>& resident_weights() const { return resident_weights_; }

 protected:
  Model(std::shared_ptr<const GgufFile> file, ModelInfo info) : file_(std::move(file)), info_(std::move(info)) {}
  std::shared_ptr<const GgufFile> file_;
  ModelInfo info_;
  std::unordered_set<std::string> projections_;               // filled from TensorBinder::projections() at bind
  std::vector<std::span<const std::byte>> resident_weights_;  // from TensorBinder::resident() at bind
};

// Opens `path`, finds the architecture in the registry and loads it. Errors name the file and,
// for a tensor problem, the tensor.
Result<std::shared_ptr<const Model>> load_model(const std::string& path);

}  // namespace cellserve::engine
