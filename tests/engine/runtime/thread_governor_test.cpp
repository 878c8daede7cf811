#include "engine/runtime/thread_governor.h"

#include <gtest/gtest.h>

#include <chrono>
#include <vector>

namespace cellserve::engine {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using Clock = ThreadGovernor::Clock;

constexpr auto kWindow = milliseconds(200);

// Every thread busy for the whole window, `waiting` of which one of them spent waiting for a CPU.
std::vector<SchedTimes> busy(int threads, double waiting) {
  const auto window_ns = static_cast<uint64_t>(std::chrono::nanoseconds(kWindow).count());
  std::vector<SchedTimes> t(static_cast<size_t>(threads), SchedTimes{window_ns, 0});
  t.back().wait_ns = static_cast<uint64_t>(waiting * static_cast<double>(window_ns));
  t.back().run_ns = window_ns - t.back().wait_ns;
  return t;
}

TEST(ThreadGovernor, KeepsEveryThreadWhileNoneWaitsForACpu) {
  ThreadGovernor g(4);
  Clock::time_point now{};
  for (int i = 0; i < 50; ++i) EXPECT_EQ(g.update(busy(4, 0.02), kWindow, now += kWindow), 4);
}

TEST(ThreadGovernor, ShedsAThreadThatWaitsThenTriesAgainLaterAndLongerAfterEachFailure) {
  ThreadGovernor g(2);
  Clock::time_point now{};
  EXPECT_EQ(g.update(busy(2, 0.5), kWindow, now += kWindow), 1);  // half its time on the run queue
  // One thread on the free core: no wait. The retry comes 2 s after the shedding.
  const Clock::time_point shed = now;
  while (now + kWindow - shed < seconds(2)) EXPECT_EQ(g.update(busy(1, 0.0), kWindow, now += kWindow), 1);
  EXPECT_EQ(g.update(busy(1, 0.0), kWindow, now += kWindow), 2);
  // The try meets the other process again: shed, and the next try waits 4 s.
  EXPECT_EQ(g.update(busy(2, 0.45), kWindow, now += kWindow), 1);
  const Clock::time_point failed = now;
  while (now + kWindow - failed < seconds(4)) EXPECT_EQ(g.update(busy(1, 0.0), kWindow, now += kWindow), 1);
  EXPECT_EQ(g.update(busy(1, 0.0), kWindow, now += kWindow), 2);
  // This time the other process has gone: two threads stay, and a later shedding starts at 2 s.
  for (int i = 0; i < 20; ++i) EXPECT_EQ(g.update(busy(2, 0.01), kWindow, now += kWindow), 2);
  EXPECT_EQ(g.update(busy(2, 0.3), kWindow, now += kWindow), 1);
  const Clock::time_point again = now;
  while (now + kWindow - again < seconds(2)) EXPECT_EQ(g.update(busy(1, 0.0), kWindow, now += kWindow), 1);
  EXPECT_EQ(g.update(busy(1, 0.0), kWindow, now += kWindow), 2);
}

TEST(ThreadGovernor, TheRetryIntervalStopsGrowingAtItsLongest) {
  ThreadGovernor::Options o;
  o.first_retry = seconds(1);
  o.longest_retry = seconds(4);
  ThreadGovernor g(2, o);
  Clock::time_point now{};
  std::vector<Clock::duration> gaps;
  Clock::time_point last_shed{};
  for (int i = 0; i < 400 && gaps.size() < 5; ++i) {
    const int before = g.threads();
    const int after = g.update(before == 2 ? busy(2, 0.5) : busy(1, 0.0), kWindow, now += kWindow);
    if (before == 2 && after == 1) {
      if (last_shed != Clock::time_point{}) gaps.push_back(now - last_shed);
      last_shed = now;
    }
  }
  ASSERT_EQ(gaps.size(), 5u);
  // Each gap is the retry interval plus the one window the try ran: 1, 2, 4, 4, 4 s.
  EXPECT_EQ(gaps[0], seconds(1) + kWindow);
  EXPECT_EQ(gaps[1], seconds(2) + kWindow);
  for (size_t i = 2; i < gaps.size(); ++i) EXPECT_EQ(gaps[i], seconds(4) + kWindow) << i;
}

TEST(ThreadGovernor, AnIdleWindowChangesNothing) {
  ThreadGovernor g(2);
  Clock::time_point now{};
  // A pool that ran one short job in the window, its thread waiting for most of it.
  const std::vector<SchedTimes> idle = {{1'000'000, 0}, {1'000'000, 9'000'000}};
  for (int i = 0; i < 10; ++i) EXPECT_EQ(g.update(idle, kWindow, now += kWindow), 2);
  EXPECT_EQ(g.update({}, kWindow, now += kWindow), 2);
}

TEST(ThreadGovernor, NeverGoesBelowOneThread) {
  ThreadGovernor g(1);
  Clock::time_point now{};
  EXPECT_EQ(g.update(busy(1, 0.9), kWindow, now += kWindow), 1);
  EXPECT_EQ(ThreadGovernor(0).threads(), 1);
}

TEST(SchedTimes, ParsesTheKernelsLineAndRefusesAnythingElse) {
  const auto t = parse_sched_times("123456789 42 17\n");
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(t->run_ns, 123456789u);
  EXPECT_EQ(t->wait_ns, 42u);
  EXPECT_FALSE(parse_sched_times("").has_value());
  EXPECT_FALSE(parse_sched_times("12").has_value());
  EXPECT_FALSE(parse_sched_times("x 1 2").has_value());
  EXPECT_FALSE(parse_sched_times("-1 2 3").has_value());
  EXPECT_FALSE(parse_sched_times("1  2 3").has_value());
}

TEST(SchedTimes, ThisThreadsTimesGrowAsItRuns) {
  const auto before = read_own_sched_times();
  if (!before) GTEST_SKIP() << "this kernel has no /proc/thread-self/schedstat";
  volatile uint64_t x = 0;
  for (int i = 0; i < 20'000'000; ++i) x = x + static_cast<uint64_t>(i);
  const auto after = read_own_sched_times();
  ASSERT_TRUE(after.has_value());
  EXPECT_GT(after->run_ns, before->run_ns);
}

}  // namespace
}  // namespace cellserve::engine
