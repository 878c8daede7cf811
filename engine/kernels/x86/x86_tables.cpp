#include "engine/kernels/x86/x86_tables.h"
#include "engine/kernels/isa_tables.h"
#include "engine/kernels/reference/reference_kernels.h"
#include "engine/kernels/x86/avx512/avx512_kernels.h"
#include "engine/kernels/x86/avx512_bf16/bf16_kernels.h"
#include "engine/kernels/x86/avx512_vnni/vnni_kernels.h"
#include "engine/kernels/x86/avx_vnni/avx_vnni_kernels.h"
#include "engine/kernels/x86/dot_peak_x86.h"

namespace cellserve::engine::kernels {
namespace {

// The VNNI tables keep the AVX2 table's packed layouts (pack functions, block sizes) and replace
// only the kernels that dot them.
void use_packed_dots(KernelTable& t, PackedDotFn q4_0, PackedDotFn q8_0, PackedDotFn q4_k, PackedDotFn q6_k) {
  t.weights[static_cast<size_t>(GgmlType::Q4_0)].packed_dot = q4_0;
  t.weights[static_cast<size_t>(GgmlType::Q8_0)].packed_dot = q8_0;
  t.weights[static_cast<size_t>(GgmlType::Q4_K)].packed_dot = q4_k;
  t.weights[static_cast<size_t>(GgmlType::Q6_K)].packed_dot = q6_k;
}

}  // namespace

const KernelTable& avx2_kernels() {
  static const KernelTable table = [] {
    KernelTable t = reference_kernels();
    t.isa = "avx2";
    x86::add_avx2_legacy(t);
    x86::add_avx2_kquants(t);
    t.int8_dot_peak = x86::avx2::int8_dot_peak;
    t.bf16_dot_peak = x86::avx2::bf16_dot_peak;
    return t;
  }();
  return table;
}

const KernelTable& avx_vnni_kernels() {
  static const KernelTable table = [] {
    KernelTable t = avx2_kernels();
    t.isa = "avx-vnni";
    t.int8_dot_peak = x86::avx_vnni::int8_dot_peak;
    use_packed_dots(t, x86::avx_vnni::packed_dot_q4_0, x86::avx_vnni::packed_dot_q8_0, x86::avx_vnni::packed_dot_q4_k,
                    x86::avx_vnni::packed_dot_q6_k);
    return t;
  }();
  return table;
}

const KernelTable& avx512_kernels() {
  static const KernelTable table = [] {
    KernelTable t = avx2_kernels();
    t.isa = "avx512";
    t.int8_dot_peak = x86::avx512::int8_dot_peak;
    t.bf16_dot_peak = x86::avx512::bf16_dot_peak;
    t.attn_scores_f16 = x86::avx512::attn_scores_f16;
    t.attn_values_f16 = x86::avx512::attn_values_f16;
    t.delta_net_chunked = x86::avx512::delta_net_chunked;
    return t;
  }();
  return table;
}

const KernelTable& avx512_vnni_kernels() {
  static const KernelTable table = [] {
    KernelTable t = avx512_kernels();
    t.isa = "avx512-vnni";
    t.int8_dot_peak = x86::vnni::int8_dot_peak;
    use_packed_dots(t, x86::vnni::packed_dot_q4_0, x86::vnni::packed_dot_q8_0, x86::vnni::packed_dot_q4_k,
                    x86::vnni::packed_dot_q6_k);
    t.weights[static_cast<size_t>(GgmlType::Q4_0)].packed_dot_pair = x86::vnni::packed_dot_q4_0_pair;
    t.weights[static_cast<size_t>(GgmlType::Q8_0)].packed_dot_pair = x86::vnni::packed_dot_q8_0_pair;
    t.weights[static_cast<size_t>(GgmlType::Q4_K)].packed_dot_pair = x86::vnni::packed_dot_q4_k_pair;
    t.weights[static_cast<size_t>(GgmlType::Q6_K)].packed_dot_pair = x86::vnni::packed_dot_q6_k_pair;
    return t;
  }();
  return table;
}

const KernelTable& avx512_bf16_kernels() {
  static const KernelTable table = [] {
    KernelTable t = avx512_vnni_kernels();
    t.isa = "avx512-bf16";
    t.bf16_dot_peak = x86::bf16::bf16_dot_peak;
    t.weights[static_cast<size_t>(GgmlType::BF16)] = WeightKernels{true,
                                                                   GgmlType::BF16,
                                                                   x86::bf16::vec_dot_bf16,
                                                                   x86::bf16::tile_dot_bf16,
                                                                   x86::bf16::kTileBf16Rows,
                                                                   x86::bf16::kTileBf16Cols,
                                                                   x86::bf16::tile_dot_bf16_rows};
    // Matrices whose rows come in groups of 8 (all of a model's projections in practice) are packed
    // so that prefill and decode take no horizontal sums; the tile and vec_dot serve the others.
    x86::set_packed(t, GgmlType::BF16, reference::pack_bf16, x86::bf16::packed_dot_bf16, reference::kPackedBf16Bytes);
    WeightKernels& k = t.weights[static_cast<size_t>(GgmlType::BF16)];
    k.packed_dot_pair = x86::bf16::packed_dot_bf16_pair;
    k.packed_n_multiple = reference::kPackedBf16Multiple;
    return t;
  }();
  return table;
}

}  // namespace cellserve::engine::kernels
