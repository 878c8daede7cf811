#include "base/huge_page_arena.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <vector>

namespace cellserve {
namespace {

bool aligned(const void* p, size_t to) { return reinterpret_cast<uintptr_t>(p) % to == 0; }

TEST(HugePageArena, MappingsAreZeroedWritableAndTwoMibAligned) {
  for (size_t bytes : {size_t{1}, size_t{4096}, size_t{3} << 20}) {
    Result<std::shared_ptr<std::byte>> m = map_huge_pages(bytes);
    ASSERT_TRUE(m.ok()) << m.status().message();
    EXPECT_TRUE(aligned(m->get(), size_t{2} << 20));
    for (size_t i = 0; i < bytes; ++i) ASSERT_EQ((*m).get()[i], std::byte{0}) << i;
    std::memset(m->get(), 0xAB, bytes);
  }
}

TEST(HugePageArena, RefusesAbsurdSizes) {
  EXPECT_FALSE(map_huge_pages(0).ok());
  EXPECT_FALSE(map_huge_pages(size_t{1} << 60).ok());
}

TEST(HugePageArena, PiecesAreAlignedDisjointAndShareChunks) {
  HugePageArena arena(size_t{1} << 20);
  std::vector<std::shared_ptr<std::byte>> pieces;
  const std::vector<size_t> sizes = {1, 100, 64, 300000, 5, 700000, 200000, 3 << 20, 10};
  for (size_t i = 0; i < sizes.size(); ++i) {
    Result<std::shared_ptr<std::byte>> p = arena.allocate(sizes[i]);
    ASSERT_TRUE(p.ok()) << p.status().message();
    EXPECT_TRUE(aligned(p->get(), 64));
    std::memset(p->get(), static_cast<int>(i + 1), sizes[i]);
    pieces.push_back(*p);
  }
  // Each piece still holds its own byte: no two overlap.
  for (size_t i = 0; i < sizes.size(); ++i) {
    for (size_t j = 0; j < sizes[i]; j += 997) ASSERT_EQ(static_cast<int>(pieces[i].get()[j]), static_cast<int>(i + 1));
  }
  // The first pieces share a chunk; the 3 MiB one, larger than a chunk, has its own.
  EXPECT_EQ(pieces[1].use_count(), pieces[0].use_count());
  EXPECT_GE(pieces[0].use_count(), 4);
  EXPECT_EQ(pieces[7].use_count(), 1);
}

TEST(HugePageArena, PiecesOutliveTheArena) {
  std::shared_ptr<std::byte> piece;
  {
    HugePageArena arena;
    Result<std::shared_ptr<std::byte>> p = arena.allocate(1000);
    ASSERT_TRUE(p.ok());
    piece = *p;
  }
  std::memset(piece.get(), 7, 1000);  // ASan reports a use after unmap as a crash
  EXPECT_EQ(piece.get()[999], std::byte{7});
}

}  // namespace
}  // namespace cellserve
