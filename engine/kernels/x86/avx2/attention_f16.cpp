// AVX2 attention kernels over an F16 KV cache (arithmetic order: kernel_table.h; scalar
// reference: reference/attention_f16.cpp). Scores take 2 query rows x 4 keys per pass, so each
// key chunk is converted from F16 once for both queries; the weighted sum of values keeps 64
// output dimensions in registers across all cells instead of loading and storing them per cell.
#include <immintrin.h>

#include "engine/kernels/x86/avx2/lanes.h"
#include "engine/kernels/x86/avx2/legacy_kernels.h"

namespace cellserve::engine::kernels::x86 {
namespace {

inline __m256 load_f16x8(const uint16_t* p) {
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}

template <int NQ, int NC>
void score_tile(int64_t head_dim, const float* q, int64_t q_stride, const uint16_t* const* k, float* scores,
                int64_t scores_stride) {
  __m256 acc[NQ][NC];
#pragma GCC unroll 4
  for (int i = 0; i < NQ; ++i) {
#pragma GCC unroll 4
    for (int c = 0; c < NC; ++c) acc[i][c] = _mm256_setzero_ps();
  }
  for (int64_t d = 0; d < head_dim; d += 8) {
    __m256 kv[NC];
#pragma GCC unroll 4
    for (int c = 0; c < NC; ++c) kv[c] = load_f16x8(k[c] + d);
#pragma GCC unroll 4
    for (int i = 0; i < NQ; ++i) {
      const __m256 qv = _mm256_loadu_ps(q + i * q_stride + d);
#pragma GCC unroll 4
      for (int c = 0; c < NC; ++c) acc[i][c] = _mm256_fmadd_ps(kv[c], qv, acc[i][c]);
    }
  }
#pragma GCC unroll 4
  for (int i = 0; i < NQ; ++i) {
#pragma GCC unroll 4
    for (int c = 0; c < NC; ++c) scores[i * scores_stride + c] = horizontal_sum(acc[i][c]);
  }
}

template <int NQ>
void score_rows(int64_t head_dim, const float* q, int64_t q_stride, int64_t n_cells, const uint16_t* const* k,
                float* scores, int64_t scores_stride) {
  int64_t j = 0;
  for (; j + 4 <= n_cells; j += 4) score_tile<NQ, 4>(head_dim, q, q_stride, k + j, scores + j, scores_stride);
  for (; j < n_cells; ++j) score_tile<NQ, 1>(head_dim, q, q_stride, k + j, scores + j, scores_stride);
}

// out[d0, d0 + 8 * U) over all cells.
template <int U>
void value_chunk(int64_t d0, int64_t n_cells, const float* p, const uint16_t* const* v, float* out) {
  __m256 acc[U];
#pragma GCC unroll 8
  for (int u = 0; u < U; ++u) acc[u] = _mm256_setzero_ps();
  for (int64_t j = 0; j < n_cells; ++j) {
    const __m256 pj = _mm256_set1_ps(_cvtsh_ss(_cvtss_sh(p[j], _MM_FROUND_TO_NEAREST_INT)));
    const uint16_t* row = v[j] + d0;
#pragma GCC unroll 8
    for (int u = 0; u < U; ++u) acc[u] = _mm256_fmadd_ps(pj, load_f16x8(row + 8 * u), acc[u]);
  }
#pragma GCC unroll 8
  for (int u = 0; u < U; ++u) _mm256_storeu_ps(out + d0 + 8 * u, acc[u]);
}

}  // namespace

void attn_scores_f16(int64_t head_dim, int n_q, const float* q, int64_t q_stride, int64_t n_cells,
                     const uint16_t* const* k_rows, float* scores, int64_t scores_stride) {
  int i = 0;
  for (; i + 2 <= n_q; i += 2) {
    score_rows<2>(head_dim, q + i * q_stride, q_stride, n_cells, k_rows, scores + i * scores_stride, scores_stride);
  }
  if (i < n_q) score_rows<1>(head_dim, q + i * q_stride, q_stride, n_cells, k_rows, scores + i * scores_stride, 0);
}

void attn_values_f16(int64_t head_dim, int64_t n_cells, const float* p, const uint16_t* const* v_rows, float* out) {
  int64_t d = 0;
  for (; d + 64 <= head_dim; d += 64) value_chunk<8>(d, n_cells, p, v_rows, out);
  for (; d < head_dim; d += 8) value_chunk<1>(d, n_cells, p, v_rows, out);
}

}  // namespace cellserve::engine::kernels::x86
