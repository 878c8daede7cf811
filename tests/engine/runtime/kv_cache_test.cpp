#include "engine/runtime/kv_cache.h"

#include <gtest/gtest.h>

namespace cellserve::engine {
namespace {

KvCache make(int64_t cells, GgmlType type = GgmlType::F16) {
  auto kv = KvCache::create(KvCacheShape{2, 2, 32, 32}, cells, type);
  EXPECT_TRUE(kv.ok()) << kv.status().to_string();
  return std::move(kv).value();
}

TEST(KvCache, AllocatesTracksAndRemovesSequences) {
  KvCache kv = make(8);
  Batch b;
  for (int i = 0; i < 3; ++i) b.add(0, i, 0, false);
  for (int i = 0; i < 2; ++i) b.add(0, i, 1, false);
  std::vector<int32_t> cells;
  ASSERT_TRUE(kv.allocate(b, &cells).ok());
  EXPECT_EQ(cells.size(), 5u);
  EXPECT_EQ(kv.used_cells(), 5);
  EXPECT_EQ(kv.seq_pos_max(0), 2);
  EXPECT_EQ(kv.seq_pos_max(1), 1);
  EXPECT_TRUE(kv.visible(cells[1], 0, 1));
  EXPECT_FALSE(kv.visible(cells[2], 0, 1));  // a later position is not visible
  EXPECT_FALSE(kv.visible(cells[3], 0, 5));  // another sequence's cell
  kv.seq_rm(0, 1, -1);
  EXPECT_EQ(kv.seq_pos_max(0), 0);
  EXPECT_EQ(kv.used_cells(), 3);
  kv.seq_cp(1, 2, 0, -1);
  EXPECT_EQ(kv.seq_pos_max(2), 1);
  kv.seq_rm(1, 0, -1);
  EXPECT_EQ(kv.used_cells(), 3);  // still held by sequence 2
  kv.clear();
  EXPECT_EQ(kv.used_cells(), 0);
  EXPECT_EQ(kv.scan_end(), 0);
}

TEST(KvCache, FailedAllocationChangesNothing) {
  KvCache kv = make(4);
  Batch b;
  for (int i = 0; i < 5; ++i) b.add(0, i, 0, false);
  std::vector<int32_t> cells;
  EXPECT_EQ(kv.allocate(b, &cells).code(), StatusCode::ResourceExhausted);
  EXPECT_EQ(kv.used_cells(), 0);
}

TEST(KvCache, ValidatesTypeAndHeadSize) {
  EXPECT_FALSE(KvCache::create(KvCacheShape{1, 1, 32, 32}, 4, GgmlType::Q4_K).ok());
  EXPECT_FALSE(KvCache::create(KvCacheShape{1, 1, 40, 40}, 4, GgmlType::Q8_0).ok());
  EXPECT_TRUE(KvCache::create(KvCacheShape{1, 1, 40, 40}, 4, GgmlType::F32).ok());
  auto q8 = KvCache::create(KvCacheShape{2, 2, 64, 64}, 4, GgmlType::Q8_0);
  ASSERT_TRUE(q8.ok());
  EXPECT_EQ(q8->key_row_bytes(), 68u);
  EXPECT_EQ(q8->memory_bytes(), 2u * 2 * 4 * 2 * 68);
}

}  // namespace
}  // namespace cellserve::engine
