// quantize_row on inputs whose encoding can be worked out by hand (the rules of llama.cpp's
// quantize_row_*_ref), plus byte digests that pin every encoder's exact output.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "base/half.h"
#include "engine/quant/block_types.h"
#include "engine/quant/quantize.h"
#include "tests/engine/quant/quant_test_util.h"

namespace cellserve::engine {
namespace {

template <typename Block>
Block encode_one(GgmlType type, const std::vector<float>& x) {
  Block b;
  EXPECT_EQ(x.size(), static_cast<size_t>(ggml_block_size(type)));
  quantize_row(type, x.data(), &b, static_cast<int64_t>(x.size()));
  return b;
}

// x_j = j/2 - 8: amax 8, d = 8/127 -> fp16 0x2C08 (0.06298828); q = roundf(x * 127/8).
TEST(QuantizeKnownValues, Q8_0) {
  std::vector<float> x(32);
  for (int j = 0; j < 32; ++j) x[j] = 0.5f * j - 8.0f;
  const auto b = encode_one<BlockQ8_0>(GgmlType::Q8_0, x);
  EXPECT_EQ(b.d, 0x2C08);
  EXPECT_EQ(b.qs[0], -127);
  EXPECT_EQ(b.qs[16], 0);
  EXPECT_EQ(b.qs[17], 8);    // 0.5 * 15.875 = 7.9375
  EXPECT_EQ(b.qs[18], 16);   // 15.875 -> 16
  EXPECT_EQ(b.qs[31], 119);  // 7.5 * 15.875 = 119.06
  EXPECT_EQ(b.qs[15], -8);   // -0.5 * 15.875 = -7.9375
  // roundf rounds halves away from zero: x = 0.5 * d_exact gives q = +-1, not 0.
  std::vector<float> halves(32, 0.0f);
  halves[0] = 127.0f;
  halves[1] = 0.5f;
  halves[2] = -0.5f;
  halves[3] = 1.5f;
  const auto h = encode_one<BlockQ8_0>(GgmlType::Q8_0, halves);
  EXPECT_EQ(h.d, fp32_to_fp16(1.0f));
  EXPECT_EQ(h.qs[1], 1);
  EXPECT_EQ(h.qs[2], -1);
  EXPECT_EQ(h.qs[3], 2);
}

// Q4_0 maps the signed extreme to level 0 (value -8 d): a negative extreme gives d > 0, a
// positive one d < 0. x_j = (j - 16)/4: max = -4, d = 0.5, q = min(15, trunc(x/d + 8.5)).
TEST(QuantizeKnownValues, Q4_0) {
  std::vector<float> x(32);
  for (int j = 0; j < 32; ++j) x[j] = 0.25f * (j - 16);
  const auto b = encode_one<BlockQ4_0>(GgmlType::Q4_0, x);
  EXPECT_EQ(b.d, 0x3800);  // +0.5
  for (int j = 0; j < 32; ++j) {
    const int expected = std::min(15, (j + 1) / 2);  // trunc(j/2 + 0.5)
    const int q = j < 16 ? b.qs[j] & 0xF : b.qs[j - 16] >> 4;
    EXPECT_EQ(q, expected) << j;
  }
  for (float& v : x) v = -v;  // now the extreme is +4
  const auto n = encode_one<BlockQ4_0>(GgmlType::Q4_0, x);
  EXPECT_EQ(n.d, 0xB800);       // -0.5
  EXPECT_EQ(n.qs[0] & 0xF, 0);  // x = +4 -> level 0 -> -8 * -0.5 = 4
}

// Q4_1: d = (max - min)/15, m = min. x = 0..31 step 0.1 scaled to [1, 4]: exact levels.
TEST(QuantizeKnownValues, Q4_1) {
  std::vector<float> x(32);
  for (int j = 0; j < 32; ++j) x[j] = 1.0f + 0.2f * static_cast<float>(j % 16);  // 1.0 .. 4.0
  const auto b = encode_one<BlockQ4_1>(GgmlType::Q4_1, x);
  EXPECT_EQ(fp16_to_fp32(b.m), 1.0f);
  EXPECT_EQ(b.d, fp32_to_fp16((4.0f - 1.0f) / 15));
  for (int j = 0; j < 16; ++j) {
    EXPECT_EQ(b.qs[j] & 0xF, j) << j;
    EXPECT_EQ(b.qs[j] >> 4, j) << j;
  }
}

// Q5_0: d = max / -16. x_j = j - 16 (max by magnitude: -16, d = 1): q = x + 16 = j exactly,
// so the 5th bit is set for j >= 16.
TEST(QuantizeKnownValues, Q5_0) {
  std::vector<float> x(32);
  for (int j = 0; j < 32; ++j) x[j] = static_cast<float>(j - 16);
  const auto b = encode_one<BlockQ5_0>(GgmlType::Q5_0, x);
  EXPECT_EQ(b.d, fp32_to_fp16(1.0f));
  for (int j = 0; j < 16; ++j) {
    EXPECT_EQ(b.qs[j] & 0xF, j);
    EXPECT_EQ(b.qs[j] >> 4, j);  // element j + 16 has level j + 16: low nibble j
  }
  EXPECT_EQ(b.qh[0], 0x00);
  EXPECT_EQ(b.qh[1], 0x00);
  EXPECT_EQ(b.qh[2], 0xFF);
  EXPECT_EQ(b.qh[3], 0xFF);
}

// Q5_1: x = 0..31 -> d = 1, m = 0, q = j.
TEST(QuantizeKnownValues, Q5_1) {
  std::vector<float> x(32);
  for (int j = 0; j < 32; ++j) x[j] = static_cast<float>(j);
  const auto b = encode_one<BlockQ5_1>(GgmlType::Q5_1, x);
  EXPECT_EQ(b.d, fp32_to_fp16(1.0f));
  EXPECT_EQ(b.m, fp32_to_fp16(0.0f));
  std::vector<float> y(32);
  dequantize_row(GgmlType::Q5_1, &b, y.data(), 32);
  EXPECT_EQ(y, x);
}

// Values that a type represents exactly come back exactly.
TEST(QuantizeKnownValues, RepresentableValuesAreExact) {
  // Q8_0 with amax 127: d = 1, every integer in [-127, 127] is a level.
  std::vector<float> x(32);
  for (int j = 0; j < 32; ++j) x[j] = static_cast<float>(127 - 8 * j);
  EXPECT_EQ(testing::round_trip(GgmlType::Q8_0, x), x);
  // IQ4_NL: the codebook itself, times 0.5.
  const int8_t kv[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};
  for (int j = 0; j < 32; ++j) x[j] = 0.5f * kv[j % 16];
  EXPECT_EQ(testing::round_trip(GgmlType::IQ4_NL, x), x);
}

// FNV-1a over the encoding of 4,096 exactly-generated values, per type. These pin the exact
// bytes (a change in any rounding step shows up here, with or without shared/testdata). For
// Q8_0, Q4_0, Q4_K, Q5_K, Q6_K, F16 and BF16 our encoders are proven byte-identical to
// llama-quantize on the testdata models (quant_testdata_test), so these digests are
// llama.cpp's output too; for the other types they guard against regressions.
uint64_t fnv1a(const std::vector<uint8_t>& bytes) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (uint8_t b : bytes) {
    h ^= b;
    h *= 0x100000001b3ull;
  }
  return h;
}

TEST(QuantizeKnownValues, ByteDigests) {
  struct Digest {
    GgmlType type;
    uint64_t fnv;
  };
  const Digest kDigests[] = {
      {GgmlType::F16, 0x841074d2069352e0ull},    {GgmlType::BF16, 0xcb549d77b1b97bc7ull},
      {GgmlType::Q8_0, 0x9d4ea6ee83cda8e9ull},   {GgmlType::Q8_1, 0x3c196789e643b68eull},
      {GgmlType::Q4_0, 0xc0bb66b5877ef72eull},   {GgmlType::Q4_1, 0x61e80c0472869ef6ull},
      {GgmlType::Q5_0, 0x067fe0fa5336f651ull},   {GgmlType::Q5_1, 0x644b2854870dda20ull},
      {GgmlType::Q2_K, 0x9198d5245c9977c5ull},   {GgmlType::Q3_K, 0x3106fd785f215e93ull},
      {GgmlType::Q4_K, 0x09765aca5ba351c5ull},   {GgmlType::Q5_K, 0x61246dae03e609bdull},
      {GgmlType::Q6_K, 0xd28f397d77bc8abdull},   {GgmlType::Q8_K, 0xd5e3b31065f07b02ull},
      {GgmlType::IQ4_NL, 0x3bcb7d6f11eb484full}, {GgmlType::IQ4_XS, 0x26aaf73f0bbce73cull},
  };
  testing::TestRng rng(2024);
  std::vector<float> x(4096);
  for (float& v : x) v = rng.exact_normal();
  for (const Digest& d : kDigests) {
    std::vector<uint8_t> q(ggml_row_size(d.type, 4096));
    quantize_row(d.type, x.data(), q.data(), 4096);
    EXPECT_EQ(fnv1a(q), d.fnv) << ggml_type_name(d.type) << std::hex << " got 0x" << fnv1a(q);
  }
}

}  // namespace
}  // namespace cellserve::engine
