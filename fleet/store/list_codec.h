// How the store keeps a processor's list-valued field (cpu_features) in one TEXT column: as a
// JSON array ("[\"avx2\",\"fma\"]"). A deployment's lists travel in its spec document.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace cellserve::fleet {

// Returns `items` as a JSON array of strings.
std::string encode_string_list(const std::vector<std::string>& items);
// Parses a JSON array of strings; DataLoss naming `what` when `text` is anything else.
Result<std::vector<std::string>> decode_string_list(std::string_view text, const char* what);

}  // namespace cellserve::fleet
