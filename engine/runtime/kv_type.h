// The KV cache type option (--kv-type, the agent's engine settings): read in one place.
#pragma once

#include <string_view>

#include "base/status.h"
#include "engine/quant/ggml_type.h"

namespace cellserve::engine {

// What a KV cache is stored as unless asked otherwise.
inline constexpr std::string_view kDefaultKvType = "f16";

// The type `name` names ("f16", "f32", "q8_0"): the one reader of --kv-type for the CLI, the
// serve stack and its memory estimate. InvalidArgument naming the option otherwise.
Result<GgmlType> parse_kv_type(std::string_view name);

}  // namespace cellserve::engine
