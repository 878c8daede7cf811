// The Gated DeltaNet recurrence and its chunked form (reference/delta_net.h states the math) in
// single precision, written once over vector primitives that each SIMD folder supplies:
//   Ops::dot(a, b, n)      -> float, sum of a[i] * b[i]
//   Ops::axpy(y, c, x, n)  y[i] += c * x[i]
//   Ops::scale(y, c, n)    y[i] *= c
//   Ops::scale_then_dot(y, c, b, n), Ops::axpy_then_dot(y, c, x, b, n)
//                          the update, then dot(y, b, n), in one pass (the recurrence's row)
//   Ops::dot_tile<R, C>    an R x C tile of dot products (R <= Ops::kTileRows, C <= Ops::kTileCols)
//   Ops::rows_axpy<R>      R rows (R <= 3), each plus a weighted sum of the same rows x_m
// The reference accumulates in double; these follow ggml-cpu, which works in float, and agree
// with the reference to float rounding (tested). Included by one file per instruction set, so
// everything here has internal linkage, and (the compile-flag rule of docs/kernels.md) it uses no
// inline library function: scratch memory comes from malloc, exponentials from the C library.
#pragma once

#include <cstdint>
#include <cstdlib>

#include "engine/kernels/reference/delta_net.h"

namespace cellserve::engine::kernels {
namespace {

// A per-thread scratch array that grows as needed and is freed when its thread ends.
template <typename T>
class Scratch {
 public:
  Scratch() = default;
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  ~Scratch() { std::free(data_); }
  T* get(size_t n) {
    if (n > capacity_) {
      void* grown = std::realloc(data_, n * sizeof(T));
      if (grown == nullptr) std::abort();  // as operator new would throw: no way to continue
      data_ = static_cast<T*>(grown);
      capacity_ = n;
    }
    return data_;
  }

