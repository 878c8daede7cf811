// Sha256 against the FIPS 180-2 test vectors, streaming in pieces, and sha256_file.
#include "fleet/crypto/sha256.h"

#include <gtest/gtest.h>

#include "tests/fleet/download/test_support.h"

namespace cellserve::fleet {
namespace {

constexpr const char* kEmpty = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
constexpr const char* kAbc = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";
constexpr const char* kTwoBlocks = "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1";

TEST(Sha256, KnownVectors) {
  EXPECT_EQ(Sha256().hex_digest(), kEmpty);
  Sha256 abc;
  abc.update("abc");
  EXPECT_EQ(abc.hex_digest(), kAbc);
  Sha256 two;
  two.update("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq");
  EXPECT_EQ(two.hex_digest(), kTwoBlocks);
}

TEST(Sha256, StreamingInPiecesEqualsOneShot) {
  const std::string data = testing::test_bytes(100000);
  Sha256 whole;
  whole.update(data);
  Sha256 pieces;
  for (size_t pos = 0, step = 1; pos < data.size(); pos += step, step = step * 3 + 1) {
    pieces.update(std::string_view(data).substr(pos, step));
  }
  EXPECT_EQ(pieces.hex_digest(), whole.hex_digest());
}

TEST(Sha256, DigestDoesNotEndTheStream) {
  Sha256 h;
  h.update("a");
  const std::string first = h.hex_digest();
  EXPECT_EQ(h.hex_digest(), first);
  h.update("bc");
  EXPECT_EQ(h.hex_digest(), kAbc);
}

TEST(Sha256, File) {
  testing::TempDir dir;
  testing::write_file(dir / "abc", "abc");
  testing::write_file(dir / "empty", "");
  EXPECT_EQ(sha256_file(dir / "abc").value(), kAbc);
  EXPECT_EQ(sha256_file(dir / "empty").value(), kEmpty);
  const auto missing = sha256_file(dir / "missing");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::NotFound);
  EXPECT_EQ(sha256_file(dir.path()).status().code(), StatusCode::Internal);  // a folder
}

TEST(Sha256, IsHex) {
  EXPECT_TRUE(is_sha256_hex(kAbc));
  EXPECT_TRUE(is_sha256_hex("BA7816BF8F01CFEA414140DE5DAE2223B00361A396177A9CB410FF61F20015AD"));
  EXPECT_FALSE(is_sha256_hex(""));
  EXPECT_FALSE(is_sha256_hex(std::string(kAbc).substr(1)));
  EXPECT_FALSE(is_sha256_hex(std::string(63, 'a') + "g"));
}

}  // namespace
}  // namespace cellserve::fleet
