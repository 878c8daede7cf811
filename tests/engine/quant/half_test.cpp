// Edge cases of base/half.h's F16 and BF16 conversions, which define what F16/BF16 tensors
// and every fp16 block scale mean: round to nearest even, subnormals, infinities and NaN.
// (Kept beside the quant tests because the quant code is their main user.)
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <vector>

#include "base/half.h"
#include "tests/engine/quant/quant_test_util.h"

namespace cellserve {
namespace {

float bits_f(uint32_t b) { return std::bit_cast<float>(b); }

TEST(Half, DecodesSpecialValues) {
  EXPECT_EQ(fp16_to_fp32(0x0000), 0.0f);
  EXPECT_EQ(std::bit_cast<uint32_t>(fp16_to_fp32(0x8000)), 0x80000000u);  // -0
  EXPECT_EQ(fp16_to_fp32(0x3C00), 1.0f);
  EXPECT_EQ(fp16_to_fp32(0xC000), -2.0f);
  EXPECT_EQ(fp16_to_fp32(0x7BFF), 65504.0f);                  // largest finite
  EXPECT_EQ(fp16_to_fp32(0x0400), std::ldexp(1.0f, -14));     // smallest normal
  EXPECT_EQ(fp16_to_fp32(0x0001), std::ldexp(1.0f, -24));     // smallest subnormal
  EXPECT_EQ(fp16_to_fp32(0x03FF), std::ldexp(1023.0f, -24));  // largest subnormal
  EXPECT_EQ(fp16_to_fp32(0x8001), -std::ldexp(1.0f, -24));
  EXPECT_EQ(fp16_to_fp32(0x7C00), std::numeric_limits<float>::infinity());
  EXPECT_EQ(fp16_to_fp32(0xFC00), -std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(fp16_to_fp32(0x7E00)));
  EXPECT_TRUE(std::isnan(fp16_to_fp32(0x7C01)));                          // signalling NaN stays a NaN
  EXPECT_EQ(std::bit_cast<uint32_t>(fp16_to_fp32(0x7E01)), 0x7FC02000u);  // payload kept
}

TEST(Half, EncodesSpecialValues) {
  EXPECT_EQ(fp32_to_fp16(0.0f), 0x0000);
  EXPECT_EQ(fp32_to_fp16(-0.0f), 0x8000);
  EXPECT_EQ(fp32_to_fp16(1.0f), 0x3C00);
  EXPECT_EQ(fp32_to_fp16(65504.0f), 0x7BFF);
  EXPECT_EQ(fp32_to_fp16(std::numeric_limits<float>::infinity()), 0x7C00);
  EXPECT_EQ(fp32_to_fp16(-std::numeric_limits<float>::infinity()), 0xFC00);
  EXPECT_EQ(fp32_to_fp16(1e10f), 0x7C00);  // overflow
  EXPECT_EQ(fp32_to_fp16(-1e10f), 0xFC00);
  EXPECT_EQ(fp32_to_fp16(std::numeric_limits<float>::quiet_NaN()) & 0x7E00, 0x7E00);  // quiet NaN
  EXPECT_EQ(fp32_to_fp16(bits_f(0x7F800001u)) & 0x7E00, 0x7E00);  // signalling NaN -> quiet, not inf
  EXPECT_EQ(fp32_to_fp16(bits_f(0xFFC00000u)), 0xFE00);           // sign kept
  EXPECT_EQ(fp32_to_fp16(1e-30f), 0x0000);                        // underflow to zero
  EXPECT_EQ(fp32_to_fp16(-1e-30f), 0x8000);
}

TEST(Half, RoundsToNearestEven) {
  const float ulp1 = std::ldexp(1.0f, -10);                                // spacing of halves in [1, 2)
  EXPECT_EQ(fp32_to_fp16(1.0f + ulp1 / 2), 0x3C00);                        // tie: 1.0 is even
  EXPECT_EQ(fp32_to_fp16(1.0f + 3 * ulp1 / 2), 0x3C02);                    // tie: up to the even mantissa 2
  EXPECT_EQ(fp32_to_fp16(std::nextafter(1.0f + ulp1 / 2, 2.0f)), 0x3C01);  // just above the tie
  EXPECT_EQ(fp32_to_fp16(65519.0f), 0x7BFF);                               // below the midpoint to "65536"
  EXPECT_EQ(fp32_to_fp16(65520.0f), 0x7C00);                               // the midpoint rounds to even: infinity
  // Subnormal results.
  const float tiny = std::ldexp(1.0f, -24);
  EXPECT_EQ(fp32_to_fp16(tiny), 0x0001);
  EXPECT_EQ(fp32_to_fp16(tiny / 2), 0x0000);                          // tie to even (0)
  EXPECT_EQ(fp32_to_fp16(std::nextafter(tiny / 2, 1.0f)), 0x0001);    // just above
  EXPECT_EQ(fp32_to_fp16(3 * tiny / 2), 0x0002);                      // tie to even (2)
  EXPECT_EQ(fp32_to_fp16(5 * tiny / 2), 0x0002);                      // tie to even (2)
  EXPECT_EQ(fp32_to_fp16(std::ldexp(1.0f, -14) - tiny / 2), 0x0400);  // carries into the smallest normal
}

TEST(Half, EveryHalfRoundTrips) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const float f = fp16_to_fp32(static_cast<uint16_t>(h));
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(fp16_to_fp32(fp32_to_fp16(f)))) << h;
    } else {
      ASSERT_EQ(fp32_to_fp16(f), h) << h;
    }
  }
}

