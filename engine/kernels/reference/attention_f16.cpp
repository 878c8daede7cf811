// Scalar reference of the attention kernels over an F16 KV cache. The order of every sum is
// part of the specification (kernel_table.h), so they spell out the SIMD lanes: the AVX2 kernels
// must equal them bit for bit.
#include <bit>
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

float attn_exp(float x) {
  if (!(x >= kAttnExpLowest)) return 0.0f;  // also NaN
  const float n = std::nearbyint(x * kAttnExpLog2e);
  // n * kAttnExpLn2Hi is exact (|n| < 2^8, kAttnExpLn2Hi has 9 significant bits).
  float r = std::fma(-n, kAttnExpLn2Hi, x);
  r = std::fma(-n, kAttnExpLn2Lo, r);
  // exp(r) for |r| <= ln2 / 2 by Taylor to degree 7: the first term left out, r^8 / 8!, is
  // below 5.3e-9 relative, under half a float ulp.
  float p = kAttnExpPoly[0];
  for (int i = 1; i < 8; ++i) p = std::fma(p, r, kAttnExpPoly[i]);
  // x >= -87 keeps n >= -126, so 2^n is a normal float.
  const float scale = std::bit_cast<float>(static_cast<uint32_t>(static_cast<int32_t>(n) + 127) << 23);
  return p * scale;
}

void attn_softmax_f16(int64_t n, float scale, float* scores, uint16_t* probs) {
  float max = -INFINITY;
  for (int64_t j = 0; j < n; ++j) {
    scores[j] *= scale;
    if (scores[j] > max) max = scores[j];
  }
  double lane[8] = {};
  for (int64_t j = 0; j < n; ++j) {
    scores[j] = attn_exp(scores[j] - max);
    lane[j % 8] += static_cast<double>(scores[j]);
  }
  const double sum = ((lane[0] + lane[4]) + (lane[2] + lane[6])) + ((lane[1] + lane[5]) + (lane[3] + lane[7]));
  const auto inv = static_cast<float>(1.0 / sum);
  for (int64_t j = 0; j < n; ++j) probs[j] = fp32_to_fp16(scores[j] * inv);
}

void attn_values_f16(int64_t head_dim, int n_q, const uint16_t* p, int64_t p_stride, int64_t n_cells,
                     const uint16_t* const* v_rows, float* out, int64_t out_stride) {
  for (int i = 0; i < n_q; ++i) {
    float* oi = out + i * out_stride;
    for (int64_t j = 0; j < n_cells; ++j) {
      const float pj = fp16_to_fp32(p[i * p_stride + j]);
      for (int64_t d = 0; d < head_dim; ++d) oi[d] = std::fma(pj, fp16_to_fp32(v_rows[j][d]), oi[d]);
    }
  }
}

}  // namespace cellserve::engine::kernels::reference
