// The reference kernel table: which activation format and dot product each weight type uses
// (ggml-cpu's vec_dot_type choices).
#include "engine/kernels/kernel_table.h"
#include "engine/kernels/reference/delta_net.h"
#include "engine/kernels/reference/reference_kernels.h"

namespace cellserve::engine::kernels {

const KernelTable& reference_kernels() {
  static const KernelTable table = [] {
    KernelTable t;
    t.isa = "generic";
    auto set = [&](GgmlType w, GgmlType act, VecDotFn dot) {
      t.weights[static_cast<size_t>(w)] = WeightKernels{true, act, dot};
    };
    namespace r = reference;
    set(GgmlType::F32, GgmlType::F32, r::vec_dot_f32);
    set(GgmlType::F16, GgmlType::F16, r::vec_dot_f16);
    set(GgmlType::BF16, GgmlType::BF16, r::vec_dot_bf16);
    set(GgmlType::Q4_0, GgmlType::Q8_0, r::vec_dot_q4_0);
    set(GgmlType::Q4_1, GgmlType::Q8_1, r::vec_dot_q4_1);
    set(GgmlType::Q5_0, GgmlType::Q8_0, r::vec_dot_q5_0);
    set(GgmlType::Q5_1, GgmlType::Q8_1, r::vec_dot_q5_1);
    set(GgmlType::Q8_0, GgmlType::Q8_0, r::vec_dot_q8_0);
    set(GgmlType::IQ4_NL, GgmlType::Q8_0, r::vec_dot_iq4_nl);
    set(GgmlType::Q2_K, GgmlType::Q8_K, r::vec_dot_q2_k);
    set(GgmlType::Q3_K, GgmlType::Q8_K, r::vec_dot_q3_k);
    set(GgmlType::Q4_K, GgmlType::Q8_K, r::vec_dot_q4_k);
    set(GgmlType::Q5_K, GgmlType::Q8_K, r::vec_dot_q5_k);
    set(GgmlType::Q6_K, GgmlType::Q8_K, r::vec_dot_q6_k);
    set(GgmlType::IQ4_XS, GgmlType::Q8_K, r::vec_dot_iq4_xs);
    t.from_float[static_cast<size_t>(GgmlType::F32)] = r::from_float_f32;
    t.from_float[static_cast<size_t>(GgmlType::F16)] = r::from_float_f16;
    t.from_float[static_cast<size_t>(GgmlType::BF16)] = r::from_float_bf16;
    t.from_float[static_cast<size_t>(GgmlType::Q8_0)] = r::from_float_q8_0;
    t.from_float[static_cast<size_t>(GgmlType::Q8_1)] = r::from_float_q8_1;
    t.from_float[static_cast<size_t>(GgmlType::Q8_K)] = r::from_float_q8_k;
    t.round_f16 = r::round_f16;
    t.axpy_f16 = r::axpy_f16;
    t.swiglu = r::swiglu;
    t.rms_norm = r::rms_norm;
    t.attn_scores_f16 = r::attn_scores_f16;
    t.attn_softmax_f16 = r::attn_softmax_f16;
    t.attn_values_f16 = r::attn_values_f16;
    t.delta_net_recurrent = r::delta_net_recurrent;
    t.delta_net_chunked = r::delta_net_chunked;
    t.int8_dot_peak = reference::int8_dot_peak;
    t.bf16_dot_peak = reference::bf16_dot_peak;
    t.causal_conv1d_silu_channels = r::causal_conv1d_silu_channels;
    return t;
  }();
  return table;
}

}  // namespace cellserve::engine::kernels
