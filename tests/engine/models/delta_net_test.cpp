// The Gated DeltaNet kernels: the chunked form equals the token-by-token recurrence (outputs and
// final state) for several chunk sizes and lengths that are not multiples of the chunk; the
// convolution window carries over between calls.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "engine/kernels/kernel_table.h"
#include "engine/kernels/reference/delta_net.h"

namespace cellserve::engine::kernels::reference {
namespace {

struct Inputs {
  int64_t n = 0, dk = 0, dv = 0;
  std::vector<float> q, k, v, g, beta, state;
};

Inputs random_inputs(int64_t n, int64_t dk, int64_t dv, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_real_distribution<float> unit(0.0f, 1.0f);
  Inputs in;
  in.n = n, in.dk = dk, in.dv = dv;
  for (int64_t i = 0; i < n * dk; ++i) in.q.push_back(normal(rng));
  for (int64_t i = 0; i < n * dk; ++i) in.k.push_back(normal(rng));
  for (int64_t i = 0; i < n * dv; ++i) in.v.push_back(normal(rng));
  for (int64_t i = 0; i < n; ++i) in.g.push_back(-2.0f * unit(rng));  // decay factors in [e^-2, 1]
  for (int64_t i = 0; i < n; ++i) in.beta.push_back(unit(rng));
  for (int64_t i = 0; i < dk * dv; ++i) in.state.push_back(0.3f * normal(rng));
  l2_norm(in.q.data(), n, dk, 1e-6f);
  l2_norm(in.k.data(), n, dk, 1e-6f);
  return in;
}

DeltaNetHeadArgs args_for(const Inputs& in, int64_t t0, int64_t n, std::vector<float>& out) {
  DeltaNetHeadArgs a;
  a.q = in.q.data() + t0 * in.dk;
  a.k = in.k.data() + t0 * in.dk;
  a.v = in.v.data() + t0 * in.dv;
  a.g = in.g.data() + t0;
  a.beta = in.beta.data() + t0;
  a.q_stride = a.k_stride = in.dk;
  a.v_stride = in.dv;
  a.n_tokens = n;
  a.d_k = in.dk;
  a.d_v = in.dv;
  a.scale = 1.0f / std::sqrt(static_cast<float>(in.dk));
  a.out = out.data() + t0 * in.dv;
  a.out_stride = in.dv;
  return a;
}

float max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
  float m = 0.0f;
  for (size_t i = 0; i < a.size(); ++i) m = std::max(m, std::fabs(a[i] - b[i]));
  return m;
}

TEST(DeltaNet, ChunkedEqualsRecurrent) {
  for (int64_t n : {1, 5, 17, 63, 64, 65, 130}) {
    for (int64_t chunk : {1, 4, 16, 64}) {
      SCOPED_TRACE("n=" + std::to_string(n) + " chunk=" + std::to_string(chunk));
      const Inputs in = random_inputs(n, 16, 12, static_cast<uint32_t>(n * 100 + chunk));
      std::vector<float> out_r(static_cast<size_t>(n * in.dv)), out_c(out_r.size());
      std::vector<float> state_r = in.state, state_c = in.state;
      delta_net_recurrent(args_for(in, 0, n, out_r), state_r.data());
      delta_net_chunked(args_for(in, 0, n, out_c), state_c.data(), chunk);
      EXPECT_LT(max_abs_diff(out_r, out_c), 2e-5f);
      EXPECT_LT(max_abs_diff(state_r, state_c), 2e-5f);
    }
  }
}

// Every kernel table's DeltaNet (float on SIMD tables) agrees with the double-precision
// reference recurrence, chunked and token by token, at the real head size (128) and odd ones.
TEST(DeltaNet, EveryTableAgreesWithTheReference) {
  for (const KernelTable* table : available_kernels()) {
    for (auto [dk, dv] : {std::pair<int64_t, int64_t>{128, 128}, {64, 64}, {20, 13}}) {
      for (int64_t n : {1, 17, 64, 130}) {
        SCOPED_TRACE(std::string(table->isa) + " dk=" + std::to_string(dk) + " dv=" + std::to_string(dv) +
                     " n=" + std::to_string(n));
        const Inputs in = random_inputs(n, dk, dv, static_cast<uint32_t>(n + dk));
        std::vector<float> want(static_cast<size_t>(n * dv)), chunked(want.size()), stepped(want.size());
        std::vector<float> s_want = in.state, s_chunked = in.state, s_stepped = in.state;
        delta_net_recurrent(args_for(in, 0, n, want), s_want.data());
        table->delta_net_chunked(args_for(in, 0, n, chunked), s_chunked.data(), 64);
        table->delta_net_recurrent(args_for(in, 0, n, stepped), s_stepped.data());
        EXPECT_LT(max_abs_diff(want, chunked), 1e-4f);
        EXPECT_LT(max_abs_diff(s_want, s_chunked), 1e-4f);
        EXPECT_LT(max_abs_diff(want, stepped), 1e-4f);
        EXPECT_LT(max_abs_diff(s_want, s_stepped), 1e-4f);
      }
    }
  }
}

// The x86 tables above avx2 replace only how the chunked form's matrix products are vectorised
// (avx512/delta_net_avx512.cpp), not their sums: outputs and state equal the avx2 table's bit for
// bit, at head sizes that take the 512-bit loops, their AVX2 tails and the scalar tails.
TEST(DeltaNet, WiderX86TablesEqualTheAvx2TableBitForBit) {
  const std::vector<const KernelTable*> tables = available_kernels();
  const KernelTable* avx2 = nullptr;
  for (const KernelTable* t : tables) {
    if (std::string(t->isa) == "avx2") avx2 = t;
  }
  if (avx2 == nullptr) GTEST_SKIP() << "this host has no avx2 table";
  int compared = 0;
  for (const KernelTable* table : tables) {
    const std::string isa(table->isa);
    if (isa == "generic" || isa == "avx2") continue;
    ++compared;
    for (auto [dk, dv] : {std::pair<int64_t, int64_t>{128, 128}, {256, 128}, {88, 72}, {20, 13}}) {
      for (int64_t n : {1, 7, 64, 130}) {
        SCOPED_TRACE(isa + " dk=" + std::to_string(dk) + " dv=" + std::to_string(dv) + " n=" + std::to_string(n));
        const Inputs in = random_inputs(n, dk, dv, static_cast<uint32_t>(3 * n + dk + dv));
        std::vector<float> want(static_cast<size_t>(n * dv)), got(want.size());
        std::vector<float> s_want = in.state, s_got = in.state;
        avx2->delta_net_chunked(args_for(in, 0, n, want), s_want.data(), 64);
        table->delta_net_chunked(args_for(in, 0, n, got), s_got.data(), 64);
        for (size_t i = 0; i < want.size(); ++i)
          ASSERT_EQ(std::bit_cast<uint32_t>(want[i]), std::bit_cast<uint32_t>(got[i])) << i;
        for (size_t i = 0; i < s_want.size(); ++i)
          ASSERT_EQ(std::bit_cast<uint32_t>(s_want[i]), std::bit_cast<uint32_t>(s_got[i])) << "state " << i;
      }
    }
  }
  if (compared == 0) GTEST_SKIP() << "this host runs no x86 table above avx2";
}

TEST(DeltaNet, SplittingTheSequenceKeepsTheResult) {
  // Prefill 40 tokens chunked, then decode 9 one at a time == 49 tokens in one recurrent call.
  const Inputs in = random_inputs(49, 8, 8, 7);
  std::vector<float> whole(static_cast<size_t>(49 * in.dv)), split(whole.size());
  std::vector<float> s_whole = in.state, s_split = in.state;
  delta_net_recurrent(args_for(in, 0, 49, whole), s_whole.data());
  delta_net_chunked(args_for(in, 0, 40, split), s_split.data(), 16);
  for (int64_t t = 40; t < 49; ++t) delta_net_recurrent(args_for(in, t, 1, split), s_split.data());
  EXPECT_LT(max_abs_diff(whole, split), 2e-5f);
  EXPECT_LT(max_abs_diff(s_whole, s_split), 2e-5f);
}

TEST(DeltaNet, ScalarCaseByHand) {
  // d_k = d_v = 1: S' = e^g S, u = beta (v - S' k), S = S' + k u, o = S q scale.
  Inputs in;
  in.n = 2, in.dk = 1, in.dv = 1;
  in.q = {1.0f, -1.0f};
  in.k = {1.0f, 1.0f};
  in.v = {2.0f, -1.0f};
  in.g = {std::log(0.5f), 0.0f};
  in.beta = {0.5f, 1.0f};
  in.state = {4.0f};
  std::vector<float> out(2);
  std::vector<float> state = in.state;
  DeltaNetHeadArgs a = args_for(in, 0, 2, out);
  a.scale = 1.0f;
  delta_net_recurrent(a, state.data());
  // t0: S' = 2, u = 0.5 * (2 - 2) = 0, S = 2, o = 2.  t1: S' = 2, u = -1 - 2 = -3, S = -1, o = 1.
  EXPECT_FLOAT_EQ(out[0], 2.0f);
  EXPECT_FLOAT_EQ(out[1], 1.0f);
  EXPECT_FLOAT_EQ(state[0], -1.0f);
  std::vector<float> out_c(2);
  std::vector<float> state_c = in.state;
  DeltaNetHeadArgs c = args_for(in, 0, 2, out_c);
  c.scale = 1.0f;
  delta_net_chunked(c, state_c.data(), 2);
  EXPECT_NEAR(out_c[0], 2.0f, 1e-6);
  EXPECT_NEAR(out_c[1], 1.0f, 1e-6);
  EXPECT_NEAR(state_c[0], -1.0f, 1e-6);
}

TEST(CausalConv, WindowCarriesAcrossCalls) {
  const int64_t channels = 5, kernel = 4, n = 11;
  std::mt19937 rng(3);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> x(static_cast<size_t>(n * channels)), w(static_cast<size_t>(channels * kernel));
  for (float& f : x) f = normal(rng);
  for (float& f : w) f = normal(rng);
  std::vector<float> win_a(static_cast<size_t>((kernel - 1) * channels), 0.0f), win_b = win_a;
  std::vector<float> y_a(x.size()), y_b(x.size());
  causal_conv1d_silu(x.data(), channels, n, channels, w.data(), kernel, win_a.data(), y_a.data());
  // The same tokens in pieces of 1, 2 and 8.
  int64_t t = 0;
  for (int64_t piece : {1, 2, 8}) {
    causal_conv1d_silu(x.data() + t * channels, channels, piece, channels, w.data(), kernel, win_b.data(),
                       y_b.data() + t * channels);
    t += piece;
  }
  EXPECT_EQ(y_a, y_b);
  EXPECT_EQ(win_a, win_b);
  // Token 0 sees only itself (the window starts at zero): y = silu(x · w[last tap]).
  const float s = x[2] * w[2 * kernel + kernel - 1];
  EXPECT_FLOAT_EQ(y_a[2], s / (1.0f + std::exp(-s)));
}

TEST(CausalConv, ChannelRangesThenOneWindowAdvanceEqualTheWholeCall) {
  const int64_t channels = 7, kernel = 4, n = 3;  // fewer tokens than the window: it keeps old rows
  std::mt19937 rng(5);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> x(static_cast<size_t>(n * channels)), w(static_cast<size_t>(channels * kernel));
  for (float& f : x) f = normal(rng);
  for (float& f : w) f = normal(rng);
  std::vector<float> win_a(static_cast<size_t>((kernel - 1) * channels));
  for (float& f : win_a) f = normal(rng);
  std::vector<float> win_b = win_a;
  std::vector<float> y_a(x.size()), y_b(x.size(), -1.0f);
  causal_conv1d_silu(x.data(), channels, n, channels, w.data(), kernel, win_a.data(), y_a.data());
  const std::vector<float> taps = conv_taps_by_tap(w.data(), channels, kernel);
  for (const auto& [c0, c1] : {std::pair<int64_t, int64_t>{4, 7}, {0, 1}, {1, 4}}) {
    causal_conv1d_silu_channels(x.data(), channels, n, channels, c0, c1, taps.data(), kernel, win_b.data(), y_b.data());
  }
  // Each range advances its own channels, as the threads do.
  for (const auto& [c0, c1] : {std::pair<int64_t, int64_t>{4, 7}, {0, 1}, {1, 4}}) {
    causal_conv1d_advance_window(x.data(), channels, n, channels, c0, c1, kernel, win_b.data());
  }
  EXPECT_EQ(y_a, y_b);
  EXPECT_EQ(win_a, win_b);
}

TEST(CausalConv, TapsComeTapByTap) {
  const std::vector<float> w = {1, 2, 3, 4, 5, 6};  // two channels of three taps
  EXPECT_EQ(conv_taps_by_tap(w.data(), 2, 3), (std::vector<float>{1, 4, 2, 5, 3, 6}));
}

TEST(CausalConv, TheAdvancedWindowIsTheLastRowsOfWindowThenInput) {
  const int64_t channels = 5, kernel = 4, keep = kernel - 1;
  for (int64_t n : {1, 2, 3, 6}) {  // fewer tokens than the window keeps, as many, more
    std::vector<float> window(static_cast<size_t>(keep * channels)), x(static_cast<size_t>(n * channels));
    for (size_t i = 0; i < window.size(); ++i) window[i] = 100.0f + static_cast<float>(i);
    for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i);
    std::vector<float> extended = window;
    extended.insert(extended.end(), x.begin(), x.end());
    const std::vector<float> expected(extended.end() - keep * channels, extended.end());
    causal_conv1d_advance_window(x.data(), channels, n, channels, 0, channels, kernel, window.data());
    EXPECT_EQ(window, expected) << n << " tokens";
  }
}

}  // namespace
}  // namespace cellserve::engine::kernels::reference
