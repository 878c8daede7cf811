// Every reference dot product equals the dot product of the dequantized operands: this pins the
// bit layout of each weight type and activation format independently of the kernels' arithmetic.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "base/half.h"

#include "engine/kernels/kernel_table.h"
#include "engine/quant/quantize.h"

namespace cellserve::engine::kernels {
namespace {

const GgmlType kWeightTypes[] = {GgmlType::F32,  GgmlType::F16,  GgmlType::BF16, GgmlType::Q4_0,   GgmlType::Q4_1,
                                 GgmlType::Q5_0, GgmlType::Q5_1, GgmlType::Q8_0, GgmlType::IQ4_NL, GgmlType::Q2_K,
                                 GgmlType::Q3_K, GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K,   GgmlType::IQ4_XS};

// Activation rows as floats; Q8_1 (d, s, 32 quants) has no dequantizer of its own.
void dequantize_activation(GgmlType type, const std::byte* src, float* dst, int64_t n) {
  if (type != GgmlType::Q8_1) {
    dequantize_row(type, src, dst, n);
    return;
  }
  for (int64_t b = 0; b < n / 32; ++b) {
    const std::byte* block = src + b * 36;
    uint16_t d = 0;
    std::memcpy(&d, block, 2);
    const auto* qs = reinterpret_cast<const int8_t*>(block + 4);
    for (int j = 0; j < 32; ++j) dst[b * 32 + j] = fp16_to_fp32(d) * static_cast<float>(qs[j]);
  }
}

class VecDotTest : public ::testing::TestWithParam<GgmlType> {};

TEST_P(VecDotTest, EqualsDotOfDequantizedOperands) {
  const GgmlType type = GetParam();
  if (!can_quantize(type)) GTEST_SKIP() << "no quantizer for " << ggml_type_name(type);
  const KernelTable& table = reference_kernels();
  const WeightKernels& k = table.for_weight(type);
  ASSERT_TRUE(k.supported);
  std::mt19937 rng(42);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (int64_t n : {256, 512, 1024}) {
    std::vector<float> w(static_cast<size_t>(n)), a(static_cast<size_t>(n));
    for (auto& v : w) v = normal(rng);
    for (auto& v : a) v = normal(rng) * 3.0f;
    std::vector<std::byte> wq(ggml_row_size(type, n)), aq(ggml_row_size(k.activation_type, n));
    quantize_row(type, w.data(), wq.data(), n);
    table.converter(k.activation_type)(a.data(), aq.data(), n);
    std::vector<float> wd(static_cast<size_t>(n)), ad(static_cast<size_t>(n));
    dequantize_row(type, wq.data(), wd.data(), n);
    dequantize_activation(k.activation_type, aq.data(), ad.data(), n);
    double expected = 0.0;
    double magnitude = 0.0;
    for (size_t i = 0; i < wd.size(); ++i) {
      expected += static_cast<double>(wd[i]) * ad[i];
      magnitude += std::fabs(static_cast<double>(wd[i]) * ad[i]);
    }
    const float got = k.vec_dot(n, wq.data(), aq.data());
    // Q8_1 carries s = d * Σq rounded to fp16, which the Q4_1/Q5_1 kernels use for the offset
    // term as ggml does; that rounding (2^-11 relative) is the only inexact step.
    const double rel = k.activation_type == GgmlType::Q8_1 ? 1e-3 : 1e-5;
    EXPECT_NEAR(got, expected, rel * magnitude + 1e-4) << ggml_type_name(type) << " n=" << n;
  }
}

INSTANTIATE_TEST_SUITE_P(AllTypes, VecDotTest, ::testing::ValuesIn(kWeightTypes),
                         [](const ::testing::TestParamInfo<GgmlType>& info) {
                           return std::string(ggml_type_name(info.param));
                         });

TEST(ActivationConvert, Q8_0RoundsHalfToEvenLikeGgmlCpu) {
  // amax 127 makes the multiplier exactly 1: 0.5 -> 0, 1.5 -> 2, 2.5 -> 2, -0.5 -> -0.
  std::vector<float> x(32, 0.0f);
  x[0] = 127.0f;
  x[1] = 0.5f;
  x[2] = 1.5f;
  x[3] = 2.5f;
  x[4] = -3.5f;
  std::vector<std::byte> q(34);
  reference_kernels().converter(GgmlType::Q8_0)(x.data(), q.data(), 32);
  const auto* qs = reinterpret_cast<const int8_t*>(q.data() + 2);
  EXPECT_EQ(qs[0], 127);
  EXPECT_EQ(qs[1], 0);
  EXPECT_EQ(qs[2], 2);
  EXPECT_EQ(qs[3], 2);
  EXPECT_EQ(qs[4], -4);
}

TEST(KernelTable, ForcedIsaNames) {
  EXPECT_TRUE(kernels_for_isa("generic").ok());
  EXPECT_FALSE(kernels_for_isa("quantum").ok());
}

}  // namespace
}  // namespace cellserve::engine::kernels
