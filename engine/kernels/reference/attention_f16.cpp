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
  if (x > 88.72283935546875f) return INFINITY;
  // x = n ln2 + r, |r| <= ln2 / 2; n * 0.693359375 is exact (9 significant bits, |n| < 2^8).
  const float n = std::nearbyint(x * 1.44269504088896341f);
  float r = std::fma(-n, 0.693359375f, x);
  r = std::fma(-n, -2.12194440e-4f, r);
  // e^r = 1 + r + r^2 p(r), Cephes' degree-6 polynomial.
  float p = 1.9875691500e-4f;
  p = std::fma(p, r, 1.3981999507e-3f);
  p = std::fma(p, r, 8.3334519073e-3f);
  p = std::fma(p, r, 4.1665795894e-2f);
  p = std::fma(p, r, 1.6666665459e-1f);
  p = std::fma(p, r, 5.0000001201e-1f);
  const float er = std::fma(p, r * r, r) + 1.0f;
  // 2^n as 2^(n-1) * 2, so that n = 128 still scales by normal numbers.
  const float half_scale = std::bit_cast<float>(static_cast<uint32_t>(static_cast<int32_t>(n) + 126) << 23);
  return er * half_scale * 2.0f;
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
