// Writer -> reader round trips: every value type, nested arrays, tensors and alignment.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <limits>

#include "tests/engine/gguf/gguf_test_util.h"

namespace cellserve::engine {
namespace {

using testing::parse;

std::vector<GgufKeyValue> every_value_type() {
  GgufArray nested{GgufValueType::Array, {}};
  nested.items.push_back(GgufValue::string_array({"a", "", "ünïcode"}));
  nested.items.push_back(GgufValue::array(GgufArray{GgufValueType::Int64, {GgufValue::i64(-1), GgufValue::i64(2)}}));
  nested.items.push_back(GgufValue::array(GgufArray{GgufValueType::Float64, {}}));
  return {
      {"t.u8", GgufValue::u8(255)},
      {"t.i8", GgufValue::i8(-128)},
      {"t.u16", GgufValue::u16(65535)},
      {"t.i16", GgufValue::i16(-32768)},
      {"t.u32", GgufValue::u32(4294967295u)},
      {"t.i32", GgufValue::i32(std::numeric_limits<int32_t>::min())},
      {"t.f32", GgufValue::f32(3.25f)},
      {"t.bool.true", GgufValue::boolean(true)},
      {"t.bool.false", GgufValue::boolean(false)},
      {"t.str", GgufValue::string("hello\nworld")},
      {"t.str.empty", GgufValue::string("")},
      {"t.u64", GgufValue::u64(std::numeric_limits<uint64_t>::max())},
      {"t.i64", GgufValue::i64(std::numeric_limits<int64_t>::min())},
      {"t.f64", GgufValue::f64(-1.0e300)},
      {"t.arr.u8", GgufValue::array(GgufArray{GgufValueType::UInt8, {GgufValue::u8(1), GgufValue::u8(2)}})},
      {"t.arr.f32", GgufValue::f32_array({1.5f, -2.0f})},
      {"t.arr.i32", GgufValue::i32_array({1, -2, 3})},
      {"t.arr.bool", GgufValue::array(GgufArray{GgufValueType::Bool, {GgufValue::boolean(true)}})},
      {"t.arr.str", GgufValue::string_array({"x", "yy"})},
      {"t.arr.empty", GgufValue::array(GgufArray{GgufValueType::String, {}})},
      {"t.arr.nested", GgufValue::array(nested)},
  };
}

TEST(GgufRoundTrip, EveryValueTypeReadsBackIdentically) {
  GgufWriter w;
  const auto kvs = every_value_type();
  for (const auto& kv : kvs) w.set(kv.key, kv.value);
  const auto bytes = w.to_bytes();
  auto f = parse(bytes);
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  EXPECT_EQ(f->version(), 3u);
  ASSERT_EQ(f->metadata().size(), kvs.size());
  for (size_t i = 0; i < kvs.size(); ++i) {
    EXPECT_EQ(f->metadata()[i].key, kvs[i].key);
    EXPECT_EQ(f->metadata()[i].value, kvs[i].value) << kvs[i].key;
    EXPECT_EQ(f->metadata()[i].value.type(), kvs[i].value.type()) << kvs[i].key;
  }
  EXPECT_EQ(f->get_int("t.u32"), 4294967295);
  EXPECT_EQ(f->get_int("t.u64"), std::nullopt);  // does not fit an int64
  EXPECT_EQ(f->get_string("t.str"), "hello\nworld");
  EXPECT_EQ(f->get_bool("t.bool.true"), true);
  EXPECT_EQ(f->get_float("t.f32"), 3.25);
  EXPECT_EQ(f->find("absent"), nullptr);
  EXPECT_TRUE(f->tensors().empty());
}

TEST(GgufRoundTrip, SetReplacesValueInPlace) {
  GgufWriter w;
  w.set("a", GgufValue::u32(1));
  w.set("b", GgufValue::u32(2));
  w.set("a", GgufValue::string("one"));
  ASSERT_EQ(w.metadata().size(), 2u);
  EXPECT_EQ(w.metadata()[0].key, "a");
  EXPECT_EQ(*w.metadata()[0].value.as_string(), "one");
  w.remove("a");
  ASSERT_EQ(w.metadata().size(), 1u);
}

TEST(GgufRoundTrip, TensorsKeepTypeShapeBytesAndAlignment) {
  for (uint32_t alignment : {32u, 64u, 256u}) {
    GgufWriter w = testing::small_model_writer();
    w.set("general.alignment", GgufValue::u32(alignment));
    std::vector<uint16_t> half(3 * 5, 0x3c00);
    ASSERT_TRUE(w.add_tensor("h", GgmlType::F16, make_shape({3, 5, 1}), std::as_bytes(std::span(half))).ok());
    const auto bytes = w.to_bytes();
    auto f = parse(bytes);
    ASSERT_TRUE(f.ok()) << f.status().to_string();
    EXPECT_EQ(f->alignment(), alignment);
    EXPECT_EQ(f->data_offset() % alignment, 0u);
    ASSERT_EQ(f->tensors().size(), 3u);
    for (const auto& t : f->tensors()) EXPECT_EQ(t.offset % alignment, 0u) << t.name;

    const auto* tok = f->find_tensor("tok");
    ASSERT_NE(tok, nullptr);
    EXPECT_EQ(tok->type, GgmlType::F32);
    EXPECT_EQ(tok->shape, make_shape({8, 2}));
    const TensorView v = f->view(*tok);
    ASSERT_EQ(v.data.size(), 64u);
    EXPECT_EQ(reinterpret_cast<const float*>(v.data.data())[3], 1.5f);
    EXPECT_EQ(v.row(1).size(), 32u);
    EXPECT_EQ(reinterpret_cast<const float*>(v.row(1).data())[0], 4.0f);

    const auto* h = f->find_tensor("h");
    ASSERT_NE(h, nullptr);
    EXPECT_EQ(h->shape.n_dims, 3);
    EXPECT_EQ(h->size_bytes, 30u);
    EXPECT_EQ(f->find_tensor("w")->size_bytes, 68u);
  }
}

TEST(GgufRoundTrip, WriterRejectsInconsistentTensors) {
  GgufWriter w;
  std::vector<std::byte> data(34);
  EXPECT_TRUE(w.add_tensor("q", GgmlType::Q8_0, make_shape({32}), data).ok());
  EXPECT_EQ(w.add_tensor("q", GgmlType::Q8_0, make_shape({32}), data).code(), StatusCode::InvalidArgument);
  EXPECT_EQ(w.add_tensor("odd", GgmlType::Q8_0, make_shape({33}), data).code(), StatusCode::InvalidArgument);
  EXPECT_EQ(w.add_tensor("size", GgmlType::Q8_0, make_shape({64}), data).code(), StatusCode::InvalidArgument);
}

TEST(GgufRoundTrip, WritesFileAtomicallyAndLazily) {
  const auto path = (std::filesystem::temp_directory_path() / "cs_gguf_writer_test.gguf").string();
  GgufWriter w = testing::small_model_writer();
  ASSERT_TRUE(w.add_tensor("lazy", GgmlType::F32, make_shape({4}), [](std::span<std::byte> out) {
                 for (size_t i = 0; i < out.size(); ++i) out[i] = std::byte(i);
               }).ok());
  ASSERT_TRUE(w.write(path).ok());
  EXPECT_FALSE(std::filesystem::exists(path + ".partial"));
  auto f = GgufFile::open(path);
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  const TensorView lazy = f->view(*f->find_tensor("lazy"));
  ASSERT_EQ(lazy.data.size(), 16u);
  EXPECT_EQ(lazy.data[15], std::byte{15});
  EXPECT_EQ(std::filesystem::file_size(path), w.to_bytes().size());

  EXPECT_FALSE(w.write("/nonexistent-dir/x.gguf").ok());
  std::filesystem::remove(path);
}

TEST(GgufRoundTrip, ReadsVersion2) {
  auto bytes = testing::small_model_writer().to_bytes();
  testing::poke<uint32_t>(bytes, 4, 2);
  auto f = parse(bytes);
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  EXPECT_EQ(f->version(), 2u);
  EXPECT_EQ(f->tensors().size(), 2u);
}

}  // namespace
}  // namespace cellserve::engine
