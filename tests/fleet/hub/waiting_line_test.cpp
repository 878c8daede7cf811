// The deployment queue at the hub: bounded, with deadlines, abandoned by clients that leave, and
// fair by client key when capacity frees up.
#include "fleet/hub/waiting_line.h"

#include <atomic>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace cellserve::fleet {
namespace {

using namespace std::chrono_literals;
using Outcome = WaitingLine::Outcome;

// Capacity the test hands out one unit at a time.
struct Capacity {
  std::atomic<int> free{0};
  explicit Capacity(int n) : free(n) {}
  bool take() {
    int n = free.load();
    while (n > 0) {
      if (free.compare_exchange_weak(n, n - 1)) return true;
    }
    return false;
  }
};

TEST(WaitingLine, GrantsAtOnceWhenCapacityIsFreeAndNobodyWaits) {
  WaitingLine line;
  Capacity cap{1};
  EXPECT_EQ(line.wait("a", 0, WaitingLine::Clock::now() + 1s, nullptr, [&] { return cap.take(); }), Outcome::Granted);
  // No capacity and no room to wait: full at once.
  EXPECT_EQ(line.wait("a", 0, WaitingLine::Clock::now() + 1s, nullptr, [&] { return cap.take(); }), Outcome::Full);
}

TEST(WaitingLine, TimesOutAtTheDeadlineAndLeavesTheLine) {
  WaitingLine line;
  Capacity cap{0};
  EXPECT_EQ(line.wait("a", 4, WaitingLine::Clock::now() + 150ms, nullptr, [&] { return cap.take(); }),
            Outcome::TimedOut);
  EXPECT_EQ(line.waiting(), 0u);
}

TEST(WaitingLine, AClientThatLeavesStopsWaiting) {
  WaitingLine line;
  Capacity cap{0};
  std::atomic<bool> gone{false};
  std::thread leave([&] {
    std::this_thread::sleep_for(50ms);
    gone = true;
  });
  EXPECT_EQ(line.wait(
                "a", 4, WaitingLine::Clock::now() + 10s, [&] { return gone.load(); }, [&] { return cap.take(); }),
            Outcome::Abandoned);
  leave.join();
  EXPECT_EQ(line.waiting(), 0u);
}

TEST(WaitingLine, IsBoundedAndServesKeysRoundRobin) {
  WaitingLine line;
  std::mutex order_mu;
  std::vector<std::string> order;
  Capacity cap{0};
  std::vector<std::thread> clients;
  // One busy client queues 6 requests before two others queue one each.
  auto enqueue = [&](const std::string& key, int n) {
    for (int i = 0; i < n; ++i) {
      const size_t before = line.waiting();
      clients.emplace_back([&, key] {
        const Outcome o = line.wait(key, 8, WaitingLine::Clock::now() + 10s, nullptr, [&] {
          if (!cap.take()) return false;
          std::lock_guard lock(order_mu);
          order.push_back(key);
          return true;
        });
        EXPECT_EQ(o, Outcome::Granted);
      });
      while (line.waiting() == before) std::this_thread::sleep_for(1ms);
    }
  };
  enqueue("batch", 6);
  enqueue("alice", 1);
  enqueue("bob", 1);
  EXPECT_EQ(line.waiting(), 8u);
  EXPECT_EQ(line.wait("carol", 8, WaitingLine::Clock::now() + 1s, nullptr, [] { return true; }), Outcome::Full);
  // Free the capacity one unit at a time, as requests would end.
  for (size_t i = 1; i <= 8; ++i) {
    cap.free = 1;
    line.wake();
    for (;;) {
      std::lock_guard lock(order_mu);
      if (order.size() == i) break;
    }
  }
  for (std::thread& t : clients) t.join();
  ASSERT_EQ(order.size(), 8u);
  // batch, alice and bob alternate while each has requests waiting; batch's rest follow.
  EXPECT_EQ(order, (std::vector<std::string>{"batch", "alice", "bob", "batch", "batch", "batch", "batch", "batch"}));
}

}  // namespace
}  // namespace cellserve::fleet
