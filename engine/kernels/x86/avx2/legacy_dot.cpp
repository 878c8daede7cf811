// AVX2 dot products of the blocks-of-32 weight types (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, IQ4_NL) with
// Q8_0 / Q8_1 activations, and their register tiles. All are instances of block_dot_tile.
#include "engine/kernels/x86/avx2/legacy_block_dot.h"
#include "engine/kernels/x86/avx2/legacy_kernels.h"

namespace cellserve::engine::kernels::x86 {
namespace {

template <typename W>
float vec_dot(int64_t n, const void* w, const void* a) {
  float y;
  block_dot_tile<W, 1, 1>(n, static_cast<const uint8_t*>(w), 0, static_cast<const uint8_t*>(a), 0, &y, 1);
  return y;
}

template <typename W, int R, int C>
void tile_dot(int64_t n, const void* w, size_t w_stride, const void* a, size_t a_stride, float* y, int64_t y_stride) {
  block_dot_tile<W, R, C>(n, static_cast<const uint8_t*>(w), w_stride, static_cast<const uint8_t*>(a), a_stride, y,
                          y_stride);
}

}  // namespace

float vec_dot_q4_0(int64_t n, const void* w, const void* a) { return vec_dot<Q4_0Weights>(n, w, a); }
float vec_dot_q4_1(int64_t n, const void* w, const void* a) { return vec_dot<Q4_1Weights>(n, w, a); }
float vec_dot_q5_0(int64_t n, const void* w, const void* a) { return vec_dot<Q5_0Weights>(n, w, a); }
float vec_dot_q5_1(int64_t n, const void* w, const void* a) { return vec_dot<Q5_1Weights>(n, w, a); }
float vec_dot_q8_0(int64_t n, const void* w, const void* a) { return vec_dot<Q8_0Weights>(n, w, a); }
float vec_dot_iq4_nl(int64_t n, const void* w, const void* a) { return vec_dot<IQ4_NLWeights>(n, w, a); }

void tile_dot_q4_0(int64_t n, const void* w, size_t ws, const void* a, size_t as, float* y, int64_t ys) {
  tile_dot<Q4_0Weights, kTileQ4Rows, kTileQ4Cols>(n, w, ws, a, as, y, ys);
}
void tile_dot_q4_1(int64_t n, const void* w, size_t ws, const void* a, size_t as, float* y, int64_t ys) {
  tile_dot<Q4_1Weights, kTileQ4Rows, kTileQ4Cols>(n, w, ws, a, as, y, ys);
}
void tile_dot_q5_0(int64_t n, const void* w, size_t ws, const void* a, size_t as, float* y, int64_t ys) {
  tile_dot<Q5_0Weights, kTileQ4Rows, kTileQ4Cols>(n, w, ws, a, as, y, ys);
}
void tile_dot_q5_1(int64_t n, const void* w, size_t ws, const void* a, size_t as, float* y, int64_t ys) {
  tile_dot<Q5_1Weights, kTileQ4Rows, kTileQ4Cols>(n, w, ws, a, as, y, ys);
}
void tile_dot_q8_0(int64_t n, const void* w, size_t ws, const void* a, size_t as, float* y, int64_t ys) {
  tile_dot<Q8_0Weights, kTileQ8Rows, kTileQ8Cols>(n, w, ws, a, as, y, ys);
}
void tile_dot_iq4_nl(int64_t n, const void* w, size_t ws, const void* a, size_t as, float* y, int64_t ys) {
  tile_dot<IQ4_NLWeights, kTileQ4Rows, kTileQ4Cols>(n, w, ws, a, as, y, ys);
}

}  // namespace cellserve::engine::kernels::x86
