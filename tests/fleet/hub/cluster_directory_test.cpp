// ClusterDirectory (fleet/hub/cluster_directory.h): HubPeers' directory and locator over a real
// ClusterStore on both engines, on a manual clock for its caching. A database that stops
// answering is played by a wrapper that fails the reads while told to.
#include "fleet/hub/cluster_directory.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "tests/fleet/store/store_fixture.h"

namespace cellserve::fleet {
namespace {

using namespace std::chrono_literals;

// The store, with its reads failing (Unavailable) while `down`.
class FlakyCluster final : public ClusterStore {
 public:
  explicit FlakyCluster(ClusterStore& real) : real_(real) {}
  std::atomic<bool> down{false};

  Result<int64_t> heartbeat_hub(const std::string& id, const std::string& url) override {
    return real_.heartbeat_hub(id, url);
  }
  Result<Hubs> hubs() override { return down ? Result<Hubs>(unavailable()) : real_.hubs(); }
  Status remove_hub(const std::string& id) override { return real_.remove_hub(id); }
  Status record_tunnel(const std::string& p, const std::string& h) override { return real_.record_tunnel(p, h); }
  Result<bool> drop_tunnel(const std::string& p, const std::string& h) override { return real_.drop_tunnel(p, h); }
  Result<std::vector<TunnelRecord>> tunnels() override {
    return down ? Result<std::vector<TunnelRecord>>(unavailable()) : real_.tunnels();
  }
  Result<std::optional<LeaseGrant>> acquire_lease(const std::string& n, const std::string& h,
                                                  std::chrono::milliseconds ttl) override {
    return real_.acquire_lease(n, h, ttl);
  }
  Status release_lease(const std::string& n, const std::string& h) override { return real_.release_lease(n, h); }
  Result<std::vector<LeaseRecord>> leases() override { return real_.leases(); }

 private:
  static Status unavailable() { return Status::unavailable("the database is gone"); }
  ClusterStore& real_;
};

class ClusterDirectoryTest : public StoreTest {
 protected:
  void SetUp() override {
    StoreTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    store_ = reopen();
    ASSERT_NE(store_, nullptr);
    flaky_ = std::make_unique<FlakyCluster>(store_->cluster());
  }
  ClusterDirectoryOptions options() const {
    ClusterDirectoryOptions o;
    o.live_within = 2s;
    o.tunnels_every = 1s;
    o.stale_limit = 5s;
    return o;
  }
  std::unique_ptr<Store> store_;
  std::unique_ptr<FlakyCluster> flaky_;
  ManualClock clock_;
};

INSTANTIATE_TEST_SUITE_P(Engines, ClusterDirectoryTest, ::testing::Values(StoreEngine::Sqlite, StoreEngine::Postgres),
                         store_engine_name);

std::vector<std::string> ids(const std::vector<PeerHub>& hubs) {
  std::vector<std::string> out;
  for (const PeerHub& h : hubs) out.push_back(h.id + " " + h.peer_url);
  return out;
}

TEST_P(ClusterDirectoryTest, LiveHubsAreThoseWithAFreshHeartbeatByTheDatabasesClock) {
  ClusterDirectoryOptions o = options();
  o.live_within = 300ms;
  ClusterDirectory dir(*flaky_, clock_, o);
  ASSERT_TRUE(flaky_->heartbeat_hub("hub-old", "http://10.0.0.1:1").ok());
  // Real time passes for the database's clock (the directory's own clock plays no part here).
  std::this_thread::sleep_for(600ms);
  ASSERT_TRUE(flaky_->heartbeat_hub("hub-new", "http://10.0.0.2:2").ok());
  EXPECT_EQ(ids(dir.live_hubs()), std::vector<std::string>{"hub-new http://10.0.0.2:2"});
  EXPECT_EQ(ids(dir.directory()()), std::vector<std::string>{"hub-new http://10.0.0.2:2"});
}

TEST_P(ClusterDirectoryTest, TunnelOwnersAreReadAtMostOncePerInterval) {
  ClusterDirectory dir(*flaky_, clock_, options());
  ASSERT_TRUE(flaky_->record_tunnel("p1", "hub-a").ok());
  EXPECT_EQ(dir.hub_of("p1"), "hub-a");
  EXPECT_EQ(dir.hub_of("p2"), std::nullopt);
  ASSERT_TRUE(flaky_->record_tunnel("p1", "hub-b").ok());  // the agent dialed another hub
  EXPECT_EQ(dir.locator()("p1"), "hub-a");                 // within the interval: the last read
  clock_.advance(1s);
  EXPECT_EQ(dir.hub_of("p1"), "hub-b");
}

TEST_P(ClusterDirectoryTest, WithoutTheDatabaseTheLastReadServesForABoundedTimeOnly) {
  ClusterDirectory dir(*flaky_, clock_, options());
  ASSERT_TRUE(flaky_->heartbeat_hub("hub-a", "http://10.0.0.1:1").ok());
  ASSERT_TRUE(flaky_->record_tunnel("p1", "hub-a").ok());
  EXPECT_EQ(dir.hub_of("p1"), "hub-a");
  EXPECT_EQ(dir.live_hubs().size(), 1u);
  flaky_->down = true;
  clock_.advance(5s);  // at the limit: still the last read
  EXPECT_EQ(dir.hub_of("p1"), "hub-a");
  EXPECT_EQ(dir.live_hubs().size(), 1u);
  clock_.advance(1ms);  // past it: nothing from memory
  EXPECT_EQ(dir.hub_of("p1"), std::nullopt);
  EXPECT_TRUE(dir.live_hubs().empty());
  flaky_->down = false;
  clock_.advance(1s);
  EXPECT_EQ(dir.hub_of("p1"), "hub-a");
  EXPECT_EQ(dir.live_hubs().size(), 1u);
}

}  // namespace
}  // namespace cellserve::fleet
