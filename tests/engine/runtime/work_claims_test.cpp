// WorkClaims (engine/runtime/work_claims.h): every unit claimed exactly once, on any thread count;
// two threads claim from both ends; and on a phone's uneven cores (2 prime at 4.32 GHz, 6 at 3.53)
// the last thread ends close to the ideal, where one equal run per thread made the prime cores
// wait. The uneven cores are simulated (speeds, not timings): no clock is read.
#include "engine/runtime/work_claims.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <thread>
#include <vector>

namespace cellserve::engine {
namespace {

// Threads of `speeds` (units per unit of time) claim whenever they are free, the earliest free
// first; returns the time the last one ends.
double simulated_makespan(int64_t total, const std::vector<double>& speeds, int64_t min_claim, int64_t max_claim) {
  WorkClaims claims(total, min_claim, max_claim);
  const int n = static_cast<int>(speeds.size());
  std::vector<double> free_at(speeds.size(), 0.0);
  for (;;) {
    const auto first = std::min_element(free_at.begin(), free_at.end());
    const int i = static_cast<int>(first - free_at.begin());
    const WorkClaims::Range r = claims.claim(i, n);
    if (r.empty()) break;  // all claimed: the others end their last claims
    *first += static_cast<double>(r.end - r.begin) / speeds[static_cast<size_t>(i)];
  }
  return *std::max_element(free_at.begin(), free_at.end());
}

TEST(WorkClaims, EveryUnitIsClaimedOnceOnAnyThreadCount) {
  for (int n : {1, 2, 3, 8}) {
    for (int64_t total : {0, 1, 3, 17, 128, 3072}) {
      WorkClaims claims(total, n == 2 ? 4 : 1, 64);
      std::vector<int> seen(static_cast<size_t>(total), 0);
      int ith = 0;
      for (WorkClaims::Range r = claims.claim(ith, n); !r.empty(); r = claims.claim(ith, n)) {
        ASSERT_GE(r.begin, 0);
        ASSERT_LE(r.end, total);
        ASSERT_LE(r.end - r.begin, 64);
        for (int64_t u = r.begin; u < r.end; ++u) ++seen[static_cast<size_t>(u)];
        ith = (ith + 1) % n;
      }
      for (int64_t u = 0; u < total; ++u) ASSERT_EQ(seen[static_cast<size_t>(u)], 1) << n << " threads, unit " << u;
    }
  }
}

TEST(WorkClaims, ClaimsShrinkAsTheWorkRunsOut) {
  // A share of what is left, 1 / (2 x threads), between the bounds, never more than is left.
  EXPECT_EQ(WorkClaims::claim_size(3072, 8, 1, 64), 64);
  EXPECT_EQ(WorkClaims::claim_size(512, 8, 1, 64), 32);
  EXPECT_EQ(WorkClaims::claim_size(40, 8, 1, 64), 2);
  EXPECT_EQ(WorkClaims::claim_size(10, 8, 1, 64), 1);
  EXPECT_EQ(WorkClaims::claim_size(10, 2, 4, 64), 4);
  EXPECT_EQ(WorkClaims::claim_size(3, 2, 4, 64), 3);
}

TEST(WorkClaims, TwoThreadsClaimFromBothEnds) {
  WorkClaims claims(100, 4, 64);
  const WorkClaims::Range a = claims.claim(0, 2);
  const WorkClaims::Range b = claims.claim(1, 2);
  const WorkClaims::Range c = claims.claim(0, 2);
  const WorkClaims::Range d = claims.claim(1, 2);
  EXPECT_EQ(a.begin, 0);
  EXPECT_EQ(b.end, 100);
  EXPECT_EQ(c.begin, a.end) << "thread 0's claims are adjacent";
  EXPECT_EQ(d.end, b.begin) << "thread 1's claims are adjacent";
}

TEST(WorkClaims, UnevenCoresEndCloseToTheIdeal) {
  const std::vector<double> speeds = {4.32, 4.32, 3.53, 3.53, 3.53, 3.53, 3.53, 3.53};
  const double all = std::accumulate(speeds.begin(), speeds.end(), 0.0);
  // Packed groups of 8 rows in one decode job: a 1,024-row matrix, qwen3.5-0.8b's Q, K and V
  // together, a 9B's down projection and its gate and up together.
  for (int64_t total : {128, 384, 512, 3072}) {
    const double ideal = static_cast<double>(total) / all;
    const double claimed = simulated_makespan(total, speeds, 1, 64);
    const double equal_runs = static_cast<double>((total + 7) / 8) / 3.53;  // one run per thread: the slowest ends last
    EXPECT_LE(claimed, ideal * 1.03) << total << " groups";
    EXPECT_LT(claimed, equal_runs) << total << " groups";
  }
}

TEST(WorkClaims, EightRealThreadsClaimEveryUnitOnce) {
  constexpr int64_t kTotal = 20000;
  constexpr int kThreads = 8;
  WorkClaims claims(kTotal, 1, 64);
  std::vector<std::vector<WorkClaims::Range>> taken(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (WorkClaims::Range r = claims.claim(t, kThreads); !r.empty(); r = claims.claim(t, kThreads))
        taken[static_cast<size_t>(t)].push_back(r);
    });
  }
  for (std::thread& t : threads) t.join();
  std::vector<int> seen(kTotal, 0);
  for (const auto& ranges : taken) {
    for (const WorkClaims::Range& r : ranges) {
      for (int64_t u = r.begin; u < r.end; ++u) ++seen[static_cast<size_t>(u)];
    }
  }
  for (int64_t u = 0; u < kTotal; ++u) ASSERT_EQ(seen[static_cast<size_t>(u)], 1) << "unit " << u;
}

}  // namespace
}  // namespace cellserve::engine
