// The architecture registry: one line per architecture in registry.cpp.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "engine/models/model.h"

namespace cellserve::engine {

using ModelFactory = Result<std::shared_ptr<const Model>> (*)(std::shared_ptr<const GgufFile> file);

// The factory for `architecture` (general.architecture), or nullptr.
ModelFactory find_model_factory(const std::string& architecture);
// Names of every registered architecture.
std::vector<std::string> registered_architectures();

// Factories, each defined in engine/models/<arch>_model.cpp.
Result<std::shared_ptr<const Model>> make_llama_model(std::shared_ptr<const GgufFile> file);
Result<std::shared_ptr<const Model>> make_qwen2_model(std::shared_ptr<const GgufFile> file);
Result<std::shared_ptr<const Model>> make_qwen3_model(std::shared_ptr<const GgufFile> file);
Result<std::shared_ptr<const Model>> make_qwen35_model(std::shared_ptr<const GgufFile> file);

}  // namespace cellserve::engine
