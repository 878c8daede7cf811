// quantize_row -> dequantize_row on synthetic data: the error of every type stays within a
// stated bound, all-zero blocks stay exactly zero, and one huge outlier neither breaks the
// encoding nor leaks into other blocks.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "engine/quant/quantize.h"
#include "tests/engine/quant/quant_test_util.h"

namespace cellserve::engine {
namespace {

using testing::rms;
using testing::rmse;
using testing::round_trip;

// Bound on the relative RMSE, rmse(decoded - x) / rms(x), for well-scaled data (N(0, s^2) with
// s in [3.7e-3, 1234.5], U(-1, 1), U(0, 1), U(5, 6)). Chosen as the largest value measured on
// those inputs (16,384 values each; see quant_rmse_report for N(0,1) at 262,144 values) times
// about 1.2: f16 2.1e-4, bf16 1.68e-3, q8_0 5.3e-3, q6_K 1.81e-2, q5_1 3.76e-2, q5_K 3.61e-2,
// q5_0 4.24e-2, q4_1 7.85e-2, q4_K 7.15e-2, q4_0 8.50e-2, iq4_nl 7.62e-2, iq4_xs 7.70e-2,
// q3_K 0.151, q2_K 0.293, q8_K 6.9e-3. (The worst case is always normal data.)
struct TypeBound {
  GgmlType type;
  double rel_rmse;
};
const TypeBound kBounds[] = {
    {GgmlType::F16, 2.5e-4},  {GgmlType::BF16, 2.0e-3}, {GgmlType::Q8_0, 6.5e-3},   {GgmlType::Q6_K, 2.2e-2},
    {GgmlType::Q5_1, 4.5e-2}, {GgmlType::Q5_K, 4.4e-2}, {GgmlType::Q5_0, 5.1e-2},   {GgmlType::Q4_1, 9.4e-2},
    {GgmlType::Q4_K, 8.6e-2}, {GgmlType::Q4_0, 0.102},  {GgmlType::IQ4_NL, 9.2e-2}, {GgmlType::IQ4_XS, 9.3e-2},
    {GgmlType::Q3_K, 0.182},  {GgmlType::Q2_K, 0.352},  {GgmlType::Q8_K, 8.3e-3},
};

constexpr size_t kN = 256 * 64;

double rel_rmse(const std::vector<float>& x, const std::vector<float>& y) {
  return rmse(x.data(), y.data(), x.size()) / rms(x.data(), x.size());
}

std::string name(GgmlType t) { return std::string(ggml_type_name(t)); }

TEST(QuantizeRoundTrip, F32IsExact) {
  const auto x = testing::normal_values(kN, 1);
  EXPECT_EQ(round_trip(GgmlType::F32, x), x);
}

TEST(QuantizeRoundTrip, NormalDataAtSeveralScales) {
  for (const TypeBound& b : kBounds) {
    for (float scale : {3.7e-3f, 1.0f, 1234.5f}) {
      const auto x = testing::normal_values(kN, 11, scale);
      EXPECT_LT(rel_rmse(x, round_trip(b.type, x)), b.rel_rmse) << name(b.type) << " scale " << scale;
    }
  }
}

TEST(QuantizeRoundTrip, UniformData) {
  for (const TypeBound& b : kBounds) {
    for (auto [lo, hi] : {std::pair{-1.0f, 1.0f}, std::pair{0.0f, 1.0f}, std::pair{5.0f, 6.0f}}) {
      const auto x = testing::uniform_values(kN, 12, lo, hi);
      EXPECT_LT(rel_rmse(x, round_trip(b.type, x)), b.rel_rmse) << name(b.type) << " U(" << lo << ", " << hi << ")";
    }
  }
}

// Far below 1e-3 the fp16 block scales become subnormal and the error grows (e.g. q5_K at
// N(0, 1e-5^2): relative RMSE 2.1; q6_K and iq4_xs underflow to all zeros). That is the format,
// same as in ggml; here we only require the decode to be finite.
TEST(QuantizeRoundTrip, TinyValuesStayFinite) {
  for (const TypeBound& b : kBounds) {
    const auto x = testing::normal_values(kN, 13, 1e-5f);
    for (float v : round_trip(b.type, x)) ASSERT_TRUE(std::isfinite(v)) << name(b.type);
  }
}

TEST(QuantizeRoundTrip, AllZeroBlocksDecodeToZero) {
  for (const TypeBound& b : kBounds) {
    // Super-blocks 0 and 2 are zero, 1 and 3 random: zero blocks stay exactly zero whatever
    // their neighbours hold.
    auto x = testing::normal_values(4 * 256, 14);
    std::fill(x.begin(), x.begin() + 256, 0.0f);
    std::fill(x.begin() + 512, x.begin() + 768, 0.0f);
    const auto y = round_trip(b.type, x);
    for (size_t i = 0; i < x.size(); ++i) {
      if (x[i] == 0.0f) {
        ASSERT_EQ(y[i], 0.0f) << name(b.type) << " at " << i;
      }
    }
    const std::vector<float> zeros(256, 0.0f);
    EXPECT_EQ(round_trip(b.type, zeros), zeros) << name(b.type);
  }
}

// One value of +-1e4 or 6e4 (near the fp16 limit) in N(0, 1) data at index 300. Every type
// must reproduce the outlier within 2e-3 relative (measured worst: bf16 1.6e-3, others
// <= 3.7e-4) and decode blocks that do not contain it (from 512 on) within the normal bound.
// Values that share the outlier's block may be crushed (IQ4 has no zero level, so they become
// +-d, about outlier/127): that is the format, as in ggml.
TEST(QuantizeRoundTrip, HugeOutlierStaysInItsBlock) {
  for (const TypeBound& b : kBounds) {
    for (float big : {1e4f, -1e4f, 6e4f}) {
      auto x = testing::normal_values(1024, 21);
      x[300] = big;
      const auto y = round_trip(b.type, x);
      for (float v : y) ASSERT_TRUE(std::isfinite(v)) << name(b.type) << " outlier " << big;
      EXPECT_LT(std::fabs(y[300] - big) / std::fabs(big), 2e-3) << name(b.type) << " outlier " << big;
      const std::vector<float> xs(x.begin() + 512, x.end()), ys(y.begin() + 512, y.end());
      EXPECT_LT(rel_rmse(xs, ys), b.rel_rmse) << name(b.type) << " outlier " << big;
    }
  }
}

// Quantizing a row equals quantizing its blocks one at a time (no state crosses blocks).
TEST(QuantizeRoundTrip, RowsAreBlockwise) {
  for (const TypeBound& b : kBounds) {
    const int64_t n = 1024, bs = ggml_block_size(b.type);
    const auto x = testing::normal_values(static_cast<size_t>(n), 15);
    std::vector<uint8_t> whole(ggml_row_size(b.type, n)), pieces(whole.size());
    quantize_row(b.type, x.data(), whole.data(), n);
    const int64_t piece = std::max<int64_t>(bs, 256);
    for (int64_t i = 0; i < n; i += piece) {
      quantize_row(b.type, x.data() + i, pieces.data() + ggml_row_size(b.type, i), piece);
    }
    EXPECT_EQ(whole, pieces) << name(b.type);
  }
}

}  // namespace
}  // namespace cellserve::engine
