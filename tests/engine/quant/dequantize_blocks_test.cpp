// Hand-built blocks with known contents, decoded by dequantize_row. Blocks are written as raw
// bytes at ggml-common.h's offsets, and the expected values come from a per-element reading
// of the layout (block_types.h), independent of the decoders' loop structure. A few values
// are also spelled out literally.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "base/half.h"
#include "engine/quant/quant_internal.h"
#include "engine/quant/quantize.h"
#include "tests/engine/quant/quant_test_util.h"

namespace cellserve::engine {
namespace {

using Bytes = std::vector<uint8_t>;

void put_u16(Bytes& b, size_t off, uint16_t v) {
  b[off] = static_cast<uint8_t>(v & 0xFF);
  b[off + 1] = static_cast<uint8_t>(v >> 8);
}

void put_f16(Bytes& b, size_t off, float v) { put_u16(b, off, fp32_to_fp16(v)); }

void fill_random(Bytes& b, size_t off, size_t n, uint32_t seed) {
  testing::TestRng rng(seed);
  for (size_t i = 0; i < n; ++i) b[off + i] = static_cast<uint8_t>(rng.uniform() * 256.0);
}

std::vector<float> decode(GgmlType type, const Bytes& block) {
  EXPECT_EQ(block.size(), ggml_type_size(type));
  std::vector<float> y(static_cast<size_t>(ggml_block_size(type)));
  dequantize_row(type, block.data(), y.data(), ggml_block_size(type));
  return y;
}

const int8_t kIq4[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};

TEST(DequantizeBlocks, Q4_0) {
  Bytes b(18);
  put_f16(b, 0, 0.5f);
  for (int j = 0; j < 16; ++j) b[2 + j] = static_cast<uint8_t>(j | (15 - j) << 4);
  const auto y = decode(GgmlType::Q4_0, b);
  for (int j = 0; j < 16; ++j) {
    EXPECT_EQ(y[j], 0.5f * (j - 8)) << j;
    EXPECT_EQ(y[16 + j], 0.5f * (7 - j)) << j;
  }
  EXPECT_EQ(y[0], -4.0f);
  EXPECT_EQ(y[15], 3.5f);
  EXPECT_EQ(y[16], 3.5f);
  EXPECT_EQ(y[31], -4.0f);
}

TEST(DequantizeBlocks, Q4_1) {
  Bytes b(20);
  put_f16(b, 0, 0.25f);
  put_f16(b, 2, -1.0f);
  for (int j = 0; j < 16; ++j) b[4 + j] = static_cast<uint8_t>(j | (15 - j) << 4);
  const auto y = decode(GgmlType::Q4_1, b);
  for (int j = 0; j < 16; ++j) {
    EXPECT_EQ(y[j], 0.25f * j - 1.0f) << j;
    EXPECT_EQ(y[16 + j], 0.25f * (15 - j) - 1.0f) << j;
  }
  EXPECT_EQ(y[31], -1.0f);
  EXPECT_EQ(y[15], 2.75f);
}

// Element e of a Q5 block: low nibble from qs, bit 4 from bit e of the u32 qh.
int q5_level(const Bytes& b, size_t qh_off, size_t qs_off, int e) {
  const uint32_t qh = b[qh_off] | b[qh_off + 1] << 8 | b[qh_off + 2] << 16 | static_cast<uint32_t>(b[qh_off + 3]) << 24;
  const int low = e < 16 ? b[qs_off + e] & 0xF : b[qs_off + e - 16] >> 4;
  return low | static_cast<int>((qh >> e) & 1) << 4;
}

TEST(DequantizeBlocks, Q5_0) {
  Bytes b(22);
  put_f16(b, 0, 1.0f);
  const uint8_t qh[4] = {0xAA, 0x0F, 0xF0, 0x55};
  std::memcpy(&b[2], qh, 4);
  for (int j = 0; j < 16; ++j) b[6 + j] = static_cast<uint8_t>(j | (15 - j) << 4);
  const auto y = decode(GgmlType::Q5_0, b);
  for (int e = 0; e < 32; ++e) EXPECT_EQ(y[e], static_cast<float>(q5_level(b, 2, 6, e) - 16)) << e;
  EXPECT_EQ(y[0], -16.0f);   // qs low 0, qh bit 0 = 0
  EXPECT_EQ(y[1], 1.0f);     // qs low 1, qh bit 1 = 1: 17 - 16
  EXPECT_EQ(y[16], -1.0f);   // qs high 15, qh bit 16 = 0
  EXPECT_EQ(y[31], -16.0f);  // qs high 0, qh bit 31 = 0 (0x55 >> 7)
}

TEST(DequantizeBlocks, Q5_1) {
  Bytes b(24);
  put_f16(b, 0, 0.5f);
  put_f16(b, 2, 2.0f);
  const uint8_t qh[4] = {0x0F, 0xF0, 0x33, 0xCC};
  std::memcpy(&b[4], qh, 4);
  fill_random(b, 8, 16, 51);
  const auto y = decode(GgmlType::Q5_1, b);
  for (int e = 0; e < 32; ++e) EXPECT_EQ(y[e], 0.5f * static_cast<float>(q5_level(b, 4, 8, e)) + 2.0f) << e;
}

TEST(DequantizeBlocks, Q8_0) {
  Bytes b(34);
  put_f16(b, 0, 0.125f);
  for (int j = 0; j < 32; ++j) b[2 + j] = static_cast<uint8_t>(static_cast<int8_t>(-128 + 8 * j));
  const auto y = decode(GgmlType::Q8_0, b);
  for (int j = 0; j < 32; ++j) EXPECT_EQ(y[j], 0.125f * static_cast<float>(-128 + 8 * j)) << j;
  EXPECT_EQ(y[0], -16.0f);
  EXPECT_EQ(y[31], 15.0f);
}

// 2-bit level of element e (0..255) in the Q2_K/Q3_K low-bit packing.
int low2(const Bytes& b, size_t qs_off, int e) {
  const int half = e / 128, r = e % 128;
  return (b[qs_off + 32 * half + r % 32] >> (2 * (r / 32))) & 3;
}

TEST(DequantizeBlocks, Q2_K) {
  Bytes b(84);
  for (int j = 0; j < 16; ++j) b[j] = static_cast<uint8_t>(j | (15 - j) << 4);
  fill_random(b, 16, 64, 2);
  put_f16(b, 80, 0.5f);
  put_f16(b, 82, 0.25f);
  const auto y = decode(GgmlType::Q2_K, b);
  for (int e = 0; e < 256; ++e) {
    const int j = e / 16;
    const float expected = 0.5f * static_cast<float>(j) * static_cast<float>(low2(b, 16, e)) - 0.25f * (15 - j);
    EXPECT_EQ(y[e], expected) << e;
  }
  EXPECT_EQ(y[0], -3.75f);  // scale 0, min 15: -0.25 * 15
}

TEST(DequantizeBlocks, Q3_K) {
  Bytes b(110);
  fill_random(b, 0, 96, 3);  // hmask and qs
  int s[16];
  for (int j = 0; j < 16; ++j) s[j] = (j * 23 + 5) % 64;  // 6-bit scales, biased by 32
  for (int j = 0; j < 16; ++j) {
    b[96 + j % 8] |= static_cast<uint8_t>((s[j] & 0xF) << (j < 8 ? 0 : 4));
    b[96 + 8 + j % 4] |= static_cast<uint8_t>((s[j] >> 4) << (2 * (j / 4)));
  }
  put_f16(b, 108, 0.5f);
  const auto y = decode(GgmlType::Q3_K, b);
  for (int e = 0; e < 256; ++e) {
    const int high = (b[e % 32] >> (e / 32)) & 1;
    const int q = low2(b, 32, e) + 4 * high;
    EXPECT_EQ(y[e], 0.5f * static_cast<float>(s[e / 16] - 32) * static_cast<float>(q - 4)) << e;
  }
}

// Packs 8 six-bit (scale, min) pairs in the Q4_K/Q5_K 12-byte layout, written from
// block_types.h's description.
void pack_k4(Bytes& b, size_t off, const int sc[8], const int m[8]) {
  for (int j = 0; j < 4; ++j) {
    b[off + j] = static_cast<uint8_t>(sc[j] | (sc[j + 4] >> 4) << 6);
    b[off + j + 4] = static_cast<uint8_t>(m[j] | (m[j + 4] >> 4) << 6);
    b[off + j + 8] = static_cast<uint8_t>((sc[j + 4] & 0xF) | (m[j + 4] & 0xF) << 4);
  }
}

TEST(DequantizeBlocks, Q4_K) {
  Bytes b(144);
  put_f16(b, 0, 0.5f);
  put_f16(b, 2, 0.125f);
  int sc[8], m[8];
  for (int j = 0; j < 8; ++j) {
    sc[j] = 10 + 7 * j;
    m[j] = 63 - 5 * j;
  }
  pack_k4(b, 4, sc, m);
  fill_random(b, 16, 128, 4);
  const auto y = decode(GgmlType::Q4_K, b);
  for (int e = 0; e < 256; ++e) {
    const int c = e / 64, r = e % 64, j = e / 32;
    const int q = r < 32 ? b[16 + 32 * c + r] & 0xF : b[16 + 32 * c + r - 32] >> 4;
    const float expected = 0.5f * static_cast<float>(sc[j]) * static_cast<float>(q) - 0.125f * static_cast<float>(m[j]);
    EXPECT_EQ(y[e], expected) << e;
  }
}

TEST(DequantizeBlocks, Q5_K) {
  Bytes b(176);
  put_f16(b, 0, 0.25f);
  put_f16(b, 2, 0.5f);
  int sc[8], m[8];
  for (int j = 0; j < 8; ++j) {
    sc[j] = 63 - 8 * j;
    m[j] = 3 + 8 * j;
  }
  pack_k4(b, 4, sc, m);
  fill_random(b, 16, 160, 5);  // qh and qs
  const auto y = decode(GgmlType::Q5_K, b);
  for (int e = 0; e < 256; ++e) {
    const int c = e / 64, r = e % 64, j = e / 32;
    const int low = r < 32 ? b[48 + 32 * c + r] & 0xF : b[48 + 32 * c + r - 32] >> 4;
    const int high = (b[16 + r % 32] >> (2 * c + (r < 32 ? 0 : 1))) & 1;
    const int q = low + 16 * high;
    const float expected = 0.25f * static_cast<float>(sc[j]) * static_cast<float>(q) - 0.5f * static_cast<float>(m[j]);
    EXPECT_EQ(y[e], expected) << e;
  }
}

TEST(DequantizeBlocks, Q6_K) {
  Bytes b(210);
  fill_random(b, 0, 192, 6);  // ql and qh
  for (int j = 0; j < 16; ++j) b[192 + j] = static_cast<uint8_t>(static_cast<int8_t>(-128 + 17 * j));
  put_f16(b, 208, 0.25f);
  const auto y = decode(GgmlType::Q6_K, b);
  for (int e = 0; e < 256; ++e) {
    const int h = e / 128, r = e % 128, quarter = r / 32, l = r % 32;
    const uint8_t qlb = b[64 * h + (quarter % 2) * 32 + l];
    const int low = quarter < 2 ? qlb & 0xF : qlb >> 4;
    const int high = (b[128 + 32 * h + l] >> (2 * quarter)) & 3;
    const int q = (low | high << 4) - 32;
    EXPECT_EQ(y[e], 0.25f * static_cast<float>(-128 + 17 * (e / 16)) * static_cast<float>(q)) << e;
  }
}

TEST(DequantizeBlocks, Q8_K) {
  Bytes b(292);
  const float d = 0.5f;
  std::memcpy(&b[0], &d, 4);
  for (int j = 0; j < 256; ++j) b[4 + j] = static_cast<uint8_t>(j);
  const auto y = decode(GgmlType::Q8_K, b);
  for (int j = 0; j < 256; ++j) EXPECT_EQ(y[j], 0.5f * static_cast<float>(static_cast<int8_t>(j))) << j;
}

TEST(DequantizeBlocks, IQ4_NL) {
  Bytes b(18);
  put_f16(b, 0, 2.0f);
  for (int j = 0; j < 16; ++j) b[2 + j] = static_cast<uint8_t>(j | (15 - j) << 4);
  const auto y = decode(GgmlType::IQ4_NL, b);
  for (int j = 0; j < 16; ++j) {
    EXPECT_EQ(y[j], 2.0f * kIq4[j]) << j;
    EXPECT_EQ(y[16 + j], 2.0f * kIq4[15 - j]) << j;
  }
  EXPECT_EQ(y[0], -254.0f);
  EXPECT_EQ(y[16], 226.0f);
  EXPECT_EQ(std::memcmp(kIq4, quant::kIq4nlValues, 16), 0);
}

TEST(DequantizeBlocks, IQ4_XS) {
  Bytes b(136);
  put_f16(b, 0, 0.5f);
  int ls[8];
  uint16_t scales_h = 0;
  for (int j = 0; j < 8; ++j) {
    ls[j] = (j * 9 + 4) % 64;
    b[4 + j / 2] |= static_cast<uint8_t>((ls[j] & 0xF) << (4 * (j % 2)));
    scales_h = static_cast<uint16_t>(scales_h | (ls[j] >> 4) << (2 * j));
  }
  put_u16(b, 2, scales_h);
  fill_random(b, 8, 128, 7);
  const auto y = decode(GgmlType::IQ4_XS, b);
  for (int e = 0; e < 256; ++e) {
    const int ib = e / 32, r = e % 32;
    const int idx = r < 16 ? b[8 + 16 * ib + r] & 0xF : b[8 + 16 * ib + r - 16] >> 4;
    EXPECT_EQ(y[e], 0.5f * static_cast<float>(ls[ib] - 32) * static_cast<float>(kIq4[idx])) << e;
  }
}

TEST(DequantizeBlocks, FloatTypes) {
  const uint16_t f16[4] = {0x3C00, 0xC000, 0x0001, 0x7BFF};  // 1, -2, 2^-24, 65504
  std::vector<float> y(4);
  dequantize_row(GgmlType::F16, f16, y.data(), 4);
  EXPECT_EQ(y, (std::vector<float>{1.0f, -2.0f, 5.9604644775390625e-8f, 65504.0f}));
  const uint16_t bf16[3] = {0x3F80, 0xC040, 0x0001};  // 1, -3, smallest subnormal
  dequantize_row(GgmlType::BF16, bf16, y.data(), 3);
  EXPECT_EQ(y[0], 1.0f);
  EXPECT_EQ(y[1], -3.0f);
  EXPECT_EQ(y[2], std::bit_cast<float>(0x00010000u));
  const float f32[2] = {1.5f, -0.0f};
  dequantize_row(GgmlType::F32, f32, y.data(), 2);
  EXPECT_EQ(std::bit_cast<uint32_t>(y[1]), 0x80000000u);
}

// Rows inside a tensor need not be aligned for the block's uint16_t fields: decoding from an
// odd address must give the same values (and be clean under UBSan's alignment check).
TEST(DequantizeBlocks, AnyAlignment) {
  for (GgmlType type : {GgmlType::Q4_0, GgmlType::Q5_1, GgmlType::Q8_0, GgmlType::Q3_K, GgmlType::Q4_K, GgmlType::Q6_K,
                        GgmlType::Q8_K, GgmlType::IQ4_XS, GgmlType::F16, GgmlType::F32}) {
    const int64_t n = 512;
    const auto x = testing::normal_values(n, 8);
    const size_t bytes = ggml_row_size(type, n);
    std::vector<uint8_t> aligned(bytes), shifted(bytes + 1);
    quantize_row(type, x.data(), aligned.data(), n);
    quantize_row(type, x.data(), shifted.data() + 1, n);
    EXPECT_EQ(std::memcmp(aligned.data(), shifted.data() + 1, bytes), 0) << ggml_type_name(type);
    std::vector<float> ya(n), ys(n);
    dequantize_row(type, aligned.data(), ya.data(), n);
    dequantize_row(type, shifted.data() + 1, ys.data(), n);
    EXPECT_EQ(ya, ys) << ggml_type_name(type);
  }
}

}  // namespace
}  // namespace cellserve::engine
