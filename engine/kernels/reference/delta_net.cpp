#include "engine/kernels/reference/delta_net.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

namespace cellserve::engine::kernels::reference {
namespace {

double dot(const float* a, const float* b, int64_t n) {
  double s = 0.0;
  for (int64_t i = 0; i < n; ++i) s += static_cast<double>(a[i]) * static_cast<double>(b[i]);
  return s;
}

// One chunk of `n` tokens starting at token `t0` (see delta_net_chunked).
void delta_net_chunk(const DeltaNetHeadArgs& a, int64_t t0, int64_t n, float* state) {
  const int64_t dk = a.d_k;
  const int64_t dv = a.d_v;
  auto q = [&](int64_t t) { return a.q + (t0 + t) * a.q_stride; };
  auto k = [&](int64_t t) { return a.k + (t0 + t) * a.k_stride; };
  auto v = [&](int64_t t) { return a.v + (t0 + t) * a.v_stride; };
  auto beta = [&](int64_t t) { return static_cast<double>(a.beta[(t0 + t) * a.beta_stride]); };

  // G[t]: cumulative log decay from the chunk start through token t (inclusive). Differences
  // G[t] - G[s] with s <= t are <= 0, so every exponential below is at most 1.
  std::vector<double> G(static_cast<size_t>(n));
  double acc = 0.0;
  for (int64_t t = 0; t < n; ++t) {
    acc += static_cast<double>(a.g[(t0 + t) * a.g_stride]);
    G[static_cast<size_t>(t)] = acc;
  }
  // D[t][s] = exp(G_t − G_s) for s <= t: the decay from token s to token t.
  std::vector<double> D(static_cast<size_t>(n * n), 0.0);
  for (int64_t t = 0; t < n; ++t) {
    for (int64_t s = 0; s <= t; ++s)
      D[static_cast<size_t>(t * n + s)] = std::exp(G[static_cast<size_t>(t)] - G[static_cast<size_t>(s)]);
  }

  // Decayed Gram matrices of the chunk (s <= t): KKD[t][s] = D[t][s] (k_t·k_s), QKD likewise.
  std::vector<double> KKD(static_cast<size_t>(n * n), 0.0);
  std::vector<double> QKD(static_cast<size_t>(n * n), 0.0);
  for (int64_t t = 0; t < n; ++t) {
    for (int64_t s = 0; s <= t; ++s) {
      const auto ts = static_cast<size_t>(t * n + s);
      KKD[ts] = D[ts] * dot(k(t), k(s), dk);
      QKD[ts] = D[ts] * dot(q(t), k(s), dk);
    }
  }

  // W = beta ⊙ (V − exp(G) ⊙ K S0): the corrections as if no token of the chunk came before.
  // Then (I + A) U = W with A[t][s] = beta_t KKD[t][s] for s < t, solved by forward
  // substitution: row t only needs the rows before it.
  std::vector<double> U(static_cast<size_t>(n * dv));
  for (int64_t t = 0; t < n; ++t) {
    const double et = std::exp(G[static_cast<size_t>(t)]);
    double* ut = U.data() + t * dv;
    for (int64_t j = 0; j < dv; ++j)
      ut[j] = beta(t) * (static_cast<double>(v(t)[j]) - et * dot(state + j * dk, k(t), dk));
    for (int64_t s = 0; s < t; ++s) {
      const double coef = beta(t) * KKD[static_cast<size_t>(t * n + s)];
      const double* us = U.data() + s * dv;
      for (int64_t j = 0; j < dv; ++j) ut[j] -= coef * us[j];
    }
  }

  // Outputs: o_t = scale · (exp(G_t) S0ᵀ q_t + Σ_{s<=t} QKD[t][s] u_s).
  std::vector<double> o(static_cast<size_t>(dv));
  for (int64_t t = 0; t < n; ++t) {
    const double et = std::exp(G[static_cast<size_t>(t)]);
    for (int64_t j = 0; j < dv; ++j) o[static_cast<size_t>(j)] = et * dot(state + j * dk, q(t), dk);
    for (int64_t s = 0; s <= t; ++s) {
      const double coef = QKD[static_cast<size_t>(t * n + s)];
      const double* us = U.data() + s * dv;
      for (int64_t j = 0; j < dv; ++j) o[static_cast<size_t>(j)] += coef * us[j];
    }
    float* ot = a.out + (t0 + t) * a.out_stride;
    for (int64_t j = 0; j < dv; ++j)
      ot[j] = static_cast<float>(o[static_cast<size_t>(j)] * static_cast<double>(a.scale));
  }

  // State after the chunk: S = exp(G_last) S0 + Σ_t exp(G_last − G_t) k_t u_tᵀ.
  const int64_t last = n - 1;
  const double e_last = std::exp(G[static_cast<size_t>(last)]);
  std::vector<double> row(static_cast<size_t>(dk));
  for (int64_t j = 0; j < dv; ++j) {
    float* sj = state + j * dk;
    for (int64_t i = 0; i < dk; ++i) row[static_cast<size_t>(i)] = e_last * static_cast<double>(sj[i]);
    for (int64_t t = 0; t < n; ++t) {
      const double coef = D[static_cast<size_t>(last * n + t)] * U[static_cast<size_t>(t * dv + j)];
      const float* kt = k(t);
      for (int64_t i = 0; i < dk; ++i) row[static_cast<size_t>(i)] += coef * static_cast<double>(kt[i]);
    }
    for (int64_t i = 0; i < dk; ++i) sj[i] = static_cast<float>(row[static_cast<size_t>(i)]);
  }
}

}  // namespace

void delta_net_recurrent(const DeltaNetHeadArgs& a, float* state) {
  const int64_t dk = a.d_k;
  const int64_t dv = a.d_v;
  std::vector<float> u(static_cast<size_t>(dv));
  for (int64_t t = 0; t < a.n_tokens; ++t) {
    const float* q = a.q + t * a.q_stride;
    const float* k = a.k + t * a.k_stride;
    const float* v = a.v + t * a.v_stride;
    const float decay = std::exp(a.g[t * a.g_stride]);
    const float beta = a.beta[t * a.beta_stride];
    float* out = a.out + t * a.out_stride;
    // Decay, then the correction from the decayed state, then the rank-1 update and read-out.
    for (int64_t e = 0; e < dk * dv; ++e) state[e] *= decay;
    for (int64_t j = 0; j < dv; ++j)
      u[static_cast<size_t>(j)] = beta * (v[j] - static_cast<float>(dot(state + j * dk, k, dk)));
    for (int64_t j = 0; j < dv; ++j) {
      float* row = state + j * dk;
      for (int64_t i = 0; i < dk; ++i) row[i] += k[i] * u[static_cast<size_t>(j)];
      out[j] = static_cast<float>(dot(row, q, dk)) * a.scale;
    }
  }
}

void delta_net_chunked(const DeltaNetHeadArgs& a, float* state, int64_t chunk_size) {
  for (int64_t t0 = 0; t0 < a.n_tokens; t0 += chunk_size) {
    const int64_t n = std::min(chunk_size, a.n_tokens - t0);
    delta_net_chunk(a, t0, n, state);
  }
}

void causal_conv1d_silu_channels(const float* x, int64_t x_stride, int64_t n_tokens, int64_t n_channels, int64_t c0,
                                 int64_t c1, const float* taps, int64_t kernel, const float* window, float* y) {
  const int64_t keep = kernel - 1;
  // Row r of the extended input: the window's rows first, then the new tokens.
  auto row = [&](int64_t r) { return r < keep ? window + r * n_channels : x + (r - keep) * x_stride; };
  for (int64_t t = 0; t < n_tokens; ++t) {
    float* yt = y + t * n_channels;
    for (int64_t c = c0; c < c1; ++c) {
      float sum = 0.0f;  // accumulated in float, kernel order, as ggml's ssm_conv
      for (int64_t j = 0; j < kernel; ++j) sum += row(t + j)[c] * taps[j * n_channels + c];
      yt[c] = sum / (1.0f + std::exp(-sum));
    }
  }
}

void causal_conv1d_advance_window(const float* x, int64_t x_stride, int64_t n_tokens, int64_t n_channels, int64_t c0,
                                  int64_t c1, int64_t kernel, float* window) {
  // The new window is the last `keep` rows of the extended input (the window's rows, then x's).
  // In place, without a temporary: decode runs this once a token in every recurrent layer. Row
  // r takes extended row r + n_tokens, which is later than r, so going up never reads a row
  // already overwritten.
  const int64_t keep = kernel - 1;
  if (keep <= 0 || c1 <= c0) return;
  const auto bytes = static_cast<size_t>(c1 - c0) * sizeof(float);
  for (int64_t r = 0; r < keep; ++r) {
    const int64_t from = r + n_tokens;
    const float* src = from < keep ? window + from * n_channels : x + (from - keep) * x_stride;
    std::memmove(window + r * n_channels + c0, src + c0, bytes);
  }
}

std::vector<float> conv_taps_by_tap(const float* w, int64_t n_channels, int64_t kernel) {
  std::vector<float> taps(static_cast<size_t>(n_channels * kernel));
  for (int64_t c = 0; c < n_channels; ++c) {
    for (int64_t j = 0; j < kernel; ++j) taps[static_cast<size_t>(j * n_channels + c)] = w[c * kernel + j];
  }
  return taps;
}

void causal_conv1d_silu(const float* x, int64_t x_stride, int64_t n_tokens, int64_t n_channels, const float* w,
                        int64_t kernel, float* window, float* y) {
  const std::vector<float> taps = conv_taps_by_tap(w, n_channels, kernel);
  causal_conv1d_silu_channels(x, x_stride, n_tokens, n_channels, 0, n_channels, taps.data(), kernel, window, y);
  causal_conv1d_advance_window(x, x_stride, n_tokens, n_channels, 0, n_channels, kernel, window);
}

void l2_norm(float* x, int64_t n_rows, int64_t n, float eps) {
  for (int64_t r = 0; r < n_rows; ++r) {
    float* xr = x + r * n;
    double sum = 0.0;
    for (int64_t i = 0; i < n; ++i) sum += static_cast<double>(xr[i] * xr[i]);
    const float scale = 1.0f / std::fmax(std::sqrt(static_cast<float>(sum)), eps);
    for (int64_t i = 0; i < n; ++i) xr[i] *= scale;
  }
}

}  // namespace cellserve::engine::kernels::reference
