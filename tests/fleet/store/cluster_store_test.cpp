// ClusterStore (cluster_store.h) on both engines, each test with two Store objects on one
// database: two connections, as two hub processes would hold.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "fleet/store/cluster_store.h"
#include "tests/fleet/store/store_fixture.h"

namespace cellserve::fleet {
namespace {

using std::chrono::milliseconds;

constexpr milliseconds kLongTtl{60'000};

class ClusterStoreTest : public StoreTest {
 protected:
  void SetUp() override {
    StoreTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    one_ = reopen();
    two_ = reopen();
    ASSERT_NE(one_, nullptr);
    ASSERT_NE(two_, nullptr);
  }
  ClusterStore& hub_a() { return one_->cluster(); }
  ClusterStore& hub_b() { return two_->cluster(); }

  std::unique_ptr<Store> one_;
  std::unique_ptr<Store> two_;
};

INSTANTIATE_TEST_SUITE_P(Engines, ClusterStoreTest, ::testing::Values(StoreEngine::Sqlite, StoreEngine::Postgres),
                         store_engine_name);

std::optional<LeaseGrant> acquire(ClusterStore& c, const std::string& name, const std::string& hub, milliseconds ttl) {
  auto grant = c.acquire_lease(name, hub, ttl);
  EXPECT_TRUE(grant.ok()) << grant.status().to_string();
  return grant.ok() ? *grant : std::nullopt;
}

std::vector<LeaseRecord> leases_of(ClusterStore& c) {
  auto rows = c.leases();
  EXPECT_TRUE(rows.ok()) << rows.status().to_string();
  return rows.ok() ? *rows : std::vector<LeaseRecord>{};
}

std::vector<TunnelRecord> tunnels_of(ClusterStore& c) {
  auto rows = c.tunnels();
  EXPECT_TRUE(rows.ok()) << rows.status().to_string();
  return rows.ok() ? *rows : std::vector<TunnelRecord>{};
}

ClusterStore::Hubs hubs_of(ClusterStore& c) {
  auto rows = c.hubs();
  EXPECT_TRUE(rows.ok()) << rows.status().to_string();
  return rows.ok() ? *rows : ClusterStore::Hubs{};
}

TEST_P(ClusterStoreTest, ExactlyOneOfManyRacingHubsGetsTheLease) {
  constexpr int kHubs = 8;
  std::atomic<int> granted{0};
  std::atomic<int> failed{0};
  std::vector<std::thread> hubs;
  for (int i = 0; i < kHubs; ++i) {
    hubs.emplace_back([&, i] {
      ClusterStore& c = i % 2 == 0 ? hub_a() : hub_b();
      auto grant = c.acquire_lease("reconcile", "hub-" + std::to_string(i), kLongTtl);
      if (!grant.ok()) {
        ++failed;
      } else if (grant->has_value()) {
        ++granted;
      }
    });
  }
  for (auto& t : hubs) t.join();
  EXPECT_EQ(failed.load(), 0);
  EXPECT_EQ(granted.load(), 1);
  const std::vector<LeaseRecord> rows = leases_of(hub_a());
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].name, "reconcile");
  EXPECT_EQ(rows[0].token, 1);
}

TEST_P(ClusterStoreTest, ARenewalKeepsTheTokenAndAnExpiredLeasePassesWithAHigherOne) {
  const auto first = acquire(hub_a(), "batch", "a", milliseconds(200));
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ(first->expires_ms - first->db_now_ms, 200);
  const auto renewed = acquire(hub_a(), "batch", "a", milliseconds(200));
  ASSERT_TRUE(renewed.has_value());
  EXPECT_EQ(renewed->token, first->token);
  EXPECT_GE(renewed->expires_ms, first->expires_ms);

  // b is refused until the database's clock passes a's expiry; never judged by this test's clock.
  std::optional<LeaseGrant> taken;
  for (int tries = 0; tries < 1000 && !taken; ++tries) {
    taken = acquire(hub_b(), "batch", "b", kLongTtl);
    if (!taken) std::this_thread::sleep_for(milliseconds(20));
  }
  ASSERT_TRUE(taken.has_value()) << "the lease never expired";
  EXPECT_GT(taken->token, renewed->token);
  EXPECT_GE(taken->db_now_ms, renewed->expires_ms);
  EXPECT_FALSE(acquire(hub_a(), "batch", "a", kLongTtl).has_value());  // a lost it
  const std::vector<LeaseRecord> rows = leases_of(hub_a());
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].holder, "b");
  EXPECT_EQ(rows[0].token, taken->token);
  EXPECT_EQ(rows[0].expires_ms, taken->expires_ms);
}

