// Named model shapes for `cellserve synth --shape`.
//
// Every architecture has a `tiny` preset that reproduces the random test models of
// shared/testdata (README §1b) tensor for tensor; the others carry the true sizes of published
// Hugging Face checkpoints (sources in docs/synth.md and in ModelShape::source).
#pragma once

#include <string_view>
#include <vector>

#include "base/status.h"
#include "engine/synth/synth_spec.h"

namespace cellserve::engine::synth {

// All presets of `arch`, `tiny` first. The returned reference stays valid for the process.
const std::vector<ModelShape>& presets_for(Arch arch);

// The preset `name` of `arch`. InvalidArgument naming the known presets when there is none.
Result<ModelShape> find_preset(Arch arch, std::string_view name);

}  // namespace cellserve::engine::synth
