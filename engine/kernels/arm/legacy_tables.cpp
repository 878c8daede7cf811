// Entries of the legacy family for the aarch64 tables (see arm_tables.h). Baseline code: it only
// takes the addresses of the kernels in neon/, dotprod/ and i8mm/.
#include "engine/kernels/arm/arm_tables.h"
#include "engine/kernels/arm/dotprod/legacy_kernels.h"
#include "engine/kernels/arm/i8mm/legacy_kernels.h"
#include "engine/kernels/arm/neon/legacy_kernels.h"
#include "engine/kernels/reference/reference_kernels.h"

namespace cellserve::engine::kernels::arm {
namespace {

WeightKernels& entry(KernelTable& t, GgmlType type) { return t.weights[static_cast<size_t>(type)]; }

// Replaces a type's vec_dot and tile together: a tile must match its own table's vec_dot.
void set_dot(KernelTable& t, GgmlType type, VecDotFn vec_dot, TileDotFn tile_dot = nullptr, int rows = 0,
             int cols = 0) {
  WeightKernels& k = entry(t, type);
  k.vec_dot = vec_dot;
  k.tile_dot = tile_dot;
  k.tile_rows = tile_dot != nullptr ? rows : 0;
  k.tile_cols = tile_dot != nullptr ? cols : 0;
}

void set_packed(KernelTable& t, GgmlType type, PackFn pack, PackedDotFn dot, int block_bytes) {
  WeightKernels& k = entry(t, type);
  k.pack = pack;
  k.packed_dot = dot;
  k.packed_block_bytes = block_bytes;
}

}  // namespace

void add_neon_legacy(KernelTable& t) {
  t.from_float[static_cast<size_t>(GgmlType::F16)] = from_float_f16_neon;
  t.from_float[static_cast<size_t>(GgmlType::BF16)] = from_float_bf16_neon;
  t.from_float[static_cast<size_t>(GgmlType::Q8_0)] = from_float_q8_0_neon;
  t.from_float[static_cast<size_t>(GgmlType::Q8_1)] = from_float_q8_1_neon;
  t.from_float[static_cast<size_t>(GgmlType::Q8_K)] = from_float_q8_k_neon;
  set_dot(t, GgmlType::F32, vec_dot_f32_neon);
  set_dot(t, GgmlType::F16, vec_dot_f16_neon);
  set_dot(t, GgmlType::BF16, vec_dot_bf16_neon);
  set_dot(t, GgmlType::Q4_0, vec_dot_q4_0_neon);
  set_dot(t, GgmlType::Q4_1, vec_dot_q4_1_neon);
  set_dot(t, GgmlType::Q5_0, vec_dot_q5_0_neon);
  set_dot(t, GgmlType::Q5_1, vec_dot_q5_1_neon);
  set_dot(t, GgmlType::Q8_0, vec_dot_q8_0_neon);
  set_dot(t, GgmlType::IQ4_NL, vec_dot_iq4_nl_neon);
  t.axpy_f16 = axpy_f16_neon;
  // No NEON attention kernels yet: attention keeps its per-cell vec_dot / axpy_f16 path here
  // rather than fall back to the scalar reference ones.
  t.attn_scores_f16 = nullptr;
  t.attn_softmax_f16 = nullptr;
  t.attn_values_f16 = nullptr;
  t.swiglu = swiglu_neon;
}

void add_dotprod_legacy(KernelTable& t) {
  constexpr int kRows = kLegacyDotprodTileRows, kCols = kLegacyDotprodTileCols;
  set_dot(t, GgmlType::Q4_0, vec_dot_q4_0_dotprod, tile_dot_q4_0_dotprod, kRows, kCols);
  set_dot(t, GgmlType::Q5_0, vec_dot_q5_0_dotprod, tile_dot_q5_0_dotprod, kRows, kCols);
  set_dot(t, GgmlType::Q8_0, vec_dot_q8_0_dotprod, tile_dot_q8_0_dotprod, kRows, kCols);
  set_dot(t, GgmlType::IQ4_NL, vec_dot_iq4_nl_dotprod, tile_dot_iq4_nl_dotprod, kRows, kCols);
  set_dot(t, GgmlType::Q4_1, vec_dot_q4_1_dotprod);
  set_dot(t, GgmlType::Q5_1, vec_dot_q5_1_dotprod);
  // Packed rows (the reference's layout, as on x86): decode and prefill of Q4_0 / Q8_0 matrices
  // then run on SDOT-by-element over 8 rows at once, on this table and the i8mm one.
  set_packed(t, GgmlType::Q4_0, reference::pack_q4_0, packed_dot_q4_0_dotprod, reference::kPackedQ4_0Bytes);
  set_packed(t, GgmlType::Q8_0, reference::pack_q8_0, packed_dot_q8_0_dotprod, reference::kPackedQ8_0Bytes);
}

void add_i8mm_legacy(KernelTable& t) {
  // Same vec_dots as the dotprod table (same float order), SMMLA tiles.
  constexpr int kRows = kLegacyI8mmTileRows, kCols = kLegacyI8mmTileCols;
  set_dot(t, GgmlType::Q4_0, vec_dot_q4_0_dotprod, tile_dot_q4_0_i8mm, kRows, kCols);
  set_dot(t, GgmlType::Q5_0, vec_dot_q5_0_dotprod, tile_dot_q5_0_i8mm, kRows, kCols);
  set_dot(t, GgmlType::Q8_0, vec_dot_q8_0_dotprod, tile_dot_q8_0_i8mm, kRows, kCols);
  set_dot(t, GgmlType::IQ4_NL, vec_dot_iq4_nl_dotprod, tile_dot_iq4_nl_i8mm, kRows, kCols);
}

}  // namespace cellserve::engine::kernels::arm
