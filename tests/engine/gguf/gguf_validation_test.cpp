// Every malformed-file case the reader must refuse, each with a precise message.
#include <gtest/gtest.h>

#include <limits>

#include "tests/engine/gguf/gguf_test_util.h"

namespace cellserve::engine {
namespace {

using testing::find_bytes;
using testing::parse;
using testing::poke;

void expect_error(const std::vector<std::byte>& bytes, const std::string& fragment) {
  auto f = parse(bytes);
  ASSERT_FALSE(f.ok()) << "expected an error containing: " << fragment;
  EXPECT_NE(f.status().message().find(fragment), std::string::npos)
      << "message: " << f.status().message() << "\nexpected fragment: " << fragment;
}

// Offset of tensor `name`'s info record fields.
struct InfoOffsets {
  size_t n_dims, dims, type, offset;
};
InfoOffsets tensor_info_offsets(const std::vector<std::byte>& bytes, const std::string& name, int n_dims) {
  // The info record is: u64 name length, name bytes, u32 n_dims, u64 dims[n_dims], u32 type, u64 offset.
  const size_t name_at = find_bytes(bytes, std::string("\x00\x00\x00\x00\x00\x00\x00", 7) + name) + 7;
  const size_t n_dims_at = name_at + name.size();
  const size_t dims_at = n_dims_at + 4;
  const size_t type_at = dims_at + 8 * static_cast<size_t>(n_dims);
  return {n_dims_at, dims_at, type_at, type_at + 4};
}

const std::vector<std::byte>& valid() {
  static const auto bytes = testing::small_model_writer().to_bytes();
  return bytes;
}

TEST(GgufValidation, ValidFileParses) { ASSERT_TRUE(parse(valid()).ok()); }

TEST(GgufValidation, BadMagic) {
  auto b = valid();
  b[0] = std::byte{'X'};
  expect_error(b, "bad magic");
}

TEST(GgufValidation, UnsupportedVersions) {
  auto b = valid();
  poke<uint32_t>(b, 4, 1);
  expect_error(b, "version 1 is not supported");
  poke<uint32_t>(b, 4, 99);
  expect_error(b, "unsupported GGUF version 99");
  poke<uint32_t>(b, 4, 0x03000000);
  expect_error(b, "big-endian");
  EXPECT_EQ(parse(b).status().code(), StatusCode::Unimplemented);
}

TEST(GgufValidation, EmptyAndTinyFiles) {
  expect_error({}, "truncated file: magic");
  expect_error(std::vector<std::byte>(valid().begin(), valid().begin() + 6), "truncated file: version");
}

TEST(GgufValidation, EveryTruncationBeforeTheLastTensorByteFails) {
  const auto& full = valid();
  auto f = parse(full);
  ASSERT_TRUE(f.ok());
  uint64_t data_end = 0;
  for (const auto& t : f->tensors()) data_end = std::max(data_end, f->data_offset() + t.offset + t.size_bytes);
  for (size_t n = 0; n < data_end; ++n) {
    std::vector<std::byte> cut(full.begin(), full.begin() + static_cast<std::ptrdiff_t>(n));
    auto r = parse(cut);
    ASSERT_FALSE(r.ok()) << "prefix of " << n << " bytes parsed";
    EXPECT_EQ(r.status().code(), StatusCode::DataLoss) << n;
  }
  // Trailing padding after the last tensor is not needed.
  EXPECT_TRUE(parse(std::vector<std::byte>(full.begin(), full.begin() + static_cast<std::ptrdiff_t>(data_end))).ok());
}

TEST(GgufValidation, StringLengthPastEnd) {
  auto b = valid();
  poke<uint64_t>(b, 24, 1ull << 40);  // the first key's length
  expect_error(b, "string length 1099511627776 runs past the end");
}

TEST(GgufValidation, ArrayLengthPastEnd) {
  GgufWriter w;
  w.set("arr", GgufValue::i32_array({1, 2, 3}));
  auto b = w.to_bytes();
  // key "arr" (8 + 3 bytes) at 24, value type at 35, element type at 39, count at 43.
  poke<uint64_t>(b, 43, std::numeric_limits<uint64_t>::max() / 2);
  expect_error(b, "runs past the end of the file");
}

TEST(GgufValidation, UnknownValueType) {
  auto b = valid();
  const size_t key_end = 24 + 8 + std::string("general.architecture").size();
  poke<uint32_t>(b, key_end, 13);
  expect_error(b, "unknown value type 13");
}

TEST(GgufValidation, DeeplyNestedArraysAreRefused) {
  GgufValue v = GgufValue::u8(1);
  for (int i = 0; i < 20; ++i) v = GgufValue::array(GgufArray{v.type(), {v}});
  GgufWriter w;
  w.set("deep", v);
  expect_error(w.to_bytes(), "nested deeper than");
}

TEST(GgufValidation, CountsLargerThanTheFile) {
  auto b = valid();
  poke<uint64_t>(b, 8, std::numeric_limits<uint64_t>::max());
  expect_error(b, "tensor count");
  b = valid();
  poke<uint64_t>(b, 16, 1ull << 62);
  expect_error(b, "metadata count");
}

TEST(GgufValidation, DuplicateKeysAndTensorNames) {
  GgufWriter w;
  w.set("key.a", GgufValue::u8(1));
  w.set("key.b", GgufValue::u8(2));
  auto b = w.to_bytes();
  b[find_bytes(b, "key.b") + 4] = std::byte{'a'};
  expect_error(b, "duplicate metadata key 'key.a'");

  GgufWriter t;
  std::vector<std::byte> data(4);
  ASSERT_TRUE(t.add_tensor("ta", GgmlType::F32, make_shape({1}), data).ok());
  ASSERT_TRUE(t.add_tensor("tb", GgmlType::F32, make_shape({1}), data).ok());
  b = t.to_bytes();
  b[find_bytes(b, "tb") + 1] = std::byte{'a'};
  expect_error(b, "duplicate tensor name 'ta'");
}

TEST(GgufValidation, AlignmentMustBeAPowerOfTwoU32) {
  GgufWriter w = testing::small_model_writer();
  w.set("general.alignment", GgufValue::u32(48));
  expect_error(w.to_bytes(), "general.alignment 48 is not a power of two");
  w.set("general.alignment", GgufValue::u64(64));
  expect_error(w.to_bytes(), "general.alignment must be a u32");
}

TEST(GgufValidation, TooManyDimensions) {
  auto b = valid();
  poke<uint32_t>(b, tensor_info_offsets(b, "tok", 2).n_dims, 5);
  expect_error(b, "5 dimensions, at most 4");
}

TEST(GgufValidation, DimensionOverflow) {
  auto b = valid();
  const auto at = tensor_info_offsets(b, "tok", 2);
  poke<uint64_t>(b, at.dims, 1ull << 63);
  expect_error(b, "overflows");
  b = valid();
  poke<uint64_t>(b, at.dims, 1ull << 40);
  poke<uint64_t>(b, at.dims + 8, 1ull << 40);
  expect_error(b, "overflows");
}

TEST(GgufValidation, UnknownTensorType) {
  auto b = valid();
  poke<uint32_t>(b, tensor_info_offsets(b, "tok", 2).type, 4);  // Q4_2, removed from ggml
  expect_error(b, "unknown tensor type 4");
  poke<uint32_t>(b, tensor_info_offsets(b, "tok", 2).type, 1000);
  expect_error(b, "unknown tensor type 1000");
}

TEST(GgufValidation, RowNotAMultipleOfTheBlockSize) {
  auto b = valid();
  poke<uint64_t>(b, tensor_info_offsets(b, "w", 2).dims, 48);  // q8_0 blocks hold 32
  expect_error(b, "row length 48 is not a multiple of the q8_0 block size 32");
}

TEST(GgufValidation, MisalignedOffset) {
  auto b = valid();
  poke<uint64_t>(b, tensor_info_offsets(b, "w", 2).offset, 65);
  expect_error(b, "is not aligned to 32 bytes");
}

TEST(GgufValidation, OffsetOutsideTheFile) {
  auto b = valid();
  poke<uint64_t>(b, tensor_info_offsets(b, "w", 2).offset, 1ull << 40);
  expect_error(b, "lies outside the data section");
  poke<uint64_t>(b, tensor_info_offsets(b, "w", 2).offset, std::numeric_limits<uint64_t>::max() - 31);
  expect_error(b, "lies outside the data section");
}

TEST(GgufValidation, BadBool) {
  GgufWriter w;
  w.set("flag", GgufValue::boolean(true));
  auto b = w.to_bytes();
  b[24 + 8 + 4 + 4] = std::byte{7};  // after the key "flag" and the value type
  expect_error(b, "bool at offset");
}

TEST(GgufValidation, OpenReportsPathAndMissingFile) {
  auto f = GgufFile::open("/nonexistent/model.gguf");
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.status().code(), StatusCode::NotFound);
}

}  // namespace
}  // namespace cellserve::engine