TEST_P(ClusterStoreTest, AReleasedLeaseIsTakenAtOnce) {
  const auto held = acquire(hub_a(), "reconcile", "a", kLongTtl);
  ASSERT_TRUE(held.has_value());
  EXPECT_FALSE(acquire(hub_b(), "reconcile", "b", kLongTtl).has_value());
  ASSERT_TRUE(hub_b().release_lease("reconcile", "b").ok());  // not b's to release: nothing happens
  EXPECT_FALSE(acquire(hub_b(), "reconcile", "b", kLongTtl).has_value());
  ASSERT_TRUE(hub_a().release_lease("reconcile", "a").ok());
  const auto taken = acquire(hub_b(), "reconcile", "b", kLongTtl);
  ASSERT_TRUE(taken.has_value());
  EXPECT_GT(taken->token, held->token);
  // Leases are independent of each other.
  EXPECT_TRUE(acquire(hub_a(), "batch", "a", kLongTtl).has_value());
}

TEST_P(ClusterStoreTest, ALeaseNeedsASaneTtlAndAHolder) {
  EXPECT_EQ(hub_a().acquire_lease("x", "a", milliseconds(0)).status().code(), StatusCode::InvalidArgument);
  EXPECT_EQ(hub_a().acquire_lease("x", "a", milliseconds(-5)).status().code(), StatusCode::InvalidArgument);
  EXPECT_EQ(hub_a().acquire_lease("x", "a", std::chrono::hours(24 * 365)).status().code(), StatusCode::InvalidArgument);
  EXPECT_EQ(hub_a().acquire_lease("x", "", kLongTtl).status().code(), StatusCode::InvalidArgument);
  EXPECT_TRUE(leases_of(hub_a()).empty());
}

TEST_P(ClusterStoreTest, TunnelsMoveBetweenHubsAndAStaleDropKeepsTheNewRecord) {
  ASSERT_TRUE(hub_a().record_tunnel("p1", "a").ok());
  ASSERT_TRUE(hub_a().record_tunnel("p2", "a").ok());
  // p1's agent dials b; a notices its old tunnel closing only afterwards.
  ASSERT_TRUE(hub_b().record_tunnel("p1", "b").ok());
  auto stale = hub_a().drop_tunnel("p1", "a");
  ASSERT_TRUE(stale.ok()) << stale.status().to_string();
  EXPECT_FALSE(*stale);
  std::vector<TunnelRecord> rows = tunnels_of(hub_a());
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].processor_id, "p1");
  EXPECT_EQ(rows[0].hub_id, "b");
  EXPECT_GT(rows[0].connected_ms, 0);
  EXPECT_EQ(rows[1].hub_id, "a");

  auto dropped = hub_a().drop_tunnel("p2", "a");
  ASSERT_TRUE(dropped.ok());
  EXPECT_TRUE(*dropped);
  rows = tunnels_of(hub_b());
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].processor_id, "p1");
}

