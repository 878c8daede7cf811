// Pooling math (mean, cls, last, none, L2 normalisation), the pooling names, and which pooling a
// GGUF asks for (llama.cpp's <arch>.pooling_type numbers).
#include "server/embeddings/pooling.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "engine/gguf/gguf_writer.h"

namespace cellserve::server::embeddings {
namespace {

double norm(const std::vector<float>& v) {
  double s = 0;
  for (float x : v) s += static_cast<double>(x) * x;
  return std::sqrt(s);
}

TEST(L2Normalize, GivesAUnitVectorInTheSameDirection) {
  std::vector<float> v{3, 4};
  l2_normalize(v);
  EXPECT_FLOAT_EQ(v[0], 0.6f);
  EXPECT_FLOAT_EQ(v[1], 0.8f);
}

TEST(L2Normalize, LeavesAZeroVectorZero) {
  std::vector<float> v{0, 0, 0};
  l2_normalize(v);
  for (float x : v) EXPECT_EQ(x, 0.0f);
}

TEST(PoolingReads, SelectsTheRowsEachPoolingNeeds) {
  EXPECT_TRUE(pooling_reads(Pooling::Cls, 0, 3));
  EXPECT_FALSE(pooling_reads(Pooling::Cls, 2, 3));
  EXPECT_TRUE(pooling_reads(Pooling::Last, 2, 3));
  EXPECT_FALSE(pooling_reads(Pooling::Last, 0, 3));
  EXPECT_TRUE(pooling_reads(Pooling::Last, 0, 1));
  for (int pos = 0; pos < 3; ++pos) {
    EXPECT_TRUE(pooling_reads(Pooling::Mean, pos, 3));
    EXPECT_TRUE(pooling_reads(Pooling::None, pos, 3));
  }
}

TEST(Pooler, MeanIsTheNormalisedAverage) {
  Pooler p(Pooling::Mean, 2);
  p.add(std::vector<float>{1, 0});
  p.add(std::vector<float>{3, 4});
  p.add(std::vector<float>{2, 2});
  EXPECT_EQ(p.n_rows(), 1);
  const std::vector<float> v = p.finish();
  ASSERT_EQ(v.size(), 2u);
  // mean (2, 2) -> (1/sqrt2, 1/sqrt2)
  EXPECT_FLOAT_EQ(v[0], static_cast<float>(1 / std::sqrt(2.0)));
  EXPECT_FLOAT_EQ(v[1], static_cast<float>(1 / std::sqrt(2.0)));
}

TEST(Pooler, ClsAndLastKeepTheOneRowTheyAreGiven) {
  for (Pooling pooling : {Pooling::Cls, Pooling::Last}) {
    Pooler p(pooling, 3);
    p.add(std::vector<float>{0, 2, 0});
    const std::vector<float> v = p.finish();
    EXPECT_EQ(v, (std::vector<float>{0, 1, 0})) << pooling_name(pooling);
  }
}

TEST(Pooler, NoneNormalisesEveryRow) {
  Pooler p(Pooling::None, 2);
  p.add(std::vector<float>{0, 5});
  p.add(std::vector<float>{-3, 4});
  EXPECT_EQ(p.n_rows(), 2);
  const std::vector<float> v = p.finish();
  EXPECT_EQ(v, (std::vector<float>{0, 1, -0.6f, 0.8f}));
}

TEST(Pooler, CanBeReusedAfterFinish) {
  Pooler p(Pooling::Mean, 2);
  p.add(std::vector<float>{10, 0});
  (void)p.finish();
  p.add(std::vector<float>{0, 7});
  const std::vector<float> v = p.finish();
  EXPECT_EQ(v, (std::vector<float>{0, 1}));
  EXPECT_NEAR(norm(v), 1.0, 1e-7);
}

TEST(PoolingNames, RoundTrip) {
  for (Pooling p : {Pooling::None, Pooling::Mean, Pooling::Cls, Pooling::Last})
    EXPECT_EQ(pooling_from_name(pooling_name(p)), p);
  EXPECT_FALSE(pooling_from_name("rank"));
  EXPECT_FALSE(pooling_from_name("MEAN"));
  EXPECT_FALSE(pooling_from_name(""));
}

// A GGUF holding only metadata: its architecture and, when given, <arch>.pooling_type.
struct MetadataFile {
  explicit MetadataFile(std::optional<engine::GgufValue> pooling_type) {
    engine::GgufWriter w;
    w.set("general.architecture", engine::GgufValue::string("qwen3"));
    if (pooling_type) w.set("qwen3.pooling_type", *pooling_type);
    bytes = w.to_bytes();
  }
  Result<engine::GgufFile> parse() const { return engine::GgufFile::parse(bytes); }
  std::vector<std::byte> bytes;
};

TEST(PoolingFromGguf, ReadsLlamaCppsNumbers) {
  const std::pair<uint32_t, Pooling> cases[] = {
      {0, Pooling::None}, {1, Pooling::Mean}, {2, Pooling::Cls}, {3, Pooling::Last}};
  for (const auto& [number, pooling] : cases) {
    MetadataFile m(engine::GgufValue::u32(number));
    auto file = m.parse();
    ASSERT_TRUE(file.ok()) << file.status().to_string();
    auto p = pooling_from_gguf(*file);
    ASSERT_TRUE(p.ok()) << p.status().to_string();
    EXPECT_EQ(*p, pooling) << number;
  }
}

TEST(PoolingFromGguf, AbsentKeyIsNullopt) {
  MetadataFile m(std::nullopt);
  auto file = m.parse();
  ASSERT_TRUE(file.ok());
  auto p = pooling_from_gguf(*file);
  ASSERT_TRUE(p.ok());
  EXPECT_FALSE(p->has_value());
}

TEST(PoolingFromGguf, RefusesRankAndUnknownNumbers) {
  MetadataFile rank(engine::GgufValue::u32(4));
  auto file = rank.parse();
  ASSERT_TRUE(file.ok());
  auto p = pooling_from_gguf(*file);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), StatusCode::Unimplemented);
  EXPECT_NE(p.status().message().find("rank"), std::string::npos);

