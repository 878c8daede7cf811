// Every SIMD kernel table the host can run, checked against the scalar reference: activation
// converters bit for bit, dot products to rounding, tiles bit for bit against the table's own
// vec_dot, on random inputs, odd sizes and unaligned rows.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "base/half.h"
#include "engine/kernels/kernel_table.h"
#include "engine/kernels/reference/reference_kernels.h"
#include "engine/quant/quantize.h"

namespace cellserve::engine::kernels {
namespace {

const GgmlType kWeightTypes[] = {GgmlType::F32,  GgmlType::F16,  GgmlType::BF16, GgmlType::Q4_0,   GgmlType::Q4_1,
                                 GgmlType::Q5_0, GgmlType::Q5_1, GgmlType::Q8_0, GgmlType::IQ4_NL, GgmlType::Q2_K,
                                 GgmlType::Q3_K, GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K,   GgmlType::IQ4_XS};
const GgmlType kActivationTypes[] = {GgmlType::F32,  GgmlType::F16,  GgmlType::BF16,
                                     GgmlType::Q8_0, GgmlType::Q8_1, GgmlType::Q8_K};

std::vector<const KernelTable*> simd_tables() {
  std::vector<const KernelTable*> t = available_kernels();
  t.erase(t.begin());  // the reference itself
  return t;
}

std::string table_name(const ::testing::TestParamInfo<const KernelTable*>& info) {
  std::string s(info.param->isa);
  for (char& c : s)
    if (c == '-') c = '_';
  return s;
}

// Row lengths to try for a type: several blocks, an odd count of blocks, and for float types
// lengths that are not a multiple of any vector width.
std::vector<int64_t> lengths(GgmlType type) {
  const int64_t b = ggml_block_size(type);
  if (b == 1) return {1, 7, 33, 100, 256, 1000, 4096};
  return {b, 3 * b, 7 * b, 16 * b, 4096 / b * b};
}

std::vector<float> random_floats(int64_t n, std::mt19937& rng, float scale) {
  std::normal_distribution<float> normal(0.0f, scale);
  std::vector<float> v(static_cast<size_t>(n));
  for (auto& x : v) x = normal(rng);
  // An all-zero first block exercises the zero-scale path of the converters.
  if (n > 64) std::fill(v.begin(), v.begin() + 32, 0.0f);
  return v;
}

// A buffer whose data starts one byte past an aligned address: GGUF rows are only block aligned.
struct Unaligned {
  explicit Unaligned(size_t n) : storage(n + 64) {}
  std::byte* data() { return storage.data() + 1; }
  std::vector<std::byte> storage;
};

class IsaTest : public ::testing::TestWithParam<const KernelTable*> {};

TEST_P(IsaTest, ActivationConvertersMatchReferenceBitForBit) {
  const KernelTable& t = *GetParam();
  const KernelTable& ref = reference_kernels();
  std::mt19937 rng(1);
  for (GgmlType act : kActivationTypes) {
    ASSERT_NE(t.converter(act), nullptr) << ggml_type_name(act);
    for (int64_t n : lengths(act)) {
      const std::vector<float> x = random_floats(n, rng, 2.0f);
      const size_t bytes = ggml_row_size(act, n);
      std::vector<std::byte> want(bytes);
      Unaligned got(bytes);
      ref.converter(act)(x.data(), want.data(), n);
      t.converter(act)(x.data(), got.data(), n);
      EXPECT_EQ(std::memcmp(want.data(), got.data(), bytes), 0) << ggml_type_name(act) << " n=" << n;
    }
  }
}

TEST_P(IsaTest, DotProductsMatchReference) {
  const KernelTable& t = *GetParam();
  const KernelTable& ref = reference_kernels();
  std::mt19937 rng(2);
  for (GgmlType type : kWeightTypes) {
    const WeightKernels& k = t.for_weight(type);
    const WeightKernels& r = ref.for_weight(type);
    ASSERT_TRUE(k.supported) << ggml_type_name(type);
    ASSERT_EQ(k.activation_type, r.activation_type) << ggml_type_name(type);
    if (!can_quantize(type)) continue;
    for (int64_t n : lengths(type)) {
      const std::vector<float> w = random_floats(n, rng, 1.0f);
      const std::vector<float> a = random_floats(n, rng, 3.0f);
      Unaligned wq(ggml_row_size(type, n));
      Unaligned aq(ggml_row_size(k.activation_type, n) + 64);
      quantize_row(type, w.data(), wq.data(), n);
      ref.converter(k.activation_type)(a.data(), aq.data(), n);
      std::vector<float> wd(static_cast<size_t>(n));
      dequantize_row(type, wq.data(), wd.data(), n);
      double magnitude = 0.0;
      for (size_t i = 0; i < wd.size(); ++i) magnitude += std::fabs(static_cast<double>(wd[i]) * a[i]);
      const float want = r.vec_dot(n, wq.data(), aq.data());
      const float got = k.vec_dot(n, wq.data(), aq.data());
      // Integer sums are exact; only the order of float additions may differ (float types sum
      // in F32 lanes where the reference uses double).
      const bool float_type = ggml_block_size(type) == 1;
      EXPECT_NEAR(got, want, (float_type ? 1e-4 : 1e-5) * magnitude + 1e-5)
          << t.isa << " " << ggml_type_name(type) << " n=" << n;
    }
  }
}

TEST_P(IsaTest, TilesEqualVecDotBitForBit) {
  const KernelTable& t = *GetParam();
  std::mt19937 rng(3);
  int tested = 0;
  for (GgmlType type : kWeightTypes) {
    const WeightKernels& k = t.for_weight(type);
    if (k.tile_dot == nullptr || !can_quantize(type)) continue;
    ASSERT_GE(k.tile_rows, 1);
    ASSERT_GE(k.tile_cols, 1);
    ++tested;
    for (int64_t n : lengths(type)) {
      const size_t w_row = ggml_row_size(type, n) + 3;  // padded strides: rows are not contiguous
      const size_t a_row = ggml_row_size(k.activation_type, n) + 5;
      Unaligned wq(w_row * static_cast<size_t>(k.tile_rows));
      Unaligned aq(a_row * static_cast<size_t>(k.tile_cols));
      for (int r = 0; r < k.tile_rows; ++r)
        quantize_row(type, random_floats(n, rng, 1.0f).data(), wq.data() + r * w_row, n);
      for (int c = 0; c < k.tile_cols; ++c)
        t.converter(k.activation_type)(random_floats(n, rng, 2.0f).data(), aq.data() + c * a_row, n);
      const int64_t y_stride = k.tile_rows + 2;
      // The whole tile, then (where the table has them) the tiles of fewer rows.
      const int fewest = k.tile_dot_rows != nullptr ? 1 : k.tile_rows;
      for (int rows = k.tile_rows; rows >= fewest; --rows) {
        std::vector<float> y(static_cast<size_t>(y_stride * k.tile_cols), -1.0f);
        if (rows == k.tile_rows) {
          k.tile_dot(n, wq.data(), w_row, aq.data(), a_row, y.data(), y_stride);
        } else {
          k.tile_dot_rows(rows, n, wq.data(), w_row, aq.data(), a_row, y.data(), y_stride);
        }
        for (int c = 0; c < k.tile_cols; ++c) {
          for (int r = 0; r < rows; ++r) {
            const float want = k.vec_dot(n, wq.data() + r * w_row, aq.data() + c * a_row);
            EXPECT_EQ(std::bit_cast<uint32_t>(y[static_cast<size_t>(c * y_stride + r)]), std::bit_cast<uint32_t>(want))
                << t.isa << " " << ggml_type_name(type) << " n=" << n << " rows=" << rows << " r=" << r << " c=" << c;
          }
          for (int64_t r = rows; r < y_stride; ++r) EXPECT_EQ(y[static_cast<size_t>(c * y_stride + r)], -1.0f);
        }
      }
    }
  }
  if (tested == 0) GTEST_SKIP() << t.isa << " has no tile kernels";
}

PackedDotFn packed_reference_dot(GgmlType type) {
  switch (type) {
    case GgmlType::Q4_0:
      return reference::packed_dot_q4_0;
    case GgmlType::Q8_0:
      return reference::packed_dot_q8_0;
    case GgmlType::Q4_K:
      return reference::packed_dot_q4_k;
    case GgmlType::Q6_K:
      return reference::packed_dot_q6_k;
    case GgmlType::BF16:
      return reference::packed_dot_bf16;
    default:
      return nullptr;
  }
}

// Packed groups: the table's packed_dot equals the scalar reference on the same packed bytes bit
// for bit, for every column count, and agrees with the unpacked vec_dot to rounding. Rows and
// activation rows are unaligned and padded; nothing is written outside the 8 x cols results.
TEST_P(IsaTest, PackedDotsMatchReferenceBitForBit) {
  const KernelTable& t = *GetParam();
  const KernelTable& ref = reference_kernels();
  std::mt19937 rng(5);
  int tested = 0;
  for (GgmlType type : kWeightTypes) {
    const WeightKernels& k = t.for_weight(type);
    if (k.packed_dot == nullptr) continue;
    ASSERT_NE(k.pack, nullptr);
    ASSERT_GT(k.packed_block_bytes, 0);
    const auto reference_dot = packed_reference_dot(type);
    ASSERT_NE(reference_dot, nullptr) << ggml_type_name(type);
    ++tested;
    for (int64_t n : lengths(type)) {
      if (n % k.packed_n_multiple != 0) continue;
      const size_t w_row = ggml_row_size(type, n);
      const size_t rows_stride = w_row + 7;
      Unaligned rows(rows_stride * kPackedRows);
      for (int r = 0; r < kPackedRows; ++r)
        quantize_row(type, random_floats(n, rng, 1.0f).data(), rows.data() + r * rows_stride, n);
      Unaligned packed(static_cast<size_t>(n / ggml_block_size(type) * k.packed_block_bytes));
      k.pack(n, rows.data(), rows_stride, packed.data());
      const GgmlType act = k.activation_type;
      const size_t a_row = ggml_row_size(act, n) + 5;
      const int64_t n_blocks = n / 32;
      Unaligned aq(a_row * kPackedMaxCols);
      std::vector<int32_t> sums(static_cast<size_t>(n_blocks * kPackedMaxCols));
      for (int c = 0; c < kPackedMaxCols; ++c) {
        t.converter(act)(random_floats(n, rng, 2.0f).data(), aq.data() + c * a_row, n);
        if (act == GgmlType::Q8_0) activation_block_sums(aq.data() + c * a_row, n, sums.data() + c * n_blocks);
      }
      for (int cols = 1; cols <= kPackedMaxCols; ++cols) {
        const int64_t y_stride = kPackedRows + 3;
        std::vector<float> got(static_cast<size_t>(y_stride * kPackedMaxCols), -1.0f);
        std::vector<float> want(got.size(), -1.0f);
        k.packed_dot(n, packed.data(), aq.data(), a_row, sums.data(), n_blocks, cols, got.data(), y_stride);
        reference_dot(n, packed.data(), aq.data(), a_row, sums.data(), n_blocks, cols, want.data(), y_stride);
        for (size_t i = 0; i < got.size(); ++i) {
          EXPECT_EQ(std::bit_cast<uint32_t>(got[i]), std::bit_cast<uint32_t>(want[i]))
              << t.isa << " " << ggml_type_name(type) << " n=" << n << " cols=" << cols << " i=" << i;
        }
        for (int c = 0; c < cols; ++c) {
          for (int r = 0; r < kPackedRows; ++r) {
            const float unpacked =
                ref.for_weight(type).vec_dot(n, rows.data() + r * rows_stride, aq.data() + c * a_row);
            EXPECT_NEAR(got[static_cast<size_t>(c * y_stride + r)], unpacked, 1e-4f * (1.0f + std::fabs(unpacked)))
                << t.isa << " " << ggml_type_name(type) << " n=" << n << " r=" << r << " c=" << c;
          }
          for (int64_t r = kPackedRows; r < y_stride; ++r) EXPECT_EQ(got[static_cast<size_t>(c * y_stride + r)], -1.0f);
        }
        for (size_t i = static_cast<size_t>(cols * y_stride); i < got.size(); ++i) EXPECT_EQ(got[i], -1.0f);
      }
    }
  }
  if (tested == 0) GTEST_SKIP() << t.isa << " packs no weight type";
}

// Pair kernels: two adjacent packed groups in one call give the two groups' packed_dot results bit
// for bit (rows 0-7 from the first group, 8-15 from the second), for every column count, and
// write nothing else.
TEST_P(IsaTest, PackedDotPairsEqualTwoPackedDots) {
  const KernelTable& t = *GetParam();
  std::mt19937 rng(6);
  int tested = 0;
  for (GgmlType type : kWeightTypes) {
    const WeightKernels& k = t.for_weight(type);
    if (k.packed_dot_pair == nullptr) continue;
    ASSERT_NE(k.packed_dot, nullptr);
    ++tested;
    for (int64_t n : lengths(type)) {
      if (n % k.packed_n_multiple != 0) continue;
      const size_t w_row = ggml_row_size(type, n);
      const auto group_bytes = static_cast<size_t>(n / ggml_block_size(type) * k.packed_block_bytes);
      Unaligned rows(w_row * 2 * kPackedRows);
      for (int r = 0; r < 2 * kPackedRows; ++r)
        quantize_row(type, random_floats(n, rng, 1.0f).data(), rows.data() + r * w_row, n);
      Unaligned packed(2 * group_bytes);
      k.pack(n, rows.data(), w_row, packed.data());
      k.pack(n, rows.data() + kPackedRows * w_row, w_row, packed.data() + group_bytes);
      const GgmlType act = k.activation_type;
      const size_t a_row = ggml_row_size(act, n) + 5;
      const int64_t n_blocks = n / 32;
      Unaligned aq(a_row * kPackedMaxCols);
      std::vector<int32_t> sums(static_cast<size_t>(n_blocks * kPackedMaxCols));
      for (int c = 0; c < kPackedMaxCols; ++c) {
        t.converter(act)(random_floats(n, rng, 2.0f).data(), aq.data() + c * a_row, n);
        if (act == GgmlType::Q8_0) activation_block_sums(aq.data() + c * a_row, n, sums.data() + c * n_blocks);
      }
      for (int cols = 1; cols <= kPackedMaxCols; ++cols) {
        const int64_t y_stride = 2 * kPackedRows + 3;
        std::vector<float> got(static_cast<size_t>(y_stride * kPackedMaxCols), -1.0f);
        std::vector<float> want(got.size(), -1.0f);
        k.packed_dot_pair(n, packed.data(), aq.data(), a_row, sums.data(), n_blocks, cols, got.data(), y_stride);
        k.packed_dot(n, packed.data(), aq.data(), a_row, sums.data(), n_blocks, cols, want.data(), y_stride);
        k.packed_dot(n, packed.data() + group_bytes, aq.data(), a_row, sums.data(), n_blocks, cols,
                     want.data() + kPackedRows, y_stride);
        for (size_t i = 0; i < got.size(); ++i) {
          EXPECT_EQ(std::bit_cast<uint32_t>(got[i]), std::bit_cast<uint32_t>(want[i]))
              << t.isa << " " << ggml_type_name(type) << " n=" << n << " cols=" << cols << " i=" << i;
        }
      }
    }
  }
  if (tested == 0) GTEST_SKIP() << t.isa << " has no pair kernel";
}

// Rounding through F16 (the attention's queries) equals the reference's bit for bit, ties,
// subnormals, overflow to infinity and NaN included, at every length (vector body and tail).
TEST_P(IsaTest, RoundF16MatchesReferenceBitForBit) {
  const KernelTable& t = *GetParam();
  ASSERT_NE(t.round_f16, nullptr);
  std::mt19937 rng(7);
  std::vector<float> x = random_floats(1000, rng, 3.0f);
  const float specials[] = {0.0f,
                            -0.0f,
                            1.0f + 0x1p-11f,
                            1.0f + 0x1p-11f + 0x1p-12f,
                            65504.0f,
                            65520.0f,
                            -70000.0f,
                            0x1p-24f,
                            0x1p-25f,
                            0x1.8p-25f,
                            0x1p-15f + 0x1p-30f,
                            std::numeric_limits<float>::infinity(),
                            -std::numeric_limits<float>::infinity(),
                            std::numeric_limits<float>::quiet_NaN(),
                            1e-30f,
                            3.14159f};
  for (size_t i = 0; i < std::size(specials); ++i) x[i * 37] = specials[i];
  for (int64_t n : {1, 7, 8, 9, 33, 1000}) {
    std::vector<float> got(static_cast<size_t>(n), -1.0f);
    std::vector<float> want(got.size(), -1.0f);
    t.round_f16(x.data(), got.data(), n);
    reference_kernels().round_f16(x.data(), want.data(), n);
    for (int64_t i = 0; i < n; ++i) {
      const auto k = static_cast<size_t>(i);
      if (std::isnan(want[k])) {
        EXPECT_TRUE(std::isnan(got[k])) << t.isa << " i=" << i;
      } else {
        EXPECT_EQ(std::bit_cast<uint32_t>(got[k]), std::bit_cast<uint32_t>(want[k])) << t.isa << " x=" << x[k];
      }
    }
  }
  std::vector<float> in_place(x.begin(), x.begin() + 100);
  t.round_f16(in_place.data(), in_place.data(), 100);
  for (size_t i = 0; i < in_place.size(); ++i) {
    if (std::isnan(in_place[i])) continue;
    EXPECT_EQ(in_place[i], fp16_to_fp32(fp32_to_fp16(x[i]))) << i;
  }
}

TEST_P(IsaTest, ElementwiseKernelsMatchReference) {
  const KernelTable& t = *GetParam();
  const KernelTable& ref = reference_kernels();
  ASSERT_NE(t.axpy_f16, nullptr);
  ASSERT_NE(t.swiglu, nullptr);
  std::mt19937 rng(4);
  for (int64_t n : {1, 7, 33, 128, 1000}) {
    std::vector<uint16_t> x(static_cast<size_t>(n));
    for (float v : random_floats(n, rng, 1.0f)) x.push_back(fp32_to_fp16(v));
    x.erase(x.begin(), x.begin() + n);
    std::vector<float> y0 = random_floats(n, rng, 1.0f);
    std::vector<float> y1 = y0;
    ref.axpy_f16(n, 0.37f, x.data(), y0.data());
    t.axpy_f16(n, 0.37f, x.data(), y1.data());
    for (int64_t i = 0; i < n; ++i) EXPECT_NEAR(y1[static_cast<size_t>(i)], y0[static_cast<size_t>(i)], 1e-6f) << i;

    // Gates span the range where silu saturates, including large magnitudes.
    std::vector<float> gate = random_floats(n, rng, 6.0f);
    if (n > 3) gate[0] = 90.0f, gate[1] = -90.0f, gate[2] = 0.0f;
    const std::vector<float> up = random_floats(n, rng, 1.0f);
    std::vector<float> h0(static_cast<size_t>(n)), h1(static_cast<size_t>(n));
    ref.swiglu(n, gate.data(), up.data(), h0.data());
    t.swiglu(n, gate.data(), up.data(), h1.data());
    for (int64_t i = 0; i < n; ++i) {
      const float want = h0[static_cast<size_t>(i)];
      EXPECT_NEAR(h1[static_cast<size_t>(i)], want, 1e-5f * std::fabs(want) + 1e-7f) << "gate " << gate[i];
    }
    // In place (h aliases gate), as the models call it.
    std::vector<float> g2 = gate;
    t.swiglu(n, g2.data(), up.data(), g2.data());
    EXPECT_EQ(g2, h1);
  }
}

// RMS norm: the same bits as the reference for any row count (8-row groups and the rest) and
// length (8-element steps and the tail), with and without weights, in place and not.
TEST_P(IsaTest, RmsNormEqualsReferenceBitForBit) {
  const KernelTable& t = *GetParam();
  const KernelTable& ref = reference_kernels();
  ASSERT_NE(t.rms_norm, nullptr);
  std::mt19937 rng(6);
  for (int64_t rows : {1, 3, 8, 9, 17}) {
    for (int64_t n : {1, 7, 8, 33, 128, 1000}) {
      // Magnitudes over 2^-30..2^30: the double sums of the squares then round, so a different
      // order of additions shows.
      std::vector<float> x = random_floats(rows * n, rng, 3.0f);
      std::uniform_int_distribution<int> exponent(-30, 30);
      for (float& v : x) v = std::ldexp(v, exponent(rng));
      const std::vector<float> w = random_floats(n, rng, 1.5f);
      for (const float* wp : {w.data(), static_cast<const float*>(nullptr)}) {
        std::vector<float> want(x.size()), got(x.size(), -1.0f);
        ref.rms_norm(x.data(), wp, want.data(), rows, n, 1e-6f);
        t.rms_norm(x.data(), wp, got.data(), rows, n, 1e-6f);
        std::vector<float> in_place = x;
        t.rms_norm(in_place.data(), wp, in_place.data(), rows, n, 1e-6f);
        for (size_t i = 0; i < x.size(); ++i) {
          ASSERT_EQ(std::bit_cast<uint32_t>(got[i]), std::bit_cast<uint32_t>(want[i]))
              << t.isa << " rows=" << rows << " n=" << n << " weights=" << (wp != nullptr) << " i=" << i;
          ASSERT_EQ(std::bit_cast<uint32_t>(in_place[i]), std::bit_cast<uint32_t>(want[i])) << "in place, i=" << i;
        }
      }
    }
  }
}

// The Gated DeltaNet's conv1d + SiLU: within rounding of the reference (fma and the tables' exp),
// and a channel's value the same bits whatever range of channels it is computed in (threads
// split the channels).
TEST_P(IsaTest, CausalConvMatchesReferenceAndIgnoresTheChannelSplit) {
  const KernelTable& t = *GetParam();
  const KernelTable& ref = reference_kernels();
  ASSERT_NE(t.causal_conv1d_silu_channels, nullptr);
  std::mt19937 rng(11);
  for (int64_t channels : {5, 8, 37, 160}) {
    for (int64_t tokens : {1, 3, 9}) {
      const int64_t kernel = 4;
      const int64_t stride = channels + 3;  // rows of a wider buffer, as the model passes them
      std::vector<float> x = random_floats(tokens * stride, rng, 2.0f);
      if (channels > 4) x[0] = 60.0f, x[1] = -60.0f;  // silu's saturated ends
      const std::vector<float> taps =
          reference::conv_taps_by_tap(random_floats(channels * kernel, rng, 1.0f).data(), channels, kernel);
      const std::vector<float> window = random_floats((kernel - 1) * channels, rng, 2.0f);
      std::vector<float> want(static_cast<size_t>(tokens * channels)), got(want.size()), split(want.size());
      ref.causal_conv1d_silu_channels(x.data(), stride, tokens, channels, 0, channels, taps.data(), kernel,
                                      window.data(), want.data());
      t.causal_conv1d_silu_channels(x.data(), stride, tokens, channels, 0, channels, taps.data(), kernel, window.data(),
                                    got.data());
      for (size_t i = 0; i < want.size(); ++i) {
        EXPECT_NEAR(got[i], want[i], 2e-6f * std::fabs(want[i]) + 1e-6f) << channels << " channels, value " << i;
      }
      // Uneven ranges: 3, then 11, then the rest.
      for (int64_t c0 = 0; c0 < channels;) {
        const int64_t c1 = std::min(channels, c0 + (c0 == 0 ? 3 : 11));
        t.causal_conv1d_silu_channels(x.data(), stride, tokens, channels, c0, c1, taps.data(), kernel, window.data(),
                                      split.data());
        c0 = c1;
      }
      for (size_t i = 0; i < got.size(); ++i) {
        ASSERT_EQ(std::bit_cast<uint32_t>(split[i]), std::bit_cast<uint32_t>(got[i]))
            << channels << " channels, value " << i;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Host, IsaTest, ::testing::ValuesIn(simd_tables()), table_name);
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(IsaTest);

// Attention kernels over F16 keys and values: bit for bit against the reference for 1..5 query
// rows (and 17, past the values kernel's row block), cell counts around the kernels' cell block,
// and head sizes of 8 to 256.
TEST_P(IsaTest, AttentionKernelsMatchReferenceBitForBit) {
  const KernelTable& t = *GetParam();
  if (t.attn_scores_f16 == nullptr || t.attn_softmax_f16 == nullptr || t.attn_values_f16 == nullptr)
    GTEST_SKIP() << t.isa << " has no attention kernels";
  std::mt19937 rng(7);
  const auto expect_same = [&](const std::vector<float>& got, const std::vector<float>& want, const std::string& what) {
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) {
      ASSERT_EQ(std::bit_cast<uint32_t>(got[i]), std::bit_cast<uint32_t>(want[i]))
          << t.isa << " " << what << " i=" << i;
    }
  };
  for (int64_t head_dim : {8, 24, 64, 72, 128, 256}) {
    for (int64_t n_cells : {1, 3, 4, 9, 63, 130}) {
      std::vector<std::vector<uint16_t>> k(static_cast<size_t>(n_cells)), v(static_cast<size_t>(n_cells));
      std::vector<const uint16_t*> kp, vp;
      for (int64_t j = 0; j < n_cells; ++j) {
        for (float x : random_floats(head_dim, rng, 1.0f)) k[static_cast<size_t>(j)].push_back(fp32_to_fp16(x));
        for (float x : random_floats(head_dim, rng, 1.0f)) v[static_cast<size_t>(j)].push_back(fp32_to_fp16(x));
        kp.push_back(k[static_cast<size_t>(j)].data());
        vp.push_back(v[static_cast<size_t>(j)].data());
      }
      for (int n_q : {1, 2, 3, 4, 5, 17}) {
        const std::string where = "head_dim=" + std::to_string(head_dim) + " cells=" + std::to_string(n_cells) +
                                  " n_q=" + std::to_string(n_q);
        std::vector<float> q = random_floats(head_dim * n_q, rng, 1.0f);
        for (float& x : q) x = fp16_to_fp32(fp32_to_fp16(x));
        const int64_t stride = n_cells + 2;
        std::vector<float> got(static_cast<size_t>(stride * n_q), -1.0f), want(got.size(), -1.0f);
        t.attn_scores_f16(head_dim, n_q, q.data(), head_dim, n_cells, kp.data(), got.data(), stride);
        reference::attn_scores_f16(head_dim, n_q, q.data(), head_dim, n_cells, kp.data(), want.data(), stride);
        expect_same(got, want, "scores " + where);

        // Softmax of each row, with scores spread as a long prompt's (tens apart, some past the
        // exp's cut-off) and the scale of head size 128.
        std::vector<uint16_t> p_got(got.size(), 0xffff), p_want(got.size(), 0xffff);
        for (int i = 0; i < n_q; ++i) {
          float* row_got = got.data() + i * stride;
          for (int64_t j = 0; j < n_cells; ++j) row_got[j] *= static_cast<float>(1 + (j % 7) * 15);
          std::copy_n(row_got, n_cells, want.data() + i * stride);
          t.attn_softmax_f16(n_cells, 0.0883883f, row_got, p_got.data() + i * stride);
          reference::attn_softmax_f16(n_cells, 0.0883883f, want.data() + i * stride, p_want.data() + i * stride);
        }
        expect_same(got, want, "softmax exps " + where);
        ASSERT_EQ(p_got, p_want) << t.isa << " softmax probabilities " << where;

        // Weighted sums, whole and split at a cell, into rows that start non-zero.
        const int64_t out_stride = head_dim + 3;
        std::vector<float> o_got = random_floats(out_stride * n_q, rng, 1.0f), o_want = o_got;
        t.attn_values_f16(head_dim, n_q, p_got.data(), stride, n_cells, vp.data(), o_got.data(), out_stride);
        reference::attn_values_f16(head_dim, n_q, p_got.data(), stride, n_cells, vp.data(), o_want.data(), out_stride);
        expect_same(o_got, o_want, "values " + where);
        std::vector<float> o_split = random_floats(out_stride * n_q, rng, 1.0f), o_whole = o_split;
        const int64_t m = n_cells / 3;
        t.attn_values_f16(head_dim, n_q, p_got.data(), stride, m, vp.data(), o_split.data(), out_stride);
        t.attn_values_f16(head_dim, n_q, p_got.data() + m, stride, n_cells - m, vp.data() + m, o_split.data(),
                          out_stride);
        t.attn_values_f16(head_dim, n_q, p_got.data(), stride, n_cells, vp.data(), o_whole.data(), out_stride);
        expect_same(o_split, o_whole, "values split " + where);
      }
    }
  }
}

// The exp of the softmax against the library's, over the range a softmax feeds it.
TEST(AttentionReference, ExpIsWithinTwoUlpsOfTheLibrary) {
  for (float x = -90.0f; x <= 0.0f; x += 0.00137f) {
    const float got = reference::attn_exp(x);
    if (x < reference::kAttnExpLowest) {
      EXPECT_EQ(got, 0.0f) << x;
      continue;
    }
    const double want = std::exp(static_cast<double>(x));
    EXPECT_NEAR(got, want, 2.5e-7 * want) << x;
  }
  EXPECT_EQ(reference::attn_exp(0.0f), 1.0f);
  EXPECT_EQ(reference::attn_exp(-INFINITY), 0.0f);
  EXPECT_EQ(reference::attn_exp(NAN), 0.0f);
}

// The packed layout itself, on every host: packing then the reference packed_dot gives each
// row's unpacked dot product to rounding (only the order of the per-block float sums differs).
TEST(PackedReference, PackedDotAgreesWithVecDot) {
  std::mt19937 rng(6);
  struct Packing {
    GgmlType type;
    PackFn pack;
    int block_bytes;
  };
  for (const Packing& packing : {Packing{GgmlType::Q4_0, reference::pack_q4_0, reference::kPackedQ4_0Bytes},
                                 Packing{GgmlType::Q8_0, reference::pack_q8_0, reference::kPackedQ8_0Bytes},
                                 Packing{GgmlType::Q4_K, reference::pack_q4_k, reference::kPackedQ4_KBytes},
                                 Packing{GgmlType::Q6_K, reference::pack_q6_k, reference::kPackedQ6_KBytes},
                                 Packing{GgmlType::BF16, reference::pack_bf16, reference::kPackedBf16Bytes}}) {
    const GgmlType type = packing.type;
    const PackFn pack = packing.pack;
    const int block_bytes = packing.block_bytes;
    const PackedDotFn dot = packed_reference_dot(type);
    ASSERT_NE(dot, nullptr) << ggml_type_name(type);
    const GgmlType act = reference_kernels().for_weight(type).activation_type;
    for (int64_t n : {256, 768, 1024}) {
      const size_t w_row = ggml_row_size(type, n);
      std::vector<std::byte> rows(w_row * kPackedRows);
      std::vector<std::byte> packed(static_cast<size_t>(n / ggml_block_size(type) * block_bytes));
      for (int r = 0; r < kPackedRows; ++r)
        quantize_row(type, random_floats(n, rng, 1.0f).data(), rows.data() + r * w_row, n);
      pack(n, rows.data(), w_row, packed.data());
      std::vector<std::byte> aq(ggml_row_size(act, n));
      reference_kernels().converter(act)(random_floats(n, rng, 2.0f).data(), aq.data(), n);
      std::vector<int32_t> sums(static_cast<size_t>(n / 32));
      if (act == GgmlType::Q8_0) {
        activation_block_sums(aq.data(), n, sums.data());
        int32_t direct = 0;
        for (int64_t j = 0; j < 32; ++j) direct += static_cast<int8_t>(aq[2 + static_cast<size_t>(j)]);
        EXPECT_EQ(sums[0], direct);
      }
      float y[kPackedRows];
      dot(n, packed.data(), aq.data(), 0, sums.data(), 0, 1, y, 0);
      for (int r = 0; r < kPackedRows; ++r) {
        const float want = reference_kernels().for_weight(type).vec_dot(n, rows.data() + r * w_row, aq.data());
        EXPECT_NEAR(y[r], want, 1e-4f * (1.0f + std::fabs(want))) << ggml_type_name(type) << " n=" << n << " r=" << r;
      }
    }
  }
}

TEST(KernelDispatch, ReferenceIsAlwaysAvailableAndFirst) {
  const auto tables = available_kernels();
  ASSERT_FALSE(tables.empty());
  EXPECT_EQ(tables.front()->isa, "generic");
  for (const KernelTable* t : tables) {
    auto found = kernels_for_isa(t->isa);
    ASSERT_TRUE(found.ok()) << t->isa;
    EXPECT_EQ(*found, t);
  }
  auto bad = kernels_for_isa("avx9000");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("generic"), std::string::npos) << bad.status().message();
}

}  // namespace
}  // namespace cellserve::engine::kernels
