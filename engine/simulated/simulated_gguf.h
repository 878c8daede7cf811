// The GGUF image a simulated model describes itself with: no tensors, only general.* and the
// tokenizer.* metadata of a small Qwen2.5-style vocabulary (byte-level BPE: the 256 bytes, every
// lowercase pair and triple and " " + one or two letters as merge-built tokens, then Qwen2.5's
// 22 added tokens) and Qwen2.5's real chat template. So the serve stack reads its tokenizer and
// template exactly as it reads a downloaded model's.
#pragma once

#include <memory>
#include <string_view>

#include "base/status.h"
#include "engine/gguf/gguf_file.h"

namespace cellserve::engine::simulated {

inline constexpr std::string_view kSimulatedArchitecture = "simulated";

// The parsed image; its bytes live as long as the returned file.
Result<std::shared_ptr<const GgufFile>> simulated_gguf();

}  // namespace cellserve::engine::simulated