 private:
  T* data_ = nullptr;
  size_t capacity_ = 0;
};

template <typename Ops>
void delta_net_recurrent_float(const reference::DeltaNetHeadArgs& a, float* state) {
  const int64_t dk = a.d_k;
  const int64_t dv = a.d_v;
  for (int64_t t = 0; t < a.n_tokens; ++t) {
    const float* q = a.q + t * a.q_stride;
    const float* k = a.k + t * a.k_stride;
    const float* v = a.v + t * a.v_stride;
    const float decay = __builtin_expf(a.g[t * a.g_stride]);
    const float beta = a.beta[t * a.beta_stride];
    float* out = a.out + t * a.out_stride;
    // Row j of the state is independent of the others: decay, correct, update, read out.
    for (int64_t j = 0; j < dv; ++j) {
      float* row = state + j * dk;
      const float u = beta * (v[j] - Ops::scale_then_dot(row, decay, k, dk));
      out[j] = Ops::axpy_then_dot(row, u, k, q, dk) * a.scale;
    }
  }
}

// Runs fn.template operator()<R>() for R = n in [1, Max]: tile sizes are template parameters so
// that their accumulators stay in registers.
template <int Max, typename Fn>
void with_count(int64_t n, Fn&& fn) {
  if constexpr (Max >= 1) {
    if (n == Max) return fn.template operator()<Max>();
    with_count<Max - 1>(n, fn);
  }
}

// out[i * out_row + j * out_col] = dot(a_i, b_j) for i < na, j < nb, in tiles of up to
// Ops::kTileRows x Ops::kTileCols.
template <typename Ops>
void dot_block(const float* a, int64_t a_stride, int64_t na, const float* b, int64_t b_stride, int64_t nb, int64_t n,
               float* out, int64_t out_row, int64_t out_col) {
  constexpr int kR = Ops::kTileRows;
  constexpr int kC = Ops::kTileCols;
  for (int64_t i = 0; i < na; i += kR) {
    for (int64_t j = 0; j < nb; j += kC) {
      const float* ai = a + i * a_stride;
      const float* bj = b + j * b_stride;
      float* o = out + i * out_row + j * out_col;
      with_count<kR>(na - i < kR ? na - i : kR, [&]<int R>() {
        with_count<kC>(nb - j < kC ? nb - j : kC, [&]<int C>() {
          Ops::template dot_tile<R, C>(ai, a_stride, bj, b_stride, n, o, out_row, out_col);
        });
      });
    }
  }
}

// y_i += sum over m < count of c[i * c_row + m * c_m] x_m for rows i < ny, three rows at a time.
template <typename Ops>
void rows_axpy_block(float* y, int64_t y_stride, int64_t ny, const float* c, int64_t c_row, int64_t c_m, const float* x,
                     int64_t x_stride, int64_t count, int64_t n) {
  for (int64_t i = 0; i < ny; i += 3) {
    with_count<3>(ny - i < 3 ? ny - i : 3, [&]<int R>() {
      Ops::template rows_axpy<R>(y + i * y_stride, y_stride, c + i * c_row, c_row, c_m, x, x_stride, count, n);
    });
  }
}

// One chunk of n tokens from t0 (the algorithm of reference::delta_net_chunk, in float). Every
// product is a small matrix product: the dot products (K Kᵀ, Q Kᵀ, S0 K, S0 Q) go by register
// tiles that load each row once per tile, and the sums of rows (the corrections, the outputs, the
// new state) keep 32 dimensions of up to three rows in registers over all their terms.
template <typename Ops>
void delta_net_chunk_float(const reference::DeltaNetHeadArgs& a, int64_t t0, int64_t n, float* state) {
  const int64_t dk = a.d_k;
  const int64_t dv = a.d_v;
  const float* q0 = a.q + t0 * a.q_stride;
  const float* k0 = a.k + t0 * a.k_stride;
  auto v = [&](int64_t t) { return a.v + (t0 + t) * a.v_stride; };
  auto beta = [&](int64_t t) { return a.beta[(t0 + t) * a.beta_stride]; };
  thread_local Scratch<double> g_scratch;
  thread_local Scratch<float> f_scratch;
  const auto nn = static_cast<size_t>(n * n);
  const auto ndv = static_cast<size_t>(n * dv);
  double* G = g_scratch.get(static_cast<size_t>(n));
  float* E = f_scratch.get(2 * static_cast<size_t>(n) + 3 * nn + 4 * ndv);
  float* coef = E + n;  // one row of coefficients
  float* KKD = coef + n;
  float* QKD = KKD + nn;
  float* D = QKD + nn;
  float* Sk = D + nn;
  float* Sq = Sk + ndv;
  float* U = Sq + ndv;
  float* W = U + ndv;

  // Cumulative log decay (double: the sum of up to n terms), its exponentials and the pairwise
  // decays D[t][s] = exp(G_t - G_s) <= 1 for s <= t (0 above the diagonal).
  double acc = 0.0;
  for (int64_t t = 0; t < n; ++t) {
    acc += static_cast<double>(a.g[(t0 + t) * a.g_stride]);
    G[static_cast<size_t>(t)] = acc;
    E[static_cast<size_t>(t)] = static_cast<float>(__builtin_exp(acc));
  }
  dot_block<Ops>(k0, a.k_stride, n, k0, a.k_stride, n, dk, KKD, n, 1);
  dot_block<Ops>(q0, a.q_stride, n, k0, a.k_stride, n, dk, QKD, n, 1);
  for (int64_t t = 0; t < n; ++t) {
    for (int64_t s = 0; s < n; ++s) {
      const auto ts = static_cast<size_t>(t * n + s);
      D[ts] = s <= t ? static_cast<float>(__builtin_exp(G[static_cast<size_t>(t)] - G[static_cast<size_t>(s)])) : 0.0f;
      KKD[ts] *= D[ts];
      QKD[ts] *= D[ts];
    }
  }
  // S0 k_t and S0 q_t for every token: Sk[t * dv + j] = dot(state row j, k_t).
  dot_block<Ops>(state, dk, dv, k0, a.k_stride, n, dk, Sk, 1, dv);
  dot_block<Ops>(state, dk, dv, q0, a.q_stride, n, dk, Sq, 1, dv);
  // Corrections: (I + A) U = beta ⊙ (V - exp(G) ⊙ K S0), forward substitution.
  for (int64_t t = 0; t < n; ++t) {
    float* ut = U + t * dv;
    const float et = E[static_cast<size_t>(t)];
    const float bt = beta(t);
    for (int64_t j = 0; j < dv; ++j) ut[j] = bt * (v(t)[j] - et * Sk[static_cast<size_t>(t * dv + j)]);
    for (int64_t s = 0; s < t; ++s) coef[s] = -bt * KKD[static_cast<size_t>(t * n + s)];
    rows_axpy_block<Ops>(ut, dv, 1, coef, 0, 1, U, dv, t, dv);
  }
  // Outputs: o_t = scale (exp(G_t) S0ᵀ q_t + Σ_{s<=t} QKD[t][s] u_s); QKD is 0 past the diagonal.
  for (int64_t t = 0; t < n; ++t) {
    float* ot = a.out + (t0 + t) * a.out_stride;
    const float et = E[static_cast<size_t>(t)];
    for (int64_t j = 0; j < dv; ++j) ot[j] = et * Sq[static_cast<size_t>(t * dv + j)];
  }
  for (int64_t t = 0; t < n; t += 3) {
    const int64_t rows = n - t < 3 ? n - t : 3;
    rows_axpy_block<Ops>(a.out + (t0 + t) * a.out_stride, a.out_stride, rows, QKD + t * n, n, 1, U, dv, t + rows, dv);
  }
  for (int64_t t = 0; t < n; ++t) Ops::scale(a.out + (t0 + t) * a.out_stride, a.scale, dv);
  // State: S = exp(G_last) S0 + Σ_t D[last][t] k_t u_tᵀ; row j's coefficients W[t][j].
  const int64_t last = n - 1;
  for (int64_t t = 0; t < n; ++t) {
    const float dt = D[static_cast<size_t>(last * n + t)];
    for (int64_t j = 0; j < dv; ++j) W[t * dv + j] = dt * U[t * dv + j];
  }
  for (int64_t j = 0; j < dv; ++j) Ops::scale(state + j * dk, E[static_cast<size_t>(last)], dk);
  rows_axpy_block<Ops>(state, dk, dv, W, 1, dv, k0, a.k_stride, n, dk);
}

template <typename Ops>
void delta_net_chunked_float(const reference::DeltaNetHeadArgs& a, float* state, int64_t chunk_size) {
  for (int64_t t0 = 0; t0 < a.n_tokens; t0 += chunk_size) {
    const int64_t left = a.n_tokens - t0;
    delta_net_chunk_float<Ops>(a, t0, left < chunk_size ? left : chunk_size, state);
  }
}

}  // namespace
}  // namespace cellserve::engine::kernels
