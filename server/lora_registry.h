// The LoRA adapters a server loaded with --lora, numbered from 0 in the order given, with the
// global scale each request gets by default. As in llama.cpp's server: POST /lora-adapters
// replaces the global scales, and a request's "lora": [{"id", "scale"}] list replaces them for
// that request (an adapter it does not list gets scale 0). As in vLLM, an adapter's name is
// also a model id: "model": "<name>" applies that adapter alone at scale 1, whatever the
// global scales are.
#pragma once

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "base/status.h"
#include "engine/lora/lora_adapter.h"

namespace cellserve::server {

class LoraRegistry {
 public:
  struct Entry {
    int id = 0;
    std::shared_ptr<const engine::LoraAdapter> adapter;
    float scale = 1.0f;  // the current global scale (at start: the --lora FILE:SCALE scale)
  };
  using Scales = std::vector<std::pair<int64_t, float>>;  // (id, scale)

  explicit LoraRegistry(const engine::LoraSet& loaded);

  bool empty() const { return entries_.empty(); }
  std::vector<Entry> entries() const;

  // Replaces every global scale: listed ids get theirs, the others 0. InvalidArgument for an
  // unknown id, a repeated id, or a scale that is not finite; nothing changes then.
  Status set_scales(const Scales& scales);
  // The set a request gets without a "lora" field (adapters at non-zero global scale).
  std::shared_ptr<const engine::LoraSet> default_set() const;
  // The set for a request's "lora" list (same rules as set_scales, nothing global changes).
  Result<std::shared_ptr<const engine::LoraSet>> request_set(const Scales& scales) const;
  // The adapter named `name` alone at scale 1; nullopt when no adapter has that name.
  std::optional<std::shared_ptr<const engine::LoraSet>> named_set(const std::string& name) const;

 private:
  Result<std::vector<float>> resolve(const Scales& scales) const;
  std::shared_ptr<const engine::LoraSet> build(const std::vector<float>& scales) const;

  std::vector<Entry> entries_;  // ids and adapters never change after construction
  mutable std::mutex mu_;       // guards the scales and default_
  std::shared_ptr<const engine::LoraSet> default_;
};

}  // namespace cellserve::server
