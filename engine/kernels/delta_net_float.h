// The Gated DeltaNet recurrence and its chunked form (reference/delta_net.h states the math) in
// single precision, written once over three vector primitives that each SIMD folder supplies:
//   Ops::dot(a, b, n)      -> float, sum of a[i] * b[i]
//   Ops::axpy(y, c, x, n)  y[i] += c * x[i]
//   Ops::scale(y, c, n)    y[i] *= c
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
      Ops::scale(row, decay, dk);
      const float u = beta * (v[j] - Ops::dot(row, k, dk));
      Ops::axpy(row, u, k, dk);
      out[j] = Ops::dot(row, q, dk) * a.scale;
    }
  }
}

// One chunk of n tokens from t0 (the algorithm of reference::delta_net_chunk, in float and with
// the products reordered so each state row is read once per chunk for all tokens).
template <typename Ops>
void delta_net_chunk_float(const reference::DeltaNetHeadArgs& a, int64_t t0, int64_t n, float* state) {
  const int64_t dk = a.d_k;
  const int64_t dv = a.d_v;
  auto q = [&](int64_t t) { return a.q + (t0 + t) * a.q_stride; };
  auto k = [&](int64_t t) { return a.k + (t0 + t) * a.k_stride; };
  auto v = [&](int64_t t) { return a.v + (t0 + t) * a.v_stride; };
  auto beta = [&](int64_t t) { return a.beta[(t0 + t) * a.beta_stride]; };
  thread_local Scratch<double> g_scratch;
  thread_local Scratch<float> f_scratch;
  const auto nn = static_cast<size_t>(n * n);
  const auto ndv = static_cast<size_t>(n * dv);
  double* G = g_scratch.get(static_cast<size_t>(n));
  float* E = f_scratch.get(static_cast<size_t>(n) + 3 * nn + 3 * ndv);
  float* D = E + n;
  float* KKD = D + nn;
  float* QKD = KKD + nn;
  float* Sk = QKD + nn;
  float* Sq = Sk + ndv;
  float* U = Sq + ndv;

  // Cumulative log decay (double: the sum of up to n terms), its exponentials and the pairwise
  // decays D[t][s] = exp(G_t - G_s) <= 1 for s <= t.
  double acc = 0.0;
  for (int64_t t = 0; t < n; ++t) {
    acc += static_cast<double>(a.g[(t0 + t) * a.g_stride]);
    G[static_cast<size_t>(t)] = acc;
    E[static_cast<size_t>(t)] = static_cast<float>(__builtin_exp(acc));
  }
  for (int64_t t = 0; t < n; ++t) {
    for (int64_t s = 0; s <= t; ++s) {
      const auto ts = static_cast<size_t>(t * n + s);
      D[ts] = static_cast<float>(__builtin_exp(G[static_cast<size_t>(t)] - G[static_cast<size_t>(s)]));
      KKD[ts] = D[ts] * Ops::dot(k(t), k(s), dk);
      QKD[ts] = D[ts] * Ops::dot(q(t), k(s), dk);
    }
  }
  // S0 k_t and S0 q_t for every token, one state row at a time.
  for (int64_t j = 0; j < dv; ++j) {
    const float* row = state + j * dk;
    for (int64_t t = 0; t < n; ++t) {
      Sk[static_cast<size_t>(t * dv + j)] = Ops::dot(row, k(t), dk);
      Sq[static_cast<size_t>(t * dv + j)] = Ops::dot(row, q(t), dk);
    }
  }
  // Corrections: (I + A) U = beta ⊙ (V - exp(G) ⊙ K S0), forward substitution.
  for (int64_t t = 0; t < n; ++t) {
    float* ut = U + t * dv;
    const float et = E[static_cast<size_t>(t)];
    const float bt = beta(t);
    for (int64_t j = 0; j < dv; ++j) ut[j] = bt * (v(t)[j] - et * Sk[static_cast<size_t>(t * dv + j)]);
    for (int64_t s = 0; s < t; ++s) Ops::axpy(ut, -bt * KKD[static_cast<size_t>(t * n + s)], U + s * dv, dv);
  }
  // Outputs: o_t = scale (exp(G_t) S0ᵀ q_t + Σ_{s<=t} QKD[t][s] u_s).
  for (int64_t t = 0; t < n; ++t) {
    float* ot = a.out + (t0 + t) * a.out_stride;
    const float et = E[static_cast<size_t>(t)];
    for (int64_t j = 0; j < dv; ++j) ot[j] = et * Sq[static_cast<size_t>(t * dv + j)];
    for (int64_t s = 0; s <= t; ++s) Ops::axpy(ot, QKD[static_cast<size_t>(t * n + s)], U + s * dv, dv);
    Ops::scale(ot, a.scale, dv);
  }
  // State: S = exp(G_last) S0 + Σ_t D[last][t] k_t u_tᵀ, row by row.
  const int64_t last = n - 1;
  for (int64_t j = 0; j < dv; ++j) {
    float* row = state + j * dk;
    Ops::scale(row, E[static_cast<size_t>(last)], dk);
    for (int64_t t = 0; t < n; ++t) {
      Ops::axpy(row, D[static_cast<size_t>(last * n + t)] * U[static_cast<size_t>(t * dv + j)], k(t), dk);
    }
  }
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
