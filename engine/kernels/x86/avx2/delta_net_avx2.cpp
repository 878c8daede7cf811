// The float Gated DeltaNet (delta_net_float.h) on AVX2 + FMA primitives.
#include <immintrin.h>

#include "engine/kernels/delta_net_float.h"
#include "engine/kernels/x86/avx2/delta_net_ops_avx2.h"
#include "engine/kernels/x86/avx2/legacy_kernels.h"

namespace cellserve::engine::kernels::x86 {

void delta_net_recurrent(const reference::DeltaNetHeadArgs& a, float* state) {
  delta_net_recurrent_float<Avx2Ops>(a, state);
}

void delta_net_chunked(const reference::DeltaNetHeadArgs& a, float* state, int64_t chunk_size) {
  delta_net_chunked_float<Avx2Ops>(a, state, chunk_size);
}

}  // namespace cellserve::engine::kernels::x86