  MetadataFile odd(engine::GgufValue::u32(9));
  auto file9 = odd.parse();
  ASSERT_TRUE(file9.ok());
  EXPECT_EQ(pooling_from_gguf(*file9).status().code(), StatusCode::InvalidArgument);

  MetadataFile text(engine::GgufValue::string("mean"));
  auto file_text = text.parse();
  ASSERT_TRUE(file_text.ok());
  EXPECT_EQ(pooling_from_gguf(*file_text).status().code(), StatusCode::InvalidArgument);
}

TEST(ChoosePooling, FlagThenGgufThenLast) {
  MetadataFile mean(engine::GgufValue::u32(1));
  auto with_key = mean.parse();
  ASSERT_TRUE(with_key.ok());
  MetadataFile none(std::nullopt);
  auto without_key = none.parse();
  ASSERT_TRUE(without_key.ok());

  auto flag = choose_pooling("cls", *with_key);
  ASSERT_TRUE(flag.ok());
  EXPECT_EQ(flag->pooling, Pooling::Cls);
  EXPECT_EQ(flag->source, "--pooling");

  auto from_file = choose_pooling("", *with_key);
  ASSERT_TRUE(from_file.ok());
  EXPECT_EQ(from_file->pooling, Pooling::Mean);

  auto fallback = choose_pooling("", *without_key);
  ASSERT_TRUE(fallback.ok());
  EXPECT_EQ(fallback->pooling, Pooling::Last);

  auto bad = choose_pooling("rank", *without_key);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("--pooling"), std::string::npos);
}

TEST(ChoosePooling, AFlagOverridesARankModel) {
  MetadataFile rank(engine::GgufValue::u32(4));
  auto file = rank.parse();
  ASSERT_TRUE(file.ok());
  EXPECT_FALSE(choose_pooling("", *file).ok());
  auto flag = choose_pooling("mean", *file);
  ASSERT_TRUE(flag.ok());
  EXPECT_EQ(flag->pooling, Pooling::Mean);
}

}  // namespace
}  // namespace cellserve::server::embeddings
