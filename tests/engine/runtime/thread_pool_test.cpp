#include "engine/runtime/thread_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <vector>

namespace cellserve::engine {
namespace {

TEST(ThreadPool, ParallelForCoversEveryIndexOnce) {
  for (int threads : {1, 2, 3, 7}) {
    ThreadPool pool(threads);
    EXPECT_EQ(pool.size(), threads);
    for (int64_t n : {0, 1, 5, 1000}) {
      std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
      for (int rep = 0; rep < 50; ++rep) {
        pool.parallel_for(n, [&](int64_t b, int64_t e) {
          for (int64_t i = b; i < e; ++i) hits[static_cast<size_t>(i)]++;
        });
      }
      for (auto& h : hits) EXPECT_EQ(h.load(), 50);
    }
  }
}

TEST(ThreadPool, RunGivesEachThreadItsIndex) {
  ThreadPool pool(4);
  std::vector<std::atomic<int>> seen(4);
  pool.run([&](int ith, int nth) {
    EXPECT_EQ(nth, 4);
    seen[static_cast<size_t>(ith)]++;
  });
  for (auto& s : seen) EXPECT_EQ(s.load(), 1);
}

TEST(ThreadPool, NonPositiveSizeMeansOneThread) { EXPECT_EQ(ThreadPool(0).size(), 1); }

// What the governor does on a busy machine, driven directly: jobs on fewer threads than the pool
// has, and back, many times in a row (the left-out workers park and must wake for the next job
// that includes them).
TEST(ThreadPool, JobsRunOnTheActiveThreadsOnlyAndTheRestComeBack) {
  ThreadPool pool(4, /*adaptive=*/false);
  std::vector<std::atomic<int>> runs(4);
  int64_t expected_items = 0;
  std::atomic<int64_t> items{0};
  for (int rep = 0; rep < 2000; ++rep) {
    const int want = 1 + (rep * 7) % 4;
    pool.set_active(want);
    ASSERT_EQ(pool.active(), want);
    pool.run([&](int ith, int nth) {
      EXPECT_EQ(nth, want);
      EXPECT_LT(ith, want);
      runs[static_cast<size_t>(ith)]++;
    });
    pool.parallel_chunks(37, [&](int64_t) { items++; });
    expected_items += 37;
  }
  EXPECT_EQ(items.load(), expected_items);
  for (int i = 0; i < 4; ++i) {
    int want_runs = 0;
    for (int rep = 0; rep < 2000; ++rep) want_runs += i < 1 + (rep * 7) % 4 ? 1 : 0;
    EXPECT_EQ(runs[static_cast<size_t>(i)].load(), want_runs) << "thread " << i;
  }
  EXPECT_EQ(pool.fewest_active(), 1);
  pool.set_active(0);
  EXPECT_EQ(pool.active(), 1);
  pool.set_active(9);
  EXPECT_EQ(pool.active(), 4);
}

TEST(ThreadPool, AnAdaptivePoolStartsWithEveryThreadAndFinishesEveryJob) {
  ThreadPool pool(3);
  EXPECT_EQ(pool.active(), 3);
  std::atomic<int64_t> sum{0};
  for (int rep = 0; rep < 200; ++rep) {
    pool.parallel_for(1000, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) sum += i;
    });
  }
  EXPECT_EQ(sum.load(), 200 * 999 * 1000 / 2);
}

}  // namespace
}  // namespace cellserve::engine
