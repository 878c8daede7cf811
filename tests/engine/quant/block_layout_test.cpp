// Block structs match ggml-common.h: sizes equal ggml_type_size(), and fields sit at ggml's
// offsets (the structs are the contract with the file format, so test them directly).
#include <gtest/gtest.h>

#include <cstddef>

#include "engine/quant/block_types.h"
#include "engine/quant/quantize.h"

namespace cellserve::engine {
namespace {

template <GgmlType T>
void expect_size_matches() {
  using Block = typename BlockOf<T>::type;
  EXPECT_EQ(sizeof(Block), ggml_type_size(T)) << ggml_type_name(T);
}

TEST(BlockLayout, SizesMatchGgmlTypeSize) {
  expect_size_matches<GgmlType::Q4_0>();
  expect_size_matches<GgmlType::Q4_1>();
  expect_size_matches<GgmlType::Q5_0>();
  expect_size_matches<GgmlType::Q5_1>();
  expect_size_matches<GgmlType::Q8_0>();
  expect_size_matches<GgmlType::Q8_1>();
  expect_size_matches<GgmlType::Q2_K>();
  expect_size_matches<GgmlType::Q3_K>();
  expect_size_matches<GgmlType::Q4_K>();
  expect_size_matches<GgmlType::Q5_K>();
  expect_size_matches<GgmlType::Q6_K>();
  expect_size_matches<GgmlType::Q8_K>();
  expect_size_matches<GgmlType::IQ4_NL>();
  expect_size_matches<GgmlType::IQ4_XS>();
}

TEST(BlockLayout, FieldOffsetsMatchGgmlCommon) {
  EXPECT_EQ(offsetof(BlockQ4_1, m), 2u);
  EXPECT_EQ(offsetof(BlockQ4_1, qs), 4u);
  EXPECT_EQ(offsetof(BlockQ5_0, qh), 2u);
  EXPECT_EQ(offsetof(BlockQ5_0, qs), 6u);
  EXPECT_EQ(offsetof(BlockQ5_1, qh), 4u);
  EXPECT_EQ(offsetof(BlockQ5_1, qs), 8u);
  EXPECT_EQ(offsetof(BlockQ8_1, qs), 4u);
  EXPECT_EQ(offsetof(BlockQ2_K, qs), 16u);
  EXPECT_EQ(offsetof(BlockQ2_K, d), 80u);
  EXPECT_EQ(offsetof(BlockQ2_K, dmin), 82u);
  EXPECT_EQ(offsetof(BlockQ3_K, qs), 32u);
  EXPECT_EQ(offsetof(BlockQ3_K, scales), 96u);
  EXPECT_EQ(offsetof(BlockQ3_K, d), 108u);
  EXPECT_EQ(offsetof(BlockQ4_K, scales), 4u);
  EXPECT_EQ(offsetof(BlockQ4_K, qs), 16u);
  EXPECT_EQ(offsetof(BlockQ5_K, qh), 16u);
  EXPECT_EQ(offsetof(BlockQ5_K, qs), 48u);
  EXPECT_EQ(offsetof(BlockQ6_K, qh), 128u);
  EXPECT_EQ(offsetof(BlockQ6_K, scales), 192u);
  EXPECT_EQ(offsetof(BlockQ6_K, d), 208u);
  EXPECT_EQ(offsetof(BlockQ8_K, qs), 4u);
  EXPECT_EQ(offsetof(BlockQ8_K, bsums), 260u);
  EXPECT_EQ(offsetof(BlockIQ4_XS, scales_h), 2u);
  EXPECT_EQ(offsetof(BlockIQ4_XS, scales_l), 4u);
  EXPECT_EQ(offsetof(BlockIQ4_XS, qs), 8u);
}

TEST(BlockLayout, SupportedTypes) {
  for (GgmlType t : {GgmlType::F32, GgmlType::F16, GgmlType::BF16, GgmlType::Q4_0, GgmlType::Q4_1, GgmlType::Q5_0,
                     GgmlType::Q5_1, GgmlType::Q8_0, GgmlType::Q2_K, GgmlType::Q3_K, GgmlType::Q4_K, GgmlType::Q5_K,
                     GgmlType::Q6_K, GgmlType::Q8_K, GgmlType::IQ4_NL, GgmlType::IQ4_XS}) {
    EXPECT_TRUE(can_dequantize(t)) << ggml_type_name(t);
    EXPECT_TRUE(can_quantize(t)) << ggml_type_name(t);
  }
  EXPECT_TRUE(can_quantize(GgmlType::Q8_1));  // activations only: no decoder in ggml either
  EXPECT_FALSE(can_dequantize(GgmlType::Q8_1));
  for (GgmlType t : {GgmlType::IQ2_XXS, GgmlType::IQ3_S, GgmlType::TQ1_0, GgmlType::MXFP4, GgmlType::I32}) {
    EXPECT_FALSE(can_dequantize(t)) << ggml_type_name(t);
    EXPECT_FALSE(can_quantize(t)) << ggml_type_name(t);
  }
}

}  // namespace
}  // namespace cellserve::engine
