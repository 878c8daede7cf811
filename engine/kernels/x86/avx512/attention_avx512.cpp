// Attention scores and weighted sums of values over an F16 KV cache with 512-bit registers
// (AVX-512F/VL/BW/DQ), for the avx512 and avx512-vnni tables. The arithmetic per score and per output dimension
// is the AVX2 kernels' and the reference's (kernel_table.h), so results are equal bit for bit:
//   - scores: a 512-bit accumulator holds two keys (cells c and c + 1) in its halves, each half
//     the 8-lane sum over the head that AVX2 keeps in one register, reduced by the same tree;
//   - values: each dimension's fma chain runs over the cells in order; 16 dimensions a register,
//     and the dimensions past a multiple of 16 are masked off.
// The tiles are as large as the 32 registers allow: scores 4 query rows x 8 keys, values 6 rows x
// 64 dimensions. Cells come in 64-cell blocks (L1), every row over a block before the next.
#include <immintrin.h>

#include "engine/kernels/x86/avx2/lanes.h"
#include "engine/kernels/x86/avx512/avx512_kernels.h"
#include "engine/kernels/x86/avx512/lanes512.h"

namespace cellserve::engine::kernels::x86::avx512 {
namespace {

constexpr int64_t kCellBlock = 64;
constexpr int kScoreRows = 4;
constexpr int kValueRows = 16;  // rows whose probabilities one values block converts at a time
constexpr int kValueTileRows = 6;

// Eight F16 dimensions of two keys as floats: key a in the low half, key b in the high half.
inline __m512 load_key_pair(const uint16_t* a, const uint16_t* b) {
  const __m128i lo = _mm_loadu_si128(reinterpret_cast<const __m128i*>(a));
  const __m128i hi = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b));
  return cvtph_ps(_mm256_inserti128_si256(_mm256_castsi128_si256(lo), hi, 1));
}

// Scores of NQ rows against NP key pairs (cells k[0..2 NP)); when `odd`, the last pair's second
// key is a repeat of its first and its score is not stored.
template <int NQ, int NP>
void score_tile(int64_t head_dim, const float* q, int64_t q_stride, const uint16_t* const* k, bool odd, float* scores,
                int64_t scores_stride) {
  __m512 acc[NQ][NP];
#pragma GCC unroll 4
  for (int i = 0; i < NQ; ++i) {
#pragma GCC unroll 4
    for (int c = 0; c < NP; ++c) acc[i][c] = _mm512_setzero_ps();
  }
  const uint16_t* second[NP];
#pragma GCC unroll 4
  for (int c = 0; c < NP; ++c) second[c] = odd && c == NP - 1 ? k[2 * c] : k[2 * c + 1];
  for (int64_t d = 0; d < head_dim; d += 8) {
    __m512 kv[NP];
#pragma GCC unroll 4
    for (int c = 0; c < NP; ++c) kv[c] = load_key_pair(k[2 * c] + d, second[c] + d);
#pragma GCC unroll 4
    for (int i = 0; i < NQ; ++i) {
      const __m512 qv = _mm512_maskz_broadcast_f32x8(kAll16, _mm256_loadu_ps(q + i * q_stride + d));
#pragma GCC unroll 4
      for (int c = 0; c < NP; ++c) acc[i][c] = _mm512_fmadd_ps(kv[c], qv, acc[i][c]);
    }
  }
#pragma GCC unroll 4
  for (int i = 0; i < NQ; ++i) {
#pragma GCC unroll 4
    for (int c = 0; c < NP; ++c) {
      scores[i * scores_stride + 2 * c] = horizontal_sum(low_half(acc[i][c]));
      if (!(odd && c == NP - 1)) {
        scores[i * scores_stride + 2 * c + 1] = horizontal_sum(high_half(acc[i][c]));
      }
    }
  }
}

template <int NQ>
void score_rows(int64_t head_dim, const float* q, int64_t q_stride, int64_t n_cells, const uint16_t* const* k,
                float* scores, int64_t scores_stride) {
  int64_t j = 0;
  for (; j + 8 <= n_cells; j += 8) score_tile<NQ, 4>(head_dim, q, q_stride, k + j, false, scores + j, scores_stride);
  for (; j + 2 <= n_cells; j += 2) score_tile<NQ, 1>(head_dim, q, q_stride, k + j, false, scores + j, scores_stride);
  if (j < n_cells) score_tile<NQ, 1>(head_dim, q, q_stride, k + j, true, scores + j, scores_stride);
}

// Runs fn.operator()<R>() for R = n in [1, Max); nothing for n = 0. Row counts are template
// parameters so each tile keeps its accumulators in registers.
template <int Max, typename Fn>
void with_rows(int n, Fn&& fn) {
  if constexpr (Max > 1) {
    if (n == Max - 1) return fn.template operator()<Max - 1>();
    with_rows<Max - 1>(n, fn);
  }
}

