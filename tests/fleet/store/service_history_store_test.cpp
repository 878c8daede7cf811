// The store suite, once per engine: what replicas cost over their ready intervals, and the serving
// history `verify --hub` reads.

#include <gtest/gtest.h>

#include "fleet/store/store.h"
#include "tests/fleet/store/store_fixture.h"
#include "tests/fleet/store/store_records.h"

namespace cellserve::fleet {
namespace {

TEST_P(StoreTest, CostAccruesOverReadyIntervals) {
  auto store = reopen();
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(store->upsert_processor(make_processor("p1", 2.4, kT0)).ok());
  ASSERT_TRUE(store->create_deployment(make_deployment("d", 1, 0, kT0)).ok());
  Replica r = replica_at(*store, "d", 0);
  r.processor_id = "p1";
  r.price_per_day = 2.4;  // 0.1 per hour
  r.state = ReplicaState::Loading;
  ASSERT_TRUE(store->update_replica(r, kT0).ok());
  EXPECT_EQ(store->replica_cost(replica_at(*store, "d", 0), kT0 + 5 * kHour), 0);  // not serving yet

  r.state = ReplicaState::Ready;
  r.cost = 99;            // ignored: the store computes cost
  r.ready_since_ms = 42;  // ignored
  ASSERT_TRUE(store->update_replica(r, kT0 + kHour).ok());
  Replica stored = replica_at(*store, "d", 0);
  EXPECT_EQ(stored.ready_since_ms, kT0 + kHour);
  EXPECT_EQ(stored.cost, 0);
  EXPECT_NEAR(store->replica_cost(stored, kT0 + 3 * kHour), 0.2, 1e-12);  // open interval

  // Staying Ready (a progress or detail update) keeps the interval open.
  stored.detail = "serving";
  ASSERT_TRUE(store->update_replica(stored, kT0 + 2 * kHour).ok());
  EXPECT_EQ(replica_at(*store, "d", 0).ready_since_ms, kT0 + kHour);

  // Leaving Ready closes it: 3 hours served.
  stored.state = ReplicaState::Failed;
  ASSERT_TRUE(store->update_replica(stored, kT0 + 4 * kHour).ok());
  stored = replica_at(*store, "d", 0);
  EXPECT_NEAR(stored.cost, 0.3, 1e-12);
  EXPECT_EQ(stored.ready_since_ms, 0);
  EXPECT_NEAR(store->replica_cost(stored, kT0 + 100 * kHour), 0.3, 1e-12);

  // A second interval adds to the first; mark_processor_offline closes it.
  stored.state = ReplicaState::Ready;
  ASSERT_TRUE(store->update_replica(stored, kT0 + 10 * kHour).ok());
  EXPECT_NEAR(store->replica_cost(replica_at(*store, "d", 0), kT0 + 12 * kHour), 0.5, 1e-12);
  ASSERT_TRUE(store->mark_processor_offline("p1", kT0 + 12 * kHour).ok());
  stored = replica_at(*store, "d", 0);
  EXPECT_EQ(stored.state, ReplicaState::Offline);
  EXPECT_EQ(stored.processor_id, "p1");
  EXPECT_EQ(stored.ready_since_ms, 0);
  EXPECT_NEAR(stored.cost, 0.5, 1e-12);
  EXPECT_NEAR(store->replica_cost(stored, kT0 + 50 * kHour), 0.5, 1e-12);
  EXPECT_FALSE((*store->processor("p1"))->online);
}

TEST_P(StoreTest, ChangingProcessorWhileReadyClosesTheIntervalAtTheOldPrice) {
  auto store = reopen();
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(store->create_deployment(make_deployment("d", 2, 1, kT0)).ok());
  Replica replica = replica_at(*store, "d", 0);
  replica.processor_id = "old";
  replica.price_per_day = 24;  // 1 per hour
  replica.state = ReplicaState::Ready;
  ASSERT_TRUE(store->update_replica(replica, kT0).ok());
  // A promotion: the replica row now names the spare's processor, at its price.
  replica.processor_id = "spare";
  replica.price_per_day = 48;
  ASSERT_TRUE(store->update_replica(replica, kT0 + 2 * kHour).ok());
  Replica stored = replica_at(*store, "d", 0);
  EXPECT_NEAR(stored.cost, 2.0, 1e-12);
  EXPECT_EQ(stored.ready_since_ms, kT0 + 2 * kHour);
  EXPECT_NEAR(store->replica_cost(stored, kT0 + 3 * kHour), 4.0, 1e-12);
}

std::vector<ServiceInterval> history_of(Store& store, const std::string& id) {
  auto rows = store.service_history(id, 0, INT64_MAX, 100);
  EXPECT_TRUE(rows.ok()) << rows.status().to_string();
  return rows.ok() ? *rows : std::vector<ServiceInterval>{};
}

// The record `verify --hub` reads: each stretch a processor served a replica with a model, closed
// by leaving Ready, a promotion, a new model, going offline, removal, deletion and revocation.
TEST_P(StoreTest, ServiceHistoryRecordsWhoServedWhatWhen) {
  auto store = reopen();
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(store->upsert_processor(make_processor("p1", 1, kT0)).ok());
  ASSERT_TRUE(store->upsert_processor(make_processor("p2", 1, kT0)).ok());
  ASSERT_TRUE(store->create_deployment(make_deployment("d", 2, 0, kT0)).ok());
  Replica r = replica_at(*store, "d", 0);
  const std::string model = r.serving.model_sha256;
  r.processor_id = "p1";
  r.state = ReplicaState::Loading;
  ASSERT_TRUE(store->update_replica(r, kT0 + 1).ok());
  EXPECT_TRUE(history_of(*store, "p1").empty());  // loading serves nothing
  r.state = ReplicaState::Ready;
  ASSERT_TRUE(store->update_replica(r, kT0 + 2).ok());
  ASSERT_TRUE(store->update_replica(r, kT0 + 3).ok());  // still the same service
  auto h = history_of(*store, "p1");
  ASSERT_EQ(h.size(), 1u);
  EXPECT_EQ(h[0].deployment, "d");
  EXPECT_EQ(h[0].index, 0);
  EXPECT_EQ(h[0].model_sha256, model);
  EXPECT_EQ(h[0].from_ms, kT0 + 2);
  EXPECT_EQ(h[0].until_ms, 0);
  // A new model while Ready (a reload in place) is a new service.
  r.serving.model_sha256 = std::string(64, 'e');
  ASSERT_TRUE(store->update_replica(r, kT0 + 4).ok());
  // A promotion moves the row to p2.
  r.processor_id = "p2";
  ASSERT_TRUE(store->update_replica(r, kT0 + 5).ok());
  h = history_of(*store, "p1");
  ASSERT_EQ(h.size(), 2u);
  EXPECT_EQ(h[0].model_sha256, std::string(64, 'e'));
  EXPECT_EQ(h[0].from_ms, kT0 + 4);
  EXPECT_EQ(h[0].until_ms, kT0 + 5);
  EXPECT_EQ(h[1].until_ms, kT0 + 4);
  ASSERT_EQ(history_of(*store, "p2").size(), 1u);
  // p2 goes offline: closed.
  ASSERT_TRUE(store->mark_processor_offline("p2", kT0 + 6).ok());
  EXPECT_EQ(history_of(*store, "p2")[0].until_ms, kT0 + 6);
  // Revoking p1 ends its service at once, before any row is moved.
  Replica other = replica_at(*store, "d", 1);
  other.processor_id = "p1";
  other.state = ReplicaState::Ready;
  ASSERT_TRUE(store->update_replica(other, kT0 + 7).ok());
  ASSERT_EQ(history_of(*store, "p1")[0].until_ms, 0);
  ASSERT_TRUE(store->set_enrollment("p1", Enrollment::Revoked, std::nullopt, kT0 + 8).ok());
  EXPECT_EQ(history_of(*store, "p1")[0].until_ms, kT0 + 8);
  // Removal and deletion close what is open.
  ASSERT_TRUE(store->set_enrollment("p2", Enrollment::Enrolled, std::nullopt, kT0 + 9).ok());
  Replica again = replica_at(*store, "d", 0);
  again.processor_id = "p2";
  again.state = ReplicaState::Ready;
  ASSERT_TRUE(store->update_replica(again, kT0 + 10).ok());
  ASSERT_TRUE(store->remove_replica("d", 0, kT0 + 11).ok());
  EXPECT_EQ(history_of(*store, "p2")[0].until_ms, kT0 + 11);
  ASSERT_TRUE(store->create_deployment(make_deployment("e", 1, 0, kT0)).ok());
  Replica e = replica_at(*store, "e", 0);
  e.processor_id = "p2";
  e.state = ReplicaState::Ready;
  ASSERT_TRUE(store->update_replica(e, kT0 + 12).ok());
  ASSERT_TRUE(store->delete_deployment("e", kT0 + 13).ok());
  h = history_of(*store, "p2");
  EXPECT_EQ(h[0].deployment, "e");
  EXPECT_EQ(h[0].until_ms, kT0 + 13);
  // The window selects overlapping intervals, newest first, and the limit holds.
  auto window = store->service_history("p2", kT0 + 11, kT0 + 11, 100);
  ASSERT_TRUE(window.ok());
  ASSERT_EQ(window->size(), 1u);
  EXPECT_EQ((*window)[0].from_ms, kT0 + 10);
  EXPECT_EQ(store->service_history("p2", 0, INT64_MAX, 1)->size(), 1u);
  EXPECT_TRUE(store->service_history("p2", kT0 + 14, kT0 + 20, 100)->empty());
  EXPECT_TRUE(history_of(*store, "nobody").empty());
}

}  // namespace
}  // namespace cellserve::fleet
