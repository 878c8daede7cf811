// The adapted matrix product: y = W·x, plus s·B·(A·x) for each LoRA adapter of each row's set.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "engine/gguf/tensor_view.h"
#include "engine/lora/lora_adapter.h"
#include "engine/models/blocks.h"
#include "engine/runtime/batch.h"
#include "engine/runtime/thread_pool.h"

namespace cellserve::engine {

// y[t] = W·x[t] for t < n_tokens (matmul), then, when `lora` is set, for each row t whose set
// (*lora)[t] holds adapters of W: y[t] += s·B·(A·x[t]) per adapter, in set order — the sum
// llama.cpp's build_lora_mm forms. Rows sharing a set are multiplied together; rows with
// other sets (or none) are untouched by it, so sequences with different adapters can share a
// batch. REQUIRES: lora == nullptr or lora->size() == n_tokens.
void project(const TensorView& w, const float* x, int64_t n_tokens, float* y, ThreadPool& pool,
             const std::vector<const LoraSet*>* lora);

// project() of every weight of `outs` on the same input (matmul_shared_input: one job in decode).
void project_shared_input(std::span<const MatmulOut> outs, const float* x, int64_t n_tokens, ThreadPool& pool,
                          const std::vector<const LoraSet*>* lora);

// Adds only the low-rank updates (the part of project() after W·x).
void add_lora_updates(const TensorView& w, const float* x, int64_t n_tokens, float* y, ThreadPool& pool,
                      const std::vector<const LoraSet*>& lora);

// The rows of x ([batch.size()][width]) of the tokens that want logits, with their LoRA sets,
// ready for the output projection.
struct OutputRows {
  std::vector<float> x;              // [n][width]
  std::vector<const LoraSet*> lora;  // [n] when the batch has LoRA sets, else empty
  int64_t n = 0;
  const std::vector<const LoraSet*>* lora_or_null() const { return lora.empty() ? nullptr : &lora; }
};
OutputRows gather_output_rows(const Batch& batch, const float* x, int64_t width,
                              const std::vector<const LoraSet*>* lora);

}  // namespace cellserve::engine
