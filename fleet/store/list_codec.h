// How the store keeps list-valued fields (cpu_features, allow, lora, env) in one TEXT column:
// as JSON arrays ("[\"avx2\",\"fma\"]", env as "[[\"K\",\"V\"],...]").
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/status.h"

namespace cellserve::fleet {

// Returns `items` as a JSON array of strings.
std::string encode_string_list(const std::vector<std::string>& items);
// Parses a JSON array of strings; DataLoss naming `what` when `text` is anything else.
Result<std::vector<std::string>> decode_string_list(std::string_view text, const char* what);

// Returns `pairs` as a JSON array of two-string arrays.
std::string encode_string_pairs(const std::vector<std::pair<std::string, std::string>>& pairs);
// Parses a JSON array of two-string arrays; DataLoss naming `what` when `text` is anything else.
Result<std::vector<std::pair<std::string, std::string>>> decode_string_pairs(std::string_view text, const char* what);

}  // namespace cellserve::fleet