// out rows [0, NQ) at dimensions [d0, d0 + 16 U) (when Partial, lanes 8-15 of the last register
// left alone) += the cells [0, n) of a block; p[i * kCellBlock + j] is row i's probability of
// cell j, already a float. The values are read by plain loads but for a partial last register:
// masked loads in this loop were a large cost on Zen 5 (as in the BF16 dot products).
template <int NQ, int U, bool Partial>
void value_tile(int64_t d0, int64_t n, const float* p, const uint16_t* const* v, float* out, int64_t out_stride) {
  constexpr auto kLastMask = static_cast<__mmask16>(Partial ? 0x00FF : 0xFFFF);
  __mmask16 mask[U];
#pragma GCC unroll 4
  for (int u = 0; u < U; ++u) mask[u] = u == U - 1 ? kLastMask : static_cast<__mmask16>(0xFFFF);
  __m512 acc[NQ][U];
#pragma GCC unroll 8
  for (int i = 0; i < NQ; ++i) {
#pragma GCC unroll 4
    for (int u = 0; u < U; ++u) acc[i][u] = _mm512_maskz_loadu_ps(mask[u], out + i * out_stride + d0 + 16 * u);
  }
  for (int64_t j = 0; j < n; ++j) {
    // 6 x 4 accumulators, 6 probabilities and one value chunk: 31 of the 32 registers.
    __m512 pj[NQ];
#pragma GCC unroll 8
    for (int i = 0; i < NQ; ++i) pj[i] = _mm512_set1_ps(p[i * kCellBlock + j]);
#pragma GCC unroll 4
    for (int u = 0; u < U; ++u) {
      const uint16_t* vu = v[j] + d0 + 16 * u;
      const __m512 vv = cvtph_ps(Partial && u == U - 1 ? _mm256_maskz_loadu_epi16(kLastMask, vu)
                                                       : _mm256_loadu_si256(reinterpret_cast<const __m256i*>(vu)));
#pragma GCC unroll 8
      for (int i = 0; i < NQ; ++i) acc[i][u] = _mm512_fmadd_ps(pj[i], vv, acc[i][u]);
    }
  }
#pragma GCC unroll 8
  for (int i = 0; i < NQ; ++i) {
#pragma GCC unroll 4
    for (int u = 0; u < U; ++u) _mm512_mask_storeu_ps(out + i * out_stride + d0 + 16 * u, mask[u], acc[i][u]);
  }
}

// The last 8 to 56 dimensions: U registers, the last one half used when Partial.
template <int NQ, bool Partial>
void value_tail(int64_t d, int units, int64_t n, const float* p, const uint16_t* const* v, float* out,
                int64_t out_stride) {
  switch (units) {
    case 4:
      return value_tile<NQ, 4, Partial>(d, n, p, v, out, out_stride);
    case 3:
      return value_tile<NQ, 3, Partial>(d, n, p, v, out, out_stride);
    case 2:
      return value_tile<NQ, 2, Partial>(d, n, p, v, out, out_stride);
    default:
      return value_tile<NQ, 1, Partial>(d, n, p, v, out, out_stride);
  }
}

template <int NQ>
void value_rows(int64_t head_dim, int64_t n, const float* p, const uint16_t* const* v, float* out, int64_t out_stride) {
  int64_t d = 0;
  for (; d + 64 <= head_dim; d += 64) value_tile<NQ, 4, false>(d, n, p, v, out, out_stride);
  const int64_t left = head_dim - d;  // a multiple of 8 below 64
  if (left == 0) return;
  const auto units = static_cast<int>((left + 15) / 16);
  if (left % 16 == 0) {
    value_tail<NQ, false>(d, units, n, p, v, out, out_stride);
  } else {
    value_tail<NQ, true>(d, units, n, p, v, out, out_stride);
  }
}

}  // namespace

void attn_scores_f16(int64_t head_dim, int n_q, const float* q, int64_t q_stride, int64_t n_cells,
                     const uint16_t* const* k_rows, float* scores, int64_t scores_stride) {
  for (int64_t j0 = 0; j0 < n_cells; j0 += kCellBlock) {
    const int64_t n = n_cells - j0 < kCellBlock ? n_cells - j0 : kCellBlock;
    int i = 0;
    for (; i + kScoreRows <= n_q; i += kScoreRows) {
      score_rows<kScoreRows>(head_dim, q + i * q_stride, q_stride, n, k_rows + j0, scores + i * scores_stride + j0,
                             scores_stride);
    }
    with_rows<kScoreRows>(n_q - i, [&]<int R>() {
      score_rows<R>(head_dim, q + i * q_stride, q_stride, n, k_rows + j0, scores + i * scores_stride + j0,
                    scores_stride);
    });
  }
}

void attn_values_f16(int64_t head_dim, int n_q, const uint16_t* p, int64_t p_stride, int64_t n_cells,
                     const uint16_t* const* v_rows, float* out, int64_t out_stride) {
  alignas(64) float pf[kValueRows * kCellBlock];
  for (int r0 = 0; r0 < n_q; r0 += kValueRows) {
    const int rows = n_q - r0 < kValueRows ? n_q - r0 : kValueRows;
    for (int64_t j0 = 0; j0 < n_cells; j0 += kCellBlock) {
      const int64_t n = n_cells - j0 < kCellBlock ? n_cells - j0 : kCellBlock;
      for (int i = 0; i < rows; ++i) {
        const uint16_t* pi = p + (r0 + i) * p_stride + j0;
        float* dst = pf + i * kCellBlock;
        int64_t j = 0;
        for (; j + 16 <= n; j += 16) {
          _mm512_store_ps(dst + j, cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(pi + j))));
        }
        for (; j < n; ++j) dst[j] = _cvtsh_ss(pi[j]);
      }
      const uint16_t* const* v = v_rows + j0;
      float* o = out + r0 * out_stride;
      int i = 0;
      for (; i + kValueTileRows <= rows; i += kValueTileRows) {
        value_rows<kValueTileRows>(head_dim, n, pf + i * kCellBlock, v, o + i * out_stride, out_stride);
      }
      with_rows<kValueTileRows>(rows - i, [&]<int R>() {
        value_rows<R>(head_dim, n, pf + i * kCellBlock, v, o + i * out_stride, out_stride);
      });
    }
  }
}

}  // namespace cellserve::engine::kernels::x86::avx512
