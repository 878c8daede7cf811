// Entries of the K-quant family for the AVX2 table (see x86_tables.h). Q4_K, Q5_K and Q6_K (the
// types of Q4_K_M / Q5_K_M files) also get register tiles for prefill.
#include "engine/kernels/reference/reference_kernels.h"
#include "engine/kernels/x86/avx2/kquant_kernels.h"
#include "engine/kernels/x86/avx2/legacy_kernels.h"
#include "engine/kernels/x86/x86_tables.h"

namespace cellserve::engine::kernels::x86 {
namespace {

void set_kernels(KernelTable& t, GgmlType type, VecDotFn vec_dot, TileDotFn tile_dot) {
  WeightKernels& k = t.weights[static_cast<size_t>(type)];
  k.vec_dot = vec_dot;
  k.tile_dot = tile_dot;
  k.tile_rows = tile_dot != nullptr ? kKquantTileRows : 0;
  k.tile_cols = tile_dot != nullptr ? kKquantTileCols : 0;
}

}  // namespace

void add_avx2_kquants(KernelTable& t) {
  set_kernels(t, GgmlType::Q4_K, vec_dot_q4_k_avx2, tile_dot_q4_k_avx2);
  set_kernels(t, GgmlType::Q5_K, vec_dot_q5_k_avx2, tile_dot_q5_k_avx2);
  set_kernels(t, GgmlType::Q6_K, vec_dot_q6_k_avx2, tile_dot_q6_k_avx2);
  set_kernels(t, GgmlType::Q3_K, vec_dot_q3_k_avx2, nullptr);
  set_kernels(t, GgmlType::Q2_K, vec_dot_q2_k_avx2, nullptr);
  set_kernels(t, GgmlType::IQ4_XS, vec_dot_iq4_xs_avx2, nullptr);
  set_packed(t, GgmlType::Q4_K, reference::pack_q4_k, packed_dot_q4_k, reference::kPackedQ4_KBytes);
  set_packed(t, GgmlType::Q6_K, reference::pack_q6_k, packed_dot_q6_k, reference::kPackedQ6_KBytes);
}

}  // namespace cellserve::engine::kernels::x86
