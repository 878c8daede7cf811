// llama.cpp's `general.file_type` values (enum llama_ftype): the "mostly" type of a model file.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace cellserve::engine {

// Returns llama.cpp's name for a file type ("MOSTLY_Q4_K_M"), or nullopt for an unknown value.
std::optional<std::string_view> file_type_name(uint32_t file_type);

}  // namespace cellserve::engine
