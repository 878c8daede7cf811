#include "base/clock.h"
#include "base/wakeup.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

namespace cellserve {
namespace {

using std::chrono::milliseconds;

TEST(ManualClock, StandsStillUntilAdvanced) {
  ManualClock clock(1000);
  const Clock::time_point start = clock.now();
  EXPECT_EQ(clock.now(), start);
  clock.advance(milliseconds(250));
  EXPECT_EQ(clock.now() - start, milliseconds(250));
  EXPECT_EQ(clock.wall_ms(), 1250);
}

TEST(ManualClock, AWaitEndsExactlyAtItsDeadline) {
  ManualClock clock;
  const Clock::time_point deadline = clock.now() + milliseconds(100);
  std::atomic<bool> woke{false};
  std::thread sleeper([&] {
    clock.sleep_until(deadline);
    woke = true;
  });
  ASSERT_TRUE(clock.await_sleepers(1));
  clock.advance(milliseconds(99));
  // Still asleep one millisecond before the deadline: it waits for the clock, not for real time.
  ASSERT_TRUE(clock.await_sleepers(1));
  EXPECT_FALSE(woke.load());
  clock.advance(milliseconds(1));
  sleeper.join();
  EXPECT_TRUE(woke.load());
  EXPECT_EQ(clock.sleepers(), 0);
}

TEST(ManualClock, ANotifiedWaitReturnsBeforeItsDeadline) {
  ManualClock clock;
  std::mutex mu;
  std::condition_variable cv;
  bool ready = false;
  std::thread waiter([&] {
    std::unique_lock lock(mu);
    EXPECT_TRUE(clock.wait_until(cv, lock, clock.now() + std::chrono::hours(1), [&] { return ready; }));
  });
  ASSERT_TRUE(clock.await_sleepers(1));
  {
    std::lock_guard lock(mu);
    ready = true;
  }
  cv.notify_all();
  waiter.join();
}

TEST(ManualClock, APassedDeadlineDoesNotWait) {
  ManualClock clock;
  std::mutex mu;
  std::condition_variable cv;
  std::unique_lock lock(mu);
  EXPECT_EQ(clock.wait_until(cv, lock, clock.now()), std::cv_status::timeout);
  EXPECT_FALSE(clock.await_sleepers(1, milliseconds(1)));
}

TEST(Wakeup, ARequestMadeWhileTheLoopWasBusyEndsItsNextWaitAtOnce) {
  ManualClock clock;
  Wakeup wakeup(clock);
  wakeup.request();
  EXPECT_TRUE(wakeup.wait(std::chrono::hours(1)));  // no advance needed: it returns at once
}

TEST(Wakeup, AWaitLastsItsIntervalOnTheClockAndStopEndsIt) {
  ManualClock clock;
  Wakeup wakeup(clock);
  std::atomic<int> rounds{0};
  std::thread loop([&] {
    while (wakeup.wait(milliseconds(250))) ++rounds;
  });
  ASSERT_TRUE(clock.await_sleepers(1));
  clock.advance(milliseconds(249));
  EXPECT_EQ(rounds.load(), 0);
  clock.advance(milliseconds(1));
  ASSERT_TRUE(clock.await_sleepers(1));  // waiting again after one round
  EXPECT_EQ(rounds.load(), 1);
  wakeup.stop();
  loop.join();
  EXPECT_TRUE(wakeup.stopped());
  EXPECT_FALSE(wakeup.wait(milliseconds(1)));
}

TEST(SystemClock, WallTimeIsTheCalendar) {
  // 2023-11-14 or later, and within a day of std::chrono's own reading.
  const int64_t ms = Clock::system().wall_ms();
  EXPECT_GT(ms, 1'700'000'000'000);
  const Clock::time_point ours = Clock::system().now();
  const Clock::time_point later = std::chrono::steady_clock::now();
  EXPECT_LE(ours, later);
}

}  // namespace
}  // namespace cellserve
