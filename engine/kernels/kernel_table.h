// The kernel table: for every weight type, how activations are converted and how one weight row
// is dotted with one converted activation row. The engine calls kernels only through this table,
// so SIMD implementations (one folder per ISA) plug in by filling a table at start-up.
//
// The design follows ggml-cpu's type traits: each weight type names the format its activations
// take (`activation_type`: F32, F16, BF16, Q8_0, Q8_1 or Q8_K), which is also what makes our
// results agree with llama.cpp's CPU backend to rounding.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

#include "base/status.h"
#include "engine/quant/ggml_type.h"

namespace cellserve::engine::kernels {

// Converts `n` floats to `activation_type` blocks at `dst` (ggml_row_size bytes).
using FromFloatFn = void (*)(const float* src, void* dst, int64_t n);
// Returns the dot product of one weight row `w` and one converted activation row `a`, n elements.
using VecDotFn = float (*)(int64_t n, const void* w, const void* a);

struct WeightKernels {
  bool supported = false;
  GgmlType activation_type = GgmlType::F32;
  VecDotFn vec_dot = nullptr;
};

struct KernelTable {
  std::string_view isa;                      // "generic", "avx2", ...
  std::array<WeightKernels, 40> weights{};   // indexed by GgmlType value
  std::array<FromFloatFn, 40> from_float{};  // activation converters, indexed by activation type

  const WeightKernels& for_weight(GgmlType t) const { return weights[static_cast<size_t>(t)]; }
  FromFloatFn converter(GgmlType activation_type) const { return from_float[static_cast<size_t>(activation_type)]; }
};

// The scalar reference table: every supported type, plain loops. Always available.
const KernelTable& reference_kernels();

// The table chosen for this process: the best the CPU supports, or the one named by the
// CELLSERVE_ISA environment variable. Resolved once; thread-safe.
const KernelTable& active_kernels();

// Resolves an ISA name ("generic", ...) to a table; InvalidArgument when unknown or when the
// host CPU cannot run it.
Result<const KernelTable*> kernels_for_isa(std::string_view isa);

}  // namespace cellserve::engine::kernels