// Brute-force reference: the half nearest to f (ties to the even encoding), found among all
// finite halves; overflow follows IEEE (beyond 65520 -> infinity).
uint16_t reference_fp16(float f, const std::vector<float>& positive) {
  const uint16_t sign = std::signbit(f) ? 0x8000 : 0;
  const double a = std::fabs(static_cast<double>(f));
  if (a >= 65520.0) return sign | 0x7C00;
  const auto it = std::lower_bound(positive.begin(), positive.end(), static_cast<float>(a));
  const size_t hi = static_cast<size_t>(it - positive.begin());
  if (hi == 0) return sign;
  const size_t lo = hi - 1;
  if (hi == positive.size()) return static_cast<uint16_t>(sign | lo);
  const double dlo = a - positive[lo], dhi = positive[hi] - a;
  size_t pick = dlo < dhi ? lo : dhi < dlo ? hi : (lo % 2 == 0 ? lo : hi);
  return static_cast<uint16_t>(sign | pick);
}

TEST(Half, MatchesBruteForceRounding) {
  std::vector<float> positive;  // halves 0x0000..0x7BFF in order
  for (uint32_t h = 0; h <= 0x7BFF; ++h) positive.push_back(fp16_to_fp32(static_cast<uint16_t>(h)));
  testing::TestRng rng(16);
  for (int i = 0; i < 200000; ++i) {
    // Exponents spread over the half range and a bit beyond, random mantissas.
    const uint32_t exp = 100 + static_cast<uint32_t>(rng.uniform() * 45);
    const uint32_t mant = static_cast<uint32_t>(rng.uniform() * 8388608.0);
    const uint32_t sign = rng.uniform() < 0.5 ? 0x80000000u : 0;
    const float f = bits_f(sign | exp << 23 | mant);
    ASSERT_EQ(fp32_to_fp16(f), reference_fp16(f, positive)) << std::hexfloat << f;
  }
}

TEST(BFloat16, Conversions) {
  EXPECT_EQ(bf16_to_fp32(0x3F80), 1.0f);
  EXPECT_EQ(bf16_to_fp32(0xC040), -3.0f);
  EXPECT_EQ(bf16_to_fp32(0x7F80), std::numeric_limits<float>::infinity());
  EXPECT_EQ(std::bit_cast<uint32_t>(bf16_to_fp32(0x0001)), 0x00010000u);  // subnormal kept
  EXPECT_EQ(fp32_to_bf16(1.0f), 0x3F80);
  EXPECT_EQ(fp32_to_bf16(-0.0f), 0x8000);
  EXPECT_EQ(fp32_to_bf16(std::numeric_limits<float>::infinity()), 0x7F80);
  EXPECT_EQ(fp32_to_bf16(bits_f(0x3F808000u)), 0x3F80);  // tie, even stays
  EXPECT_EQ(fp32_to_bf16(bits_f(0x3F818000u)), 0x3F82);  // tie, odd rounds up
  EXPECT_EQ(fp32_to_bf16(bits_f(0x3F808001u)), 0x3F81);  // above the tie
  EXPECT_EQ(fp32_to_bf16(bits_f(0x00008000u)), 0x0000);  // subnormal tie to even
  EXPECT_EQ(fp32_to_bf16(bits_f(0x00018000u)), 0x0002);
  EXPECT_EQ(fp32_to_bf16(bits_f(0x7F7FFFFFu)), 0x7F80);  // FLT_MAX rounds to infinity
  EXPECT_EQ(fp32_to_bf16(bits_f(0x7F800001u)), 0x7FC0);  // signalling NaN -> quiet NaN, not inf
  EXPECT_EQ(fp32_to_bf16(bits_f(0xFFC00000u)), 0xFFC0);
  for (uint32_t b = 0; b < 0x10000; ++b) {
    const float f = bf16_to_fp32(static_cast<uint16_t>(b));
    if (!std::isnan(f)) {
      ASSERT_EQ(fp32_to_bf16(f), b) << b;
    }
  }
}

}  // namespace
}  // namespace cellserve
