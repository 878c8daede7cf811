#include "engine/models/registry.h"

#include <utility>

namespace cellserve::engine {
namespace {

const std::vector<std::pair<std::string, ModelFactory>>& registry() {
  static const std::vector<std::pair<std::string, ModelFactory>> kRegistry = {
      {"llama", &make_llama_model},
      {"qwen2", &make_qwen2_model},
      {"qwen3", &make_qwen3_model},
      {"qwen35", &make_qwen35_model},
  };
  return kRegistry;
}

}  // namespace

ModelFactory find_model_factory(const std::string& architecture) {
  for (const auto& [name, factory] : registry()) {
    if (name == architecture) return factory;
  }
  return nullptr;
}

std::vector<std::string> registered_architectures() {
  std::vector<std::string> names;
  for (const auto& entry : registry()) names.push_back(entry.first);
  return names;
}

Result<std::shared_ptr<const Model>> load_model(const std::string& path) {
  auto opened = GgufFile::open(path);
  if (!opened.ok()) return opened.status();
  auto file = std::make_shared<const GgufFile>(std::move(opened).value());
  const auto arch = file->get_string("general.architecture");
  if (!arch) return Status::invalid_argument(path + ": general.architecture is missing");
  if (file->get_string("general.type").value_or("model") == "adapter") {
    return Status::invalid_argument(path + ": this is an adapter file, not a model");
  }
  const ModelFactory factory = find_model_factory(*arch);
  if (factory == nullptr) {
    std::string known;
    for (const auto& n : registered_architectures()) known += (known.empty() ? "" : ", ") + n;
    return Status::unimplemented(path + ": architecture '" + *arch + "' is not supported (supported: " + known + ")");
  }
  auto model = factory(std::move(file));
  if (!model.ok()) return model.status().with_context(path);
  return model;
}

}  // namespace cellserve::engine
