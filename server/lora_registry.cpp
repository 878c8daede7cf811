#include "server/lora_registry.h"

#include <cmath>

namespace cellserve::server {

LoraRegistry::LoraRegistry(const engine::LoraSet& loaded) {
  std::vector<float> scales;
  for (const engine::ScaledLora& l : loaded) {
    entries_.push_back(Entry{static_cast<int>(entries_.size()), l.adapter, l.scale});
    scales.push_back(l.scale);
  }
  default_ = build(scales);
}

std::vector<LoraRegistry::Entry> LoraRegistry::entries() const {
  std::lock_guard lock(mu_);
  return entries_;
}

Result<std::vector<float>> LoraRegistry::resolve(const Scales& scales) const {
  std::vector<float> out(entries_.size(), 0.0f);
  std::vector<bool> seen(entries_.size(), false);
  for (const auto& [id, scale] : scales) {
    if (id < 0 || id >= static_cast<int64_t>(entries_.size())) {
      return Status::invalid_argument("no LoRA adapter has id " + std::to_string(id) + " (" +
                                      std::to_string(entries_.size()) + " loaded)");
    }
    if (seen[static_cast<size_t>(id)])
      return Status::invalid_argument("LoRA adapter id " + std::to_string(id) + " is listed twice");
    if (!std::isfinite(scale)) return Status::invalid_argument("LoRA scale must be a finite number");
    seen[static_cast<size_t>(id)] = true;
    out[static_cast<size_t>(id)] = scale;
  }
  return out;
}

std::shared_ptr<const engine::LoraSet> LoraRegistry::build(const std::vector<float>& scales) const {
  engine::LoraSet set;
  for (size_t i = 0; i < entries_.size(); ++i) {
    if (scales[i] != 0.0f) set.push_back(engine::ScaledLora{entries_[i].adapter, scales[i]});
  }
  if (set.empty()) return nullptr;  // the base model: shares prefixes with every base request
  return std::make_shared<const engine::LoraSet>(std::move(set));
}

Status LoraRegistry::set_scales(const Scales& scales) {
  CS_ASSIGN_OR_RETURN(const std::vector<float> resolved, resolve(scales));
  std::lock_guard lock(mu_);
  for (size_t i = 0; i < entries_.size(); ++i) entries_[i].scale = resolved[i];
  default_ = build(resolved);
  return {};
}

std::shared_ptr<const engine::LoraSet> LoraRegistry::default_set() const {
  std::lock_guard lock(mu_);
  return default_;
}

Result<std::shared_ptr<const engine::LoraSet>> LoraRegistry::request_set(const Scales& scales) const {
  CS_ASSIGN_OR_RETURN(const std::vector<float> resolved, resolve(scales));
  return build(resolved);
}

std::optional<std::shared_ptr<const engine::LoraSet>> LoraRegistry::named_set(const std::string& name) const {
  for (const Entry& e : entries_) {
    if (e.adapter->name() != name) continue;
    std::vector<float> scales(entries_.size(), 0.0f);
    scales[static_cast<size_t>(e.id)] = 1.0f;
    return build(scales);
  }
  return std::nullopt;
}

}  // namespace cellserve::server
