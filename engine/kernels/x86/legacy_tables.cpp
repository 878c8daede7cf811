// Entries of the legacy family for the AVX2 table (see x86_tables.h): float and blocks-of-32
// weight types, the activation converters, axpy_f16, swiglu and rms_norm. Compiled for the baseline: it
// only stores addresses of the kernels in avx2/.
#include "engine/kernels/reference/reference_kernels.h"
#include "engine/kernels/x86/avx2/legacy_kernels.h"
#include "engine/kernels/x86/x86_tables.h"

namespace cellserve::engine::kernels::x86 {

void add_avx2_legacy(KernelTable& t) {
  auto set = [&](GgmlType w, GgmlType act, VecDotFn dot, TileDotFn tile = nullptr, int rows = 0, int cols = 0) {
    t.weights[static_cast<size_t>(w)] = WeightKernels{true, act, dot, tile, rows, cols};
  };
  set(GgmlType::F32, GgmlType::F32, vec_dot_f32);
  set(GgmlType::F16, GgmlType::F16, vec_dot_f16, tile_dot_f16, kTileF16Rows, kTileF16Cols);
  set(GgmlType::BF16, GgmlType::BF16, vec_dot_bf16, tile_dot_bf16, kTileF16Rows, kTileF16Cols);
  set(GgmlType::Q4_0, GgmlType::Q8_0, vec_dot_q4_0, tile_dot_q4_0, kTileQ4Rows, kTileQ4Cols);
  set(GgmlType::Q4_1, GgmlType::Q8_1, vec_dot_q4_1, tile_dot_q4_1, kTileQ4Rows, kTileQ4Cols);
  set(GgmlType::Q5_0, GgmlType::Q8_0, vec_dot_q5_0, tile_dot_q5_0, kTileQ4Rows, kTileQ4Cols);
  set(GgmlType::Q5_1, GgmlType::Q8_1, vec_dot_q5_1, tile_dot_q5_1, kTileQ4Rows, kTileQ4Cols);
  set(GgmlType::Q8_0, GgmlType::Q8_0, vec_dot_q8_0, tile_dot_q8_0, kTileQ8Rows, kTileQ8Cols);
  set(GgmlType::IQ4_NL, GgmlType::Q8_0, vec_dot_iq4_nl, tile_dot_iq4_nl, kTileQ4Rows, kTileQ4Cols);
  // Packed rows for the types whose matmuls dominate Q4_0 / Q8_0 models (layout: the reference's).
  set_packed(t, GgmlType::Q4_0, reference::pack_q4_0, packed_dot_q4_0, reference::kPackedQ4_0Bytes);
  set_packed(t, GgmlType::Q8_0, reference::pack_q8_0, packed_dot_q8_0, reference::kPackedQ8_0Bytes);
  t.from_float[static_cast<size_t>(GgmlType::F16)] = from_float_f16;
  t.round_f16 = round_f16;
  t.from_float[static_cast<size_t>(GgmlType::BF16)] = from_float_bf16;
  t.from_float[static_cast<size_t>(GgmlType::Q8_0)] = from_float_q8_0;
  t.from_float[static_cast<size_t>(GgmlType::Q8_1)] = from_float_q8_1;
  t.from_float[static_cast<size_t>(GgmlType::Q8_K)] = from_float_q8_k;
  t.axpy_f16 = axpy_f16;
  t.swiglu = swiglu;
  t.rms_norm = rms_norm;
  t.attn_scores_f16 = attn_scores_f16;
  t.attn_softmax_f16 = attn_softmax_f16;
  t.attn_values_f16 = attn_values_f16;
  t.delta_net_recurrent = delta_net_recurrent;
  t.delta_net_chunked = delta_net_chunked;
  t.causal_conv1d_silu_channels = causal_conv1d_silu_channels;
}

}  // namespace cellserve::engine::kernels::x86
