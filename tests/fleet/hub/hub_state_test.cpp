// HubState::routing_fresh on a manual clock and a real SQLite store: how long a hub may route from
// its in-memory registry. The registry is read once a reconcile round, every poll interval, so a
// live store must never look lost between two rounds, however long the poll.
#include "fleet/hub/hub_state.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "fleet/crypto/identity.h"
#include "fleet/store/open_store.h"

namespace cellserve::fleet {
namespace {

using namespace std::chrono_literals;

class StaleRoutingTest : public ::testing::Test {
 protected:
  static HubOptions with_poll(std::chrono::milliseconds poll) {
    HubOptions o;
    o.poll_interval = poll;
    o.log = [](const std::string&) {};
    return o;
  }
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("cs-stale-routing-" + random_hex(6));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::unique_ptr<Store> open() {
    auto store = open_store((dir_ / "hub.db").string());
    EXPECT_TRUE(store.ok()) << store.status().to_string();
    return store.ok() ? std::move(*store) : nullptr;
  }

  std::filesystem::path dir_;
  ManualClock clock_{1'796'601'600'000};
};

// The load bench's hubs polled every 5 s: each answered its clients "cannot reach its store" at the
// end of every round, with the database answering every read.
TEST_F(StaleRoutingTest, ALivePollLongerThanTheStaleLimitKeepsRouting) {
  HubState state(with_poll(6s), clock_);
  state.store = open();
  ASSERT_NE(state.store, nullptr);
  ASSERT_TRUE(state.refresh_registry());
  clock_.advance(6s);  // one poll interval: the next round has not read yet
  EXPECT_TRUE(state.routing_fresh());
  clock_.advance(4s);  // a round slowed by a busy machine
  EXPECT_TRUE(state.routing_fresh());
  ASSERT_TRUE(state.refresh_registry());
  clock_.advance(6s);
  EXPECT_TRUE(state.routing_fresh());
}

TEST_F(StaleRoutingTest, PastOnePollAndTheLimitWithoutARead503s) {
  HubState state(with_poll(1s), clock_);
  state.store = open();
  ASSERT_NE(state.store, nullptr);
  ASSERT_TRUE(state.refresh_registry());
  clock_.advance(1s + kMaxStaleRouting);
  EXPECT_TRUE(state.routing_fresh()) << "at the bound";
  clock_.advance(1ms);
  EXPECT_FALSE(state.routing_fresh()) << "past one poll and kMaxStaleRouting, nothing is routed from memory";
  ASSERT_TRUE(state.refresh_registry());
  EXPECT_TRUE(state.routing_fresh()) << "serves again once the store answers";
}

}  // namespace
}  // namespace cellserve::fleet