TEST_P(ClusterStoreTest, HubsCountTheirAgentsAndCarryTheDatabasesNow) {
  auto a_first = hub_a().heartbeat_hub("a", "https://10.0.0.1:8443");
  ASSERT_TRUE(a_first.ok()) << a_first.status().to_string();
  ASSERT_TRUE(hub_b().heartbeat_hub("b", "https://10.0.0.2:8443").ok());
  ASSERT_TRUE(hub_a().record_tunnel("p1", "a").ok());
  ASSERT_TRUE(hub_a().record_tunnel("p2", "a").ok());
  ASSERT_TRUE(hub_b().record_tunnel("p3", "b").ok());
  auto a_again = hub_a().heartbeat_hub("a", "https://10.0.0.9:8443");  // a moved address
  ASSERT_TRUE(a_again.ok());
  EXPECT_GE(*a_again, *a_first);

  const ClusterStore::Hubs view = hubs_of(hub_b());
  ASSERT_EQ(view.hubs.size(), 2u);
  const HubRecord& a = view.hubs[0].id == "a" ? view.hubs[0] : view.hubs[1];
  const HubRecord& b = view.hubs[0].id == "a" ? view.hubs[1] : view.hubs[0];
  EXPECT_EQ(a.id, "a");
  EXPECT_EQ(a.peer_url, "https://10.0.0.9:8443");
  EXPECT_EQ(a.started_ms, *a_first);  // kept from the first heartbeat
  EXPECT_EQ(a.heartbeat_ms, *a_again);
  EXPECT_EQ(a.agents, 2);
  EXPECT_EQ(b.agents, 1);
  EXPECT_GE(view.db_now_ms, a.heartbeat_ms);
  EXPECT_LE(view.hubs[0].started_ms, view.hubs[1].started_ms);  // oldest start first

  ClusterStore::Hubs none;
  {
    auto fresh = reopen();
    ASSERT_TRUE(fresh->cluster().remove_hub("a").ok());
    ASSERT_TRUE(fresh->cluster().remove_hub("b").ok());
    none = hubs_of(fresh->cluster());
  }
  EXPECT_TRUE(none.hubs.empty());
  EXPECT_GE(none.db_now_ms, view.db_now_ms);  // the database's now, even with no hub
}

TEST_P(ClusterStoreTest, RemovingAHubClearsItsTunnelsAndReleasesItsLeases) {
  ASSERT_TRUE(hub_a().heartbeat_hub("a", "https://a").ok());
  ASSERT_TRUE(hub_b().heartbeat_hub("b", "https://b").ok());
  ASSERT_TRUE(hub_a().record_tunnel("p1", "a").ok());
  ASSERT_TRUE(hub_b().record_tunnel("p2", "b").ok());
  const auto a_lease = acquire(hub_a(), "reconcile", "a", kLongTtl);
  ASSERT_TRUE(a_lease.has_value());
  ASSERT_TRUE(acquire(hub_b(), "batch", "b", kLongTtl).has_value());

  // b, the leader, forgets a (silent for long).
  ASSERT_TRUE(hub_b().remove_hub("a").ok());
  const ClusterStore::Hubs view = hubs_of(hub_b());
  ASSERT_EQ(view.hubs.size(), 1u);
  EXPECT_EQ(view.hubs[0].id, "b");
  const std::vector<TunnelRecord> rows = tunnels_of(hub_b());
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].hub_id, "b");
  const auto taken = acquire(hub_b(), "reconcile", "b", kLongTtl);  // at once
  ASSERT_TRUE(taken.has_value());
  EXPECT_GT(taken->token, a_lease->token);
  EXPECT_FALSE(acquire(hub_a(), "batch", "a", kLongTtl).has_value());  // b's lease untouched
}

TEST_P(ClusterStoreTest, ClusterRowsSurviveARestart) {
  ASSERT_TRUE(hub_a().heartbeat_hub("a", "https://a").ok());
  ASSERT_TRUE(hub_a().record_tunnel("p1", "a").ok());
  const auto held = acquire(hub_a(), "reconcile", "a", kLongTtl);
  ASSERT_TRUE(held.has_value());
  one_.reset();
  auto again = reopen();
  ASSERT_NE(again, nullptr);
  EXPECT_EQ(hubs_of(again->cluster()).hubs.size(), 1u);
  EXPECT_EQ(tunnels_of(again->cluster()).size(), 1u);
  const auto renewed = acquire(again->cluster(), "reconcile", "a", kLongTtl);
  ASSERT_TRUE(renewed.has_value());
  EXPECT_EQ(renewed->token, held->token);
}

}  // namespace
}  // namespace cellserve::fleet
