// matmul_shared_input: weights that share their input, run as one decode job where they take the
// same activations, give each product bit for bit as a separate matmul() does.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <limits>
#include <memory>
#include <random>
#include <vector>

#include "engine/kernels/kernel_table.h"
#include "engine/models/blocks.h"
#include "engine/models/model_loader.h"
#include "engine/quant/quantize.h"

namespace cellserve::engine {
namespace {

// A random [n_in, n_out] weight of `type`, packed in the active table's layout where it packs
// (pack_rows, as TensorBinder::pack).
struct Weight {
  std::vector<std::byte> rows;
  TensorView view;
};

std::unique_ptr<Weight> random_weight(GgmlType type, int64_t n_in, int64_t n_out, std::mt19937& rng) {
  auto w = std::make_unique<Weight>();
  const size_t row_bytes = ggml_row_size(type, n_in);
  w->rows.resize(row_bytes * static_cast<size_t>(n_out));
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> row(static_cast<size_t>(n_in));
  for (int64_t r = 0; r < n_out; ++r) {
    for (float& v : row) v = dist(rng);
    quantize_row(type, row.data(), w->rows.data() + static_cast<size_t>(r) * row_bytes, n_in);
  }
  w->view.type = type;
  w->view.shape = make_shape({n_in, n_out});
  w->view.data = w->rows;
  if (packed_size(w->view) > 0) {
    HugePageArena arena;
    Result<std::shared_ptr<const std::byte>> packed = pack_rows(w->view, arena);
    EXPECT_TRUE(packed.ok()) << packed.status().message();
    if (packed.ok()) w->view.packed = *packed;
  }
  return w;
}

// Random weights of `types` (512 inputs, n_outs[i] rows each) and n_tokens random input rows.
struct Inputs {
  std::vector<std::unique_ptr<Weight>> weights;
  std::vector<float> x;
};
Inputs random_inputs(const std::vector<GgmlType>& types, const std::vector<int64_t>& n_outs, int64_t n_tokens,
                     uint32_t seed) {
  constexpr int64_t kIn = 512;
  std::mt19937 rng(seed);
  Inputs in;
  for (size_t i = 0; i < types.size(); ++i) in.weights.push_back(random_weight(types[i], kIn, n_outs[i], rng));
  in.x.resize(static_cast<size_t>(kIn * n_tokens));
  std::normal_distribution<float> dist(0.0f, 1.0f);
  for (float& v : in.x) v = dist(rng);
  return in;
}

void expect_shared_equals_separate(const std::vector<GgmlType>& types, const std::vector<int64_t>& n_outs,
                                   int64_t n_tokens) {
  const auto [weights, x] = random_inputs(types, n_outs, n_tokens, 7);
  ThreadPool pool(2, false);
  std::vector<std::vector<float>> shared(types.size()), separate(types.size());
  std::vector<MatmulOut> outs;
  for (size_t i = 0; i < types.size(); ++i) {
    shared[i].assign(static_cast<size_t>(n_outs[i] * n_tokens), -1.0f);
    separate[i].assign(static_cast<size_t>(n_outs[i] * n_tokens), -2.0f);
    outs.push_back({&weights[i]->view, shared[i].data()});
  }
  matmul_shared_input(outs, x.data(), n_tokens, pool);
  for (size_t i = 0; i < types.size(); ++i) {
    matmul(weights[i]->view, x.data(), n_tokens, separate[i].data(), pool);
    for (size_t j = 0; j < separate[i].size(); ++j) {
      ASSERT_EQ(std::bit_cast<uint32_t>(shared[i][j]), std::bit_cast<uint32_t>(separate[i][j]))
          << kernels::active_kernels().isa << " weight " << i << " (" << ggml_type_name(types[i]) << ") value " << j
          << " of " << n_tokens << " tokens";
    }
  }
}

// Packed decode claims groups of all the weights' groups (WorkClaims): on two threads from both
// ends, on more from the front. Every value must be written, and be the same as on one thread.
void expect_threads_equal_one(int n_threads, const std::vector<GgmlType>& types, const std::vector<int64_t>& n_outs,
                              int64_t n_tokens) {
  const auto [weights, x] = random_inputs(types, n_outs, n_tokens, 11);
  ThreadPool one(1, false);
  ThreadPool many(n_threads, false);
  std::vector<std::vector<float>> by_one(types.size()), by_many(types.size());
  std::vector<MatmulOut> outs_one, outs_many;
  for (size_t i = 0; i < types.size(); ++i) {
    by_one[i].assign(static_cast<size_t>(n_outs[i] * n_tokens), std::numeric_limits<float>::quiet_NaN());
    by_many[i].assign(static_cast<size_t>(n_outs[i] * n_tokens), std::numeric_limits<float>::quiet_NaN());
    outs_one.push_back({&weights[i]->view, by_one[i].data()});
    outs_many.push_back({&weights[i]->view, by_many[i].data()});
  }
  matmul_shared_input(outs_one, x.data(), n_tokens, one);
  matmul_shared_input(outs_many, x.data(), n_tokens, many);
  for (size_t i = 0; i < types.size(); ++i) {
    for (size_t j = 0; j < by_one[i].size(); ++j) {
      ASSERT_FALSE(std::isnan(by_many[i][j]))
          << n_threads << " threads: weight " << i << " value " << j << " never written";
      ASSERT_EQ(std::bit_cast<uint32_t>(by_many[i][j]), std::bit_cast<uint32_t>(by_one[i][j]))
          << kernels::active_kernels().isa << " weight " << i << " (" << ggml_type_name(types[i]) << ") value " << j
          << " of " << n_tokens << " tokens";
    }
  }
}

TEST(SharedInputMatmul, TwoThreadsFromBothEndsEqualOneThread) {
  for (int64_t n_tokens : {1, 4}) {
    // Claims of 64 groups down to 4 over three weights, and a total of 3 groups (under one claim).
    expect_threads_equal_one(2, {GgmlType::Q4_K, GgmlType::Q4_K, GgmlType::Q6_K}, {2048, 256, 264}, n_tokens);
    expect_threads_equal_one(2, {GgmlType::Q4_0, GgmlType::Q8_0}, {16, 8}, n_tokens);
  }
}

// A phone's 8 cores (the aarch64 stage runs this under qemu), and an odd count.
TEST(SharedInputMatmul, EightAndThreeThreadsClaimingFromTheFrontEqualOneThread) {
  for (int n_threads : {8, 3}) {
    for (int64_t n_tokens : {1, 4}) {
      expect_threads_equal_one(n_threads, {GgmlType::Q4_K, GgmlType::Q4_K, GgmlType::Q6_K}, {2048, 256, 264}, n_tokens);
      expect_threads_equal_one(n_threads, {GgmlType::Q4_0, GgmlType::Q8_0}, {16, 8}, n_tokens);
    }
  }
}

TEST(SharedInputMatmul, QkvOfMixedKQuantsEqualSeparateProducts) {
  // Q4_K_M's layers: Q and K in Q4_K, V in Q6_K (both take Q8_K activations).
  for (int64_t n_tokens : {1, 3}) {
    expect_shared_equals_separate({GgmlType::Q4_K, GgmlType::Q4_K, GgmlType::Q6_K}, {1024, 256, 256}, n_tokens);
  }
}

TEST(SharedInputMatmul, GateUpAndSmallHeadsEqualSeparateProducts) {
  // Qwen3.5's linear-attention inputs: two large weights beside two of a few rows.
  for (int64_t n_tokens : {1, 2}) {
    expect_shared_equals_separate({GgmlType::Q4_0, GgmlType::Q8_0, GgmlType::Q4_0, GgmlType::Q8_0}, {1536, 768, 16, 16},
                                  n_tokens);
  }
}

TEST(SharedInputMatmul, PlainRowsEqualSeparateProducts) {
  expect_shared_equals_separate({GgmlType::BF16, GgmlType::BF16}, {600, 24}, 1);
  expect_shared_equals_separate({GgmlType::F16, GgmlType::F32}, {40, 8}, 1);
}

TEST(SharedInputMatmul, WeightsOnDifferentActivationsEqualSeparateProducts) {
  // Q4_0 (Q8_0 activations) beside Q4_K (Q8_K) and BF16: not one job, still the same values; and
  // prefill-sized batches, which never share a job.
  expect_shared_equals_separate({GgmlType::Q4_0, GgmlType::Q4_K, GgmlType::BF16}, {256, 256, 64}, 1);
  expect_shared_equals_separate({GgmlType::Q4_K, GgmlType::Q6_K}, {256, 128}, 40);
}

}  // namespace
}  // namespace cellserve::engine
