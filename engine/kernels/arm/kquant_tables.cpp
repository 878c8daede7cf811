// Entries of the K-quant family for the aarch64 tables (see arm_tables.h). Every level sets the
// K-quant and IQ4_XS vec_dot kernels; the tiles of a level are bit-identical to that level's
// vec_dot (neon-i8mm inherits the neon-dotprod vec_dot, whose integer sums its tiles reproduce).
#include "engine/kernels/arm/arm_tables.h"
#include "engine/kernels/arm/dotprod/kquant_dotprod.h"
#include "engine/kernels/arm/i8mm/kquant_i8mm.h"
#include "engine/kernels/arm/neon/kquant_neon.h"

namespace cellserve::engine::kernels::arm {
namespace {

void set_vec_dot(KernelTable& t, GgmlType type, VecDotFn fn) {
  WeightKernels& k = t.weights[static_cast<size_t>(type)];
  k.supported = true;
  k.activation_type = GgmlType::Q8_K;
  k.vec_dot = fn;
  // A tile inherited from a lower level would no longer match this level's vec_dot.
  k.tile_dot = nullptr;
  k.tile_rows = 0;
  k.tile_cols = 0;
}

void set_tile(KernelTable& t, GgmlType type, TileDotFn fn, int rows, int cols) {
  WeightKernels& k = t.weights[static_cast<size_t>(type)];
  k.tile_dot = fn;
  k.tile_rows = rows;
  k.tile_cols = cols;
}

}  // namespace

void add_neon_kquants(KernelTable& t) {
  set_vec_dot(t, GgmlType::Q2_K, vec_dot_q2_k_neon);
  set_vec_dot(t, GgmlType::Q3_K, vec_dot_q3_k_neon);
  set_vec_dot(t, GgmlType::Q4_K, vec_dot_q4_k_neon);
  set_vec_dot(t, GgmlType::Q5_K, vec_dot_q5_k_neon);
  set_vec_dot(t, GgmlType::Q6_K, vec_dot_q6_k_neon);
  set_vec_dot(t, GgmlType::IQ4_XS, vec_dot_iq4_xs_neon);
  set_tile(t, GgmlType::Q4_K, tile_dot_q4_k_neon, kNeonKquantTileRows, kNeonKquantTileCols);
  set_tile(t, GgmlType::Q5_K, tile_dot_q5_k_neon, kNeonKquantTileRows, kNeonKquantTileCols);
  set_tile(t, GgmlType::Q6_K, tile_dot_q6_k_neon, kNeonKquantTileRows, kNeonKquantTileCols);
}

void add_dotprod_kquants(KernelTable& t) {
  set_vec_dot(t, GgmlType::Q2_K, vec_dot_q2_k_dotprod);
  set_vec_dot(t, GgmlType::Q3_K, vec_dot_q3_k_dotprod);
  set_vec_dot(t, GgmlType::Q4_K, vec_dot_q4_k_dotprod);
  set_vec_dot(t, GgmlType::Q5_K, vec_dot_q5_k_dotprod);
  set_vec_dot(t, GgmlType::Q6_K, vec_dot_q6_k_dotprod);
  set_vec_dot(t, GgmlType::IQ4_XS, vec_dot_iq4_xs_dotprod);
  set_tile(t, GgmlType::Q4_K, tile_dot_q4_k_dotprod, kDotprodKquantTileRows, kDotprodKquantTileCols);
  set_tile(t, GgmlType::Q5_K, tile_dot_q5_k_dotprod, kDotprodKquantTileRows, kDotprodKquantTileCols);
  set_tile(t, GgmlType::Q6_K, tile_dot_q6_k_dotprod, kDotprodKquantTileRows, kDotprodKquantTileCols);
}

void add_i8mm_kquants(KernelTable& t) {
  // vec_dot stays the neon-dotprod one: the i8mm tiles compute the same exact integer sums and
  // apply the same two fused multiply-adds per super-block.
  set_tile(t, GgmlType::Q4_K, tile_dot_q4_k_i8mm, kI8mmKquantTileRows, kI8mmKquantTileCols);
  set_tile(t, GgmlType::Q6_K, tile_dot_q6_k_i8mm, kI8mmKquantTileRows, kI8mmKquantTileCols);
}

}  // namespace cellserve::engine::kernels::arm
