// AVX2 attention kernels over an F16 KV cache (arithmetic order: kernel_table.h; scalar
// reference: reference/attention_f16.cpp). The cells are taken in blocks small enough for L1,
// and every query row given runs over a block before the next block is read: a tile of query
// rows (several tokens of one prompt) then reads each key and value from memory once.
// - Scores take 4 query rows x 3 keys per pass (12 accumulators, 3 keys and one query row: the 16
//   registers). With 8 or more rows, a block of keys is first converted to floats once for all
//   of them; with fewer (a decode step), each pass converts its keys itself.
// - The weighted sum of values keeps 3 rows x 32 dimensions in registers across a block. With 6 or
//   more rows, the block's values are converted to floats 32 dimensions at a time, once for all
//   the rows.
// Converting first changes no value (F16 to float is exact) and no sum's order.
#include <immintrin.h>

#include "engine/kernels/x86/avx2/lanes.h"
#include "engine/kernels/x86/avx2/legacy_kernels.h"

namespace cellserve::engine::kernels::x86 {
namespace {

inline __m256 load_f16x8(const uint16_t* p) {
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}

// Keys either as F16 rows (pointers into the cache) or as a block already converted to floats
// (key c at k + c * head_dim); both give a tile the same 8 floats.
struct F16Keys {
  const uint16_t* const* k;
  __m256 load(int c, int64_t d) const { return load_f16x8(k[c] + d); }
  F16Keys at(int64_t j) const { return {k + j}; }
};
struct FloatKeys {
  const float* k;
  int64_t head_dim;
  __m256 load(int c, int64_t d) const { return _mm256_load_ps(k + c * head_dim + d); }
  FloatKeys at(int64_t j) const { return {k + j * head_dim, head_dim}; }
};

template <int NQ, int NC, typename Keys>
void score_tile(int64_t head_dim, const float* q, int64_t q_stride, Keys k, float* scores, int64_t scores_stride) {
  __m256 acc[NQ][NC];
#pragma GCC unroll 4
  for (int i = 0; i < NQ; ++i) {
#pragma GCC unroll 4
    for (int c = 0; c < NC; ++c) acc[i][c] = _mm256_setzero_ps();
  }
  for (int64_t d = 0; d < head_dim; d += 8) {
    __m256 kv[NC];
#pragma GCC unroll 4
    for (int c = 0; c < NC; ++c) kv[c] = k.load(c, d);
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

template <int NQ, typename Keys>
void score_rows(int64_t head_dim, const float* q, int64_t q_stride, int64_t n_cells, Keys k, float* scores,
                int64_t scores_stride) {
  int64_t j = 0;
  for (; j + 3 <= n_cells; j += 3) score_tile<NQ, 3>(head_dim, q, q_stride, k.at(j), scores + j, scores_stride);
  for (; j < n_cells; ++j) score_tile<NQ, 1>(head_dim, q, q_stride, k.at(j), scores + j, scores_stride);
}

// Rows [0, n_q) of q against the n_cells keys of one block.
template <typename Keys>
void score_block(int64_t head_dim, int n_q, const float* q, int64_t q_stride, int64_t n_cells, Keys k, float* scores,
                 int64_t scores_stride) {
  int i = 0;
  for (; i + 4 <= n_q; i += 4)
    score_rows<4>(head_dim, q + i * q_stride, q_stride, n_cells, k, scores + i * scores_stride, scores_stride);
  for (; i + 2 <= n_q; i += 2)
    score_rows<2>(head_dim, q + i * q_stride, q_stride, n_cells, k, scores + i * scores_stride, scores_stride);
  if (i < n_q) score_rows<1>(head_dim, q + i * q_stride, q_stride, n_cells, k, scores + i * scores_stride, 0);
}

// Bytes of F16 keys or values per block of cells: 16 KB, half of a small core's L1.
constexpr int64_t kBlockBytes = 16384;
// Cells per values block (64 values of 128 dimensions are 16 KB).
constexpr int64_t kCellBlock = 64;
// Query rows whose probabilities one values block converts at a time.
constexpr int kValueRows = 32;
// Rows from which converting a block first pays: each pass of a tile then saves its conversions.
constexpr int kConvertedKeyRows = 8;
constexpr int kConvertedValueRows = 6;
// The float copy of one keys block, 16 KB (16 keys of 256 dimensions, 32 of 128).
constexpr int64_t kFloatKeyBlock = 4096;

// out rows [0, NQ) at dimensions [d0, d0 + 8 * U) += the cells [0, n) of a block; p[i * kCellBlock
// + j] is row i's probability of cell j, already a float. Values either F16 rows (v[j] + d0) or a
// float block (vf[j * 32 + 8 * u], dimensions d0 onwards).
struct F16Values {
  const uint16_t* const* v;
  __m256 load(int64_t j, int64_t d0, int u) const { return load_f16x8(v[j] + d0 + 8 * u); }
};
struct FloatValues {
  const float* vf;
  __m256 load(int64_t j, int64_t /*d0*/, int u) const { return _mm256_load_ps(vf + j * 32 + 8 * u); }
};

template <int NQ, int U, typename Values>
void value_tile(int64_t d0, int64_t n, const float* p, Values v, float* out, int64_t out_stride) {
  __m256 acc[NQ][U];
#pragma GCC unroll 4
  for (int i = 0; i < NQ; ++i) {
#pragma GCC unroll 4
    for (int u = 0; u < U; ++u) acc[i][u] = _mm256_loadu_ps(out + i * out_stride + d0 + 8 * u);
  }
  for (int64_t j = 0; j < n; ++j) {
    // 3 x 4 accumulators, 3 probabilities and one value chunk: the 16 registers.
    __m256 pj[NQ];
#pragma GCC unroll 4
    for (int i = 0; i < NQ; ++i) pj[i] = _mm256_broadcast_ss(p + i * kCellBlock + j);
#pragma GCC unroll 4
    for (int u = 0; u < U; ++u) {
      const __m256 vv = v.load(j, d0, u);
#pragma GCC unroll 4
      for (int i = 0; i < NQ; ++i) acc[i][u] = _mm256_fmadd_ps(pj[i], vv, acc[i][u]);
    }
  }
#pragma GCC unroll 4
  for (int i = 0; i < NQ; ++i) {
#pragma GCC unroll 4
    for (int u = 0; u < U; ++u) _mm256_storeu_ps(out + i * out_stride + d0 + 8 * u, acc[i][u]);
  }
}

// Rows [0, rows) at dimensions [d0, d0 + 8 * U).
template <int U, typename Values>
void value_rows(int rows, int64_t d0, int64_t n, const float* pf, Values v, float* out, int64_t out_stride) {
  int i = 0;
  for (; i + 3 <= rows; i += 3) value_tile<3, U>(d0, n, pf + i * kCellBlock, v, out + i * out_stride, out_stride);
  if (rows - i == 2) value_tile<2, U>(d0, n, pf + i * kCellBlock, v, out + i * out_stride, out_stride);
  if (rows - i == 1) value_tile<1, U>(d0, n, pf + i * kCellBlock, v, out + i * out_stride, out_stride);
}

// Dimensions [d0, d0 + width), width a multiple of 8 up to 32.
template <typename Values>
void value_chunk(int64_t width, int rows, int64_t d0, int64_t n, const float* pf, Values v, float* out,
                 int64_t out_stride) {
  switch (width / 8) {
    case 4:
      value_rows<4>(rows, d0, n, pf, v, out, out_stride);
      break;
    case 3:
      value_rows<3>(rows, d0, n, pf, v, out, out_stride);
      break;
    case 2:
      value_rows<2>(rows, d0, n, pf, v, out, out_stride);
      break;
    case 1:
      value_rows<1>(rows, d0, n, pf, v, out, out_stride);
      break;
    default:
      break;
  }
}

inline __m256i tail_mask(int64_t n) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(n)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

}  // namespace

void attn_scores_f16(int64_t head_dim, int n_q, const float* q, int64_t q_stride, int64_t n_cells,
                     const uint16_t* const* k_rows, float* scores, int64_t scores_stride) {
  if (n_q >= kConvertedKeyRows && head_dim <= kFloatKeyBlock) {
    alignas(32) float kf[kFloatKeyBlock];
    const int64_t block = kFloatKeyBlock / head_dim;
    for (int64_t j0 = 0; j0 < n_cells; j0 += block) {
      const int64_t n = n_cells - j0 < block ? n_cells - j0 : block;
      for (int64_t j = 0; j < n; ++j) {
        for (int64_t d = 0; d < head_dim; d += 8)
          _mm256_store_ps(kf + j * head_dim + d, load_f16x8(k_rows[j0 + j] + d));
      }
      score_block(head_dim, n_q, q, q_stride, n, FloatKeys{kf, head_dim}, scores + j0, scores_stride);
    }
    return;
  }
  const int64_t block = head_dim * 2 * kCellBlock > kBlockBytes ? kBlockBytes / (head_dim * 2) : kCellBlock;
  for (int64_t j0 = 0; j0 < n_cells; j0 += block) {
    const int64_t n = n_cells - j0 < block ? n_cells - j0 : block;
    score_block(head_dim, n_q, q, q_stride, n, F16Keys{k_rows + j0}, scores + j0, scores_stride);
  }
}
void attn_softmax_f16(int64_t n, float scale, float* scores, uint16_t* probs) {
  const __m256 vscale = _mm256_set1_ps(scale);
  const __m256 minus_inf = _mm256_set1_ps(-__builtin_inff());
  __m256 vmax = minus_inf;
  for (int64_t j = 0; j < n; j += 8) {
    const __m256i mask = tail_mask(n - j);
    const __m256 s = _mm256_mul_ps(_mm256_maskload_ps(scores + j, mask), vscale);
    _mm256_maskstore_ps(scores + j, mask, s);
    vmax = _mm256_max_ps(vmax, _mm256_blendv_ps(minus_inf, s, _mm256_castsi256_ps(mask)));
  }
  __m128 m4 = _mm_max_ps(_mm256_castps256_ps128(vmax), _mm256_extractf128_ps(vmax, 1));
  m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
  m4 = _mm_max_ss(m4, _mm_movehdup_ps(m4));
  const __m256 max = _mm256_broadcastss_ps(m4);
  // Lanes past n are -inf, whose exp is 0: adding it leaves a lane's double sum as it was.
  __m256d sum_lo = _mm256_setzero_pd(), sum_hi = _mm256_setzero_pd();
  for (int64_t j = 0; j < n; j += 8) {
    const __m256i mask = tail_mask(n - j);
    const __m256 s = _mm256_blendv_ps(minus_inf, _mm256_maskload_ps(scores + j, mask), _mm256_castsi256_ps(mask));
    const __m256 e = exp_ps(_mm256_sub_ps(s, max));
    _mm256_maskstore_ps(scores + j, mask, e);
    sum_lo = _mm256_add_pd(sum_lo, _mm256_cvtps_pd(_mm256_castps256_ps128(e)));
    sum_hi = _mm256_add_pd(sum_hi, _mm256_cvtps_pd(_mm256_extractf128_ps(e, 1)));
  }
  // ((l0+l4)+(l2+l6))+((l1+l5)+(l3+l7)), as the reference.
  const __m256d pairs = _mm256_add_pd(sum_lo, sum_hi);
  const __m128d halves = _mm_add_pd(_mm256_castpd256_pd128(pairs), _mm256_extractf128_pd(pairs, 1));
  const double sum = _mm_cvtsd_f64(_mm_add_sd(halves, _mm_unpackhi_pd(halves, halves)));
  const __m256 inv = _mm256_set1_ps(static_cast<float>(1.0 / sum));
  int64_t j = 0;
  for (; j + 8 <= n; j += 8) {
    const __m128i h = _mm256_cvtps_ph(_mm256_mul_ps(_mm256_loadu_ps(scores + j), inv), _MM_FROUND_TO_NEAREST_INT);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(probs + j), h);
  }
  for (; j < n; ++j) probs[j] = _cvtss_sh(scores[j] * _mm256_cvtss_f32(inv), _MM_FROUND_TO_NEAREST_INT);
}

void attn_values_f16(int64_t head_dim, int n_q, const uint16_t* p, int64_t p_stride, int64_t n_cells,
                     const uint16_t* const* v_rows, float* out, int64_t out_stride) {
  alignas(32) float pf[kValueRows * kCellBlock];
  alignas(32) float vf[kCellBlock * 32];
  for (int r0 = 0; r0 < n_q; r0 += kValueRows) {
    const int rows = n_q - r0 < kValueRows ? n_q - r0 : kValueRows;
    for (int64_t j0 = 0; j0 < n_cells; j0 += kCellBlock) {
      const int64_t n = n_cells - j0 < kCellBlock ? n_cells - j0 : kCellBlock;
      for (int i = 0; i < rows; ++i) {
        const uint16_t* pi = p + (r0 + i) * p_stride + j0;
        float* dst = pf + i * kCellBlock;
        int64_t j = 0;
        for (; j + 8 <= n; j += 8) _mm256_store_ps(dst + j, load_f16x8(pi + j));
        for (; j < n; ++j) dst[j] = _cvtsh_ss(pi[j]);
      }
      const uint16_t* const* v = v_rows + j0;
      float* o = out + r0 * out_stride;
      for (int64_t d0 = 0; d0 < head_dim; d0 += 32) {
        const int64_t width = head_dim - d0 < 32 ? head_dim - d0 : 32;
        if (rows < kConvertedValueRows) {
          value_chunk(width, rows, d0, n, pf, F16Values{v}, o, out_stride);
          continue;
        }
        for (int64_t j = 0; j < n; ++j) {
          for (int64_t d = 0; d < width; d += 8) _mm256_store_ps(vf + j * 32 + d, load_f16x8(v[j] + d0 + d));
        }
        value_chunk(width, rows, d0, n, pf, FloatValues{vf}, o, out_stride);
      }
    }
  }
}

}  // namespace cellserve::engine::kernels::x86
