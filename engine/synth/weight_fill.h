// Deterministic random weights: the F32 master values of every tensor row, and the filler that
// streams them into a GGUF file converted to the tensor's stored type.
//
// Every row is drawn from its own generator, seeded from (seed, tensor name, row index)
// through splitmix64 into xoshiro256**, with normals from Box-Muller. So the values depend
// only on those three (not on thread count, type or file order), and the same seed gives the
// same master weights for every output type.
#pragma once

#include <cstdint>

#include "engine/gguf/gguf_writer.h"
#include "engine/synth/tensor_plan.h"

namespace cellserve::engine::synth {

// The rope scaling inputs RopeFreqs tensors need (taken from the ModelShape).
struct RopeFreqParams {
  int64_t head_dim = 0;
  float rope_base = 10000.0f;
  Llama3RopeScaling scaling;
};
RopeFreqParams rope_freq_params(const ModelShape& shape);

// Writes the shape.ne[0] F32 master values of row `row` of `t` to `out`.
// REQUIRES: row < t.shape.rows().
void master_row(const PlannedTensor& t, const RopeFreqParams& rope, uint64_t seed, int64_t row, float* out);

// A filler producing `t`'s bytes (its master rows converted with quantize_row to t.type), the
// rows spread over up to `n_threads` threads (0 = hardware concurrency). Memory beyond the
// output buffer: one row of floats per thread. REQUIRES: can_quantize(t.type).
GgufWriter::TensorFiller make_filler(const PlannedTensor& t, const RopeFreqParams& rope, uint64_t seed, int n_threads);

}  // namespace cellserve::engine::synth
