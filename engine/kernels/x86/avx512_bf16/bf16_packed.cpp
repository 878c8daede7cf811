// Packed BF16 dot products with vdpbf16ps (layout and arithmetic: reference/packed_bf16.cpp).
// A 512-bit load is one quad of columns of the group's 8 rows; a 64-bit broadcast of a token's
// four activations meets it, and lane 2r / 2r + 1 accumulate row r. There are no horizontal sums:
// the row-major tile (bf16_dot.cpp) spent about a tenth of its time summing its 24 accumulators at
// the end of each tile. Per lane the operations and their order are the reference's, so results
// equal it bit for bit whatever the number of tokens or groups per call.
#include <immintrin.h>

#include <cstring>

#include "engine/kernels/reference/reference_kernels.h"
#include "engine/kernels/x86/avx2/packed_common.h"
#include "engine/kernels/x86/avx512/lanes512.h"
#include "engine/kernels/x86/avx512_bf16/bf16_kernels.h"

namespace cellserve::engine::kernels::x86::bf16 {
namespace {

constexpr int64_t kQuadBytes = 64;  // one quad of columns of 8 rows

inline __m512bh load_quad(const uint8_t* p) { return reinterpret_cast<__m512bh>(_mm512_loadu_si512(p)); }

// A token's four activations at p, in every 64-bit lane.
inline __m512bh broadcast_quad(const uint8_t* p) {
  int64_t v;
  std::memcpy(&v, p, sizeof(v));
  return reinterpret_cast<__m512bh>(_mm512_set1_epi64(v));
}

// Row r's value from lanes 2r and 2r + 1 of both chains, as 8 floats.
inline __m256 row_sums(__m512 even, __m512 odd) {
  const __m512 s = _mm512_add_ps(even, odd);
  const __m512 t =
      _mm512_add_ps(s, __builtin_shufflevector(s, s, 1, 0, 3, 2, 5, 4, 7, 6, 9, 8, 11, 10, 13, 12, 15, 14));
  return __builtin_shufflevector(t, t, 0, 2, 4, 6, 8, 10, 12, 14);
}

// G groups (group_stride bytes apart) x C tokens: 2 x G x C accumulators. With G = 2 and C = 4,
// 16 independent chains cover the latency of vdpbf16ps on two pipes.
template <int G, int C>
void packed_bf16(int64_t n, const uint8_t* w, int64_t group_stride, const uint8_t* a, size_t a_stride, float* y,
                 int64_t y_stride) {
  __m512 even[G][C];
  __m512 odd[G][C];
#pragma GCC unroll 4
  for (int g = 0; g < G; ++g) {
#pragma GCC unroll 4
    for (int c = 0; c < C; ++c) even[g][c] = odd[g][c] = _mm512_setzero_ps();
  }
  const int64_t quads = n / 4;
  int64_t q = 0;
  for (; q + 2 <= quads; q += 2) {
    __m512bh we[G];
    __m512bh wo[G];
#pragma GCC unroll 4
    for (int g = 0; g < G; ++g) {
      we[g] = load_quad(w + g * group_stride + q * kQuadBytes);
      wo[g] = load_quad(w + g * group_stride + (q + 1) * kQuadBytes);
    }
#pragma GCC unroll 4
    for (int c = 0; c < C; ++c) {
      const __m512bh xe = broadcast_quad(a + c * a_stride + q * 8);
      const __m512bh xo = broadcast_quad(a + c * a_stride + (q + 1) * 8);
#pragma GCC unroll 4
      for (int g = 0; g < G; ++g) {
        even[g][c] = _mm512_dpbf16_ps(even[g][c], we[g], xe);
        odd[g][c] = _mm512_dpbf16_ps(odd[g][c], wo[g], xo);
      }
    }
  }
  if (q < quads) {  // a last, even quad
#pragma GCC unroll 4
    for (int c = 0; c < C; ++c) {
      const __m512bh xe = broadcast_quad(a + c * a_stride + q * 8);
#pragma GCC unroll 4
      for (int g = 0; g < G; ++g)
        even[g][c] = _mm512_dpbf16_ps(even[g][c], load_quad(w + g * group_stride + q * kQuadBytes), xe);
    }
  }
#pragma GCC unroll 4
  for (int c = 0; c < C; ++c) {
#pragma GCC unroll 4
    for (int g = 0; g < G; ++g) _mm256_storeu_ps(y + c * y_stride + 8 * g, row_sums(even[g][c], odd[g][c]));
  }
}

}  // namespace

void packed_dot_bf16(int64_t n, const void* w, const void* a, size_t a_stride, const int32_t* /*a_sums*/,
                     int64_t /*sums_stride*/, int cols, float* y, int64_t y_stride) {
  const auto* wb = static_cast<const uint8_t*>(w);
  const auto* ab = static_cast<const uint8_t*>(a);
  with_cols(cols, [&]<int C>() { packed_bf16<1, C>(n, wb, 0, ab, a_stride, y, y_stride); });
}

void packed_dot_bf16_pair(int64_t n, const void* w, const void* a, size_t a_stride, const int32_t* /*a_sums*/,
                          int64_t /*sums_stride*/, int cols, float* y, int64_t y_stride) {
  const auto* wb = static_cast<const uint8_t*>(w);
  const auto* ab = static_cast<const uint8_t*>(a);
  const int64_t group_stride = n * reference::kPackedBf16Bytes;
  with_cols(cols, [&]<int C>() { packed_bf16<2, C>(n, wb, group_stride, ab, a_stride, y, y_stride); });
}

}  // namespace cellserve::engine::kernels::x86::bf16
