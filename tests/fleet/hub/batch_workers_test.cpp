#include "fleet/hub/batch_workers.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <thread>

namespace cellserve::fleet {
namespace {

using namespace std::chrono_literals;

TEST(BatchWorkers, CountsLinesInFlightPerBatchAndWakesWhenOneEnds) {
  BatchWorkers workers;
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  for (int i = 0; i < 3; ++i) workers.start("a", [released] { released.wait(); });
  workers.start("b", [released] { released.wait(); });
  EXPECT_EQ(workers.in_flight("a"), 3u);
  EXPECT_EQ(workers.in_flight("b"), 1u);
  EXPECT_EQ(workers.in_flight("c"), 0u);
  workers.reap();  // nothing has ended: nothing is joined
  EXPECT_EQ(workers.threads(), 4u);

  release.set_value();
  const auto deadline = std::chrono::steady_clock::now() + 30s;
  while ((workers.in_flight("a") > 0 || workers.in_flight("b") > 0) && std::chrono::steady_clock::now() < deadline) {
    EXPECT_TRUE(workers.wait(100ms));
  }
  EXPECT_EQ(workers.in_flight("a"), 0u);
  EXPECT_EQ(workers.in_flight("b"), 0u);
  workers.reap();
  EXPECT_EQ(workers.threads(), 0u);
}

TEST(BatchWorkers, WaitReturnsOnWakeAndIsFalseOnceStopped) {
  BatchWorkers workers;
  workers.wake();
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_TRUE(workers.wait(10s));  // the wake-up was kept for the next wait
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 5s);
  std::thread stopper([&] {
    std::this_thread::sleep_for(20ms);
    workers.stop();
  });
  EXPECT_FALSE(workers.wait(10s));
  stopper.join();
  EXPECT_FALSE(workers.wait(1ms));
}

// The batch loop reaps while lines end: a line that ends while its thread is being joined must
// not wait for a lock the joiner holds. Hundreds of lines ending at once against a loop that
// reaps without pause made the former runner hang within a few rounds.
TEST(BatchWorkers, LinesEndingWhileTheLoopReapsNeverDeadlock) {
  constexpr int kLines = 2000;
  auto* workers = new BatchWorkers;  // leaked if it hangs: its threads may still use it
  auto* ran = new std::atomic<int>(0);
  // The dispatcher and the loop run apart from the test's thread, which only waits for them with
  // a deadline: a hang fails the test instead of stopping it.
  auto finished = std::async(std::launch::async, [workers, ran] {
    std::atomic<bool> starting{true};
    std::thread loop([&] {
      while (starting || workers->threads() > 0) {
        workers->reap();
        workers->wait(1ms);
      }
    });
    for (int i = 0; i < kLines; ++i) workers->start("batch", [ran] { ran->fetch_add(1); });
    starting = false;
    loop.join();
  });
  if (finished.wait_for(60s) != std::future_status::ready) {
    ADD_FAILURE() << "the batch loop hung reaping finished lines";
    std::fflush(nullptr);
    std::_Exit(1);  // the hung threads cannot be joined
  }
  EXPECT_EQ(ran->load(), kLines);
  EXPECT_EQ(workers->in_flight("batch"), 0u);
  delete workers;
  delete ran;
}

}  // namespace
}  // namespace cellserve::fleet
