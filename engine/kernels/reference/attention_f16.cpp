// Scalar reference of the attention kernels over an F16 KV cache. The order of every sum is
// part of the specification (kernel_table.h), so they spell out the SIMD lanes: the AVX2 kernels
// must equal them bit for bit.
#include <cmath>

#include "base/half.h"
#include "engine/kernels/reference/reference_kernels.h"

namespace cellserve::engine::kernels::reference {

void attn_scores_f16(int64_t head_dim, int n_q, const float* q, int64_t q_stride, int64_t n_cells,
                     const uint16_t* const* k_rows, float* scores, int64_t scores_stride) {
  for (int i = 0; i < n_q; ++i) {
    const float* qi = q + i * q_stride;
    for (int64_t j = 0; j < n_cells; ++j) {
      float lane[8] = {};
      for (int64_t d = 0; d < head_dim; ++d) lane[d % 8] = std::fma(fp16_to_fp32(k_rows[j][d]), qi[d], lane[d % 8]);
      scores[i * scores_stride + j] =
          ((lane[0] + lane[4]) + (lane[2] + lane[6])) + ((lane[1] + lane[5]) + (lane[3] + lane[7]));
    }
  }
}

void attn_values_f16(int64_t head_dim, int64_t n_cells, const float* p, const uint16_t* const* v_rows, float* out) {
  for (int64_t d = 0; d < head_dim; ++d) out[d] = 0.0f;
  for (int64_t j = 0; j < n_cells; ++j) {
    const float pj = fp16_to_fp32(fp32_to_fp16(p[j]));
    for (int64_t d = 0; d < head_dim; ++d) out[d] = std::fma(pj, fp16_to_fp32(v_rows[j][d]), out[d]);
  }
}

}  // namespace cellserve::engine::kernels::reference
