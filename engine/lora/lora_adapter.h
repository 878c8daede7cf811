// LoRA adapters in llama.cpp's GGUF form (convert_lora_to_gguf.py): general.type = "adapter",
// adapter.type = "lora", adapter.lora.alpha, and for each adapted weight W (ggml shape
// {n_in, n_out}) the pair "<W>.lora_a" {n_in, r} and "<W>.lora_b" {r, n_out}. The adapted
// product is W·x + s·B·(A·x) with s = scale · alpha / r (scale when alpha is 0), as llama.cpp's
// llm_graph_context::build_lora_mm computes it.
#pragma once

#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/status.h"
#include "engine/gguf/gguf_file.h"

namespace cellserve::engine {

class Model;

// One adapted weight: the two low-rank factors, views into the adapter file.
struct LoraTensor {
  std::string base_name;  // the adapted weight, e.g. "blk.0.attn_q.weight"
  TensorView a;           // {n_in, rank}
  TensorView b;           // {rank, n_out}
  int64_t rank = 0;
};

class LoraAdapter {
 public:
  // Opens `path` and checks it against the base model's file: it is a LoRA adapter of the same
  // architecture, every lora_a has its lora_b, every adapted weight exists in the base with
  // the matching shape, and the factor types can be read. Errors name the file and tensor.
  static Result<std::shared_ptr<const LoraAdapter>> open(const std::string& path, const GgufFile& base);
  // open() plus: every adapted weight is one the model multiplies with (not an embedding
  // table or a convolution), and the factors' types have kernels.
  static Result<std::shared_ptr<const LoraAdapter>> load(const std::string& path, const Model& base);

  const std::string& path() const { return path_; }
  // A short name for listings and model ids: the file name without ".gguf" (as a served
  // model's id is its file name).
  const std::string& name() const { return name_; }
  float alpha() const { return alpha_; }
  const std::vector<LoraTensor>& tensors() const { return tensors_; }

  // The factor pair adapting the base weight whose bytes start at `base_data` (the base
  // file's memory map), or nullptr.
  const LoraTensor* find(const void* base_data) const {
    auto it = by_base_data_.find(base_data);
    return it == by_base_data_.end() ? nullptr : &tensors_[it->second];
  }
  // s = scale · alpha / rank, or scale when the adapter has no alpha (llama.cpp's rule).
  float effective_scale(float scale, int64_t rank) const {
    return alpha_ != 0.0f ? scale * alpha_ / static_cast<float>(rank) : scale;
  }

 private:
  LoraAdapter() = default;
  std::string path_;
  std::string name_;
  float alpha_ = 0.0f;
  std::shared_ptr<const GgufFile> file_;  // keeps the views alive
  std::vector<LoraTensor> tensors_;
  std::unordered_map<const void*, size_t> by_base_data_;
};

// Adapters applied together, each at its own scale (as llama.cpp's --lora FILE --lora-scaled).
struct ScaledLora {
  std::shared_ptr<const LoraAdapter> adapter;
  float scale = 1.0f;
};
using LoraSet = std::vector<ScaledLora>;

// "FILE" or "FILE:SCALE" (the last ':' followed by a number); InvalidArgument for a bad scale.
struct LoraArg {
  std::string path;
  float scale = 1.0f;
};
Result<LoraArg> parse_lora_arg(const std::string& text);

// Parses each "FILE[:SCALE]" and loads the adapter against `base`, in order (the --lora options).
Result<LoraSet> load_lora_set(const std::vector<std::string>& args, const Model& base);

}  // namespace cellserve::engine
