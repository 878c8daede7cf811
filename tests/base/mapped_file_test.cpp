#include "base/mapped_file.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

namespace cellserve {
namespace {

TEST(MappedFile, MapsContents) {
  const auto path = std::filesystem::temp_directory_path() / "cs_mapped_file_test.bin";
  {
    std::ofstream out(path, std::ios::binary);
    out << "hello";
  }
  auto f = MappedFile::open(path.string());
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  ASSERT_EQ(f->size(), 5u);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(f->bytes().data()), 5), "hello");
  MappedFile moved = std::move(f).value();
  EXPECT_EQ(moved.size(), 5u);
  std::filesystem::remove(path);
}

TEST(MappedFile, MissingFileIsNotFound) {
  auto f = MappedFile::open("/nonexistent/cellserve/file.gguf");
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.status().code(), StatusCode::NotFound);
  EXPECT_NE(f.status().message().find("/nonexistent/cellserve/file.gguf"), std::string::npos);
}

TEST(MappedFile, DirectoryIsRejected) {
  auto f = MappedFile::open(std::filesystem::temp_directory_path().string());
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.status().code(), StatusCode::InvalidArgument);
}

TEST(MappedFile, EmptyFileMapsToEmptySpan) {
  const auto path = std::filesystem::temp_directory_path() / "cs_mapped_file_empty.bin";
  { std::ofstream out(path, std::ios::binary); }
  auto f = MappedFile::open(path.string());
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(f->size(), 0u);
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace cellserve
