// The store suite, once per engine: deployments and their replica rows (creation, order,
// updates, scaling, surge rows, draining, the serving a row keeps when the spec changes).

#include <gtest/gtest.h>

#include "fleet/store/store.h"
#include "tests/fleet/store/store_fixture.h"
#include "tests/fleet/store/store_records.h"

namespace cellserve::fleet {
namespace {

TEST_P(StoreTest, DeploymentRoundTripsAndCreatesReplicaRows) {
  auto store = reopen();
  ASSERT_NE(store, nullptr);
  Deployment d = make_deployment("risk", 2, 1, kT0);
  ASSERT_TRUE(store->create_deployment(d).ok());
  auto got = store->deployment("risk");
  ASSERT_TRUE(got.ok() && got->has_value()) << got.status().to_string();
  expect_same(**got, d);

  auto rows = replicas_of(*store, "risk");
  ASSERT_EQ(rows.size(), 3u);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(rows[i].deployment, "risk");
    EXPECT_EQ(rows[i].index, i);
    EXPECT_EQ(rows[i].state, ReplicaState::Unmatched);
    EXPECT_TRUE(rows[i].processor_id.empty());
    EXPECT_EQ(rows[i].cost, 0);
  }
  EXPECT_FALSE(store->deployment("other")->has_value());
}

TEST_P(StoreTest, DuplicateDeploymentIsRejected) {
  auto store = reopen();
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(store->create_deployment(make_deployment("dup", 1, 0, kT0)).ok());
  Status s = store->create_deployment(make_deployment("dup", 3, 0, kT0 + 1));
  EXPECT_EQ(s.code(), StatusCode::InvalidArgument);
  EXPECT_EQ(s.message(), "deployment 'dup' exists");
  EXPECT_EQ(replicas_of(*store, "dup").size(), 1u);  // the failed transaction left nothing
  EXPECT_EQ((*store->deployment("dup"))->spec.replicas, 1);
}

TEST_P(StoreTest, DeploymentsAndAllReplicasInCreatedOrder) {
  auto store = reopen();
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(store->create_deployment(make_deployment("late", 1, 0, kT0 + 10)).ok());
  ASSERT_TRUE(store->create_deployment(make_deployment("early", 2, 0, kT0)).ok());
  auto all = store->deployments();
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->size(), 2u);
  EXPECT_EQ((*all)[0].spec.name, "early");
  EXPECT_EQ((*all)[1].spec.name, "late");
  auto rows = replicas_of(*store, "");
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0].deployment, "early");
  EXPECT_EQ(rows[0].index, 0);
  EXPECT_EQ(rows[1].deployment, "early");
  EXPECT_EQ(rows[1].index, 1);
  EXPECT_EQ(rows[2].deployment, "late");
}

TEST_P(StoreTest, DeleteDeploymentRemovesItsReplicas) {
  auto store = reopen();
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(store->create_deployment(make_deployment("a", 2, 1, kT0)).ok());
  ASSERT_TRUE(store->create_deployment(make_deployment("b", 1, 0, kT0 + 1)).ok());
  ASSERT_TRUE(store->delete_deployment("a", kT0 + 2).ok());
  EXPECT_FALSE(store->deployment("a")->has_value());
  EXPECT_TRUE(replicas_of(*store, "a").empty());
  EXPECT_EQ(replicas_of(*store, "").size(), 1u);
  EXPECT_EQ(store->delete_deployment("a", kT0 + 3).code(), StatusCode::NotFound);
  // The name is free again.
  EXPECT_TRUE(store->create_deployment(make_deployment("a", 1, 0, kT0 + 4)).ok());
}

TEST_P(StoreTest, UpdateReplicaReplacesTheRow) {
  auto store = reopen();
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(store->create_deployment(make_deployment("d", 2, 0, kT0)).ok());
  Replica r;
  r.deployment = "d";
  r.index = 1;
  r.processor_id = "p1";
  r.price_per_day = 2.0;
  r.state = ReplicaState::Downloading;
  r.progress = 0.25;
  r.detail = "fetching";
  r.prefill_tps = 11;
  r.decode_tps = 3;
  r.matched_ms = kT0 + 1;
  ASSERT_TRUE(store->update_replica(r, kT0 + 2).ok());
  expect_same(replica_at(*store, "d", 1), r);
  EXPECT_EQ(replica_at(*store, "d", 0).state, ReplicaState::Unmatched);

  Replica ghost = r;
  ghost.index = 5;
  EXPECT_EQ(store->update_replica(ghost, kT0).code(), StatusCode::NotFound);
  ghost.deployment = "nope";
  ghost.index = 0;
  EXPECT_EQ(store->update_replica(ghost, kT0).code(), StatusCode::NotFound);
}

TEST_P(StoreTest, MarkProcessorOfflineTouchesOnlyItsReplicas) {
  auto store = reopen();
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(store->upsert_processor(make_processor("p1", 1, kT0)).ok());
  ASSERT_TRUE(store->upsert_processor(make_processor("p2", 1, kT0)).ok());
  ASSERT_TRUE(store->create_deployment(make_deployment("d", 3, 0, kT0)).ok());
  const char* owners[] = {"p1", "p2", "p1"};
  for (int i = 0; i < 3; ++i) {
    Replica r = replica_at(*store, "d", i);
    r.processor_id = owners[i];
    r.price_per_day = 1;
    r.state = i == 2 ? ReplicaState::Downloading : ReplicaState::Ready;
    ASSERT_TRUE(store->update_replica(r, kT0).ok());
  }
  ASSERT_TRUE(store->mark_processor_offline("p1", kT0 + kHour).ok());
  auto rows = replicas_of(*store, "d");
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0].state, ReplicaState::Offline);
  EXPECT_EQ(rows[1].state, ReplicaState::Ready);
  EXPECT_EQ(rows[2].state, ReplicaState::Offline);
  EXPECT_NEAR(rows[0].cost, 1.0 / 24, 1e-12);
  EXPECT_EQ(rows[2].cost, 0);
  EXPECT_TRUE((*store->processor("p2"))->online);
  EXPECT_EQ(store->mark_processor_offline("ghost", kT0).code(), StatusCode::NotFound);
}

TEST_P(StoreTest, SimulatedFlagsRoundTrip) {
  auto store = reopen();
  ASSERT_NE(store, nullptr);
  Processor p = make_processor("sim1", 0, kT0);
  p.simulated = true;
  ASSERT_TRUE(store->upsert_processor(p).ok());
  auto got = store->processor("sim1");
  ASSERT_TRUE(got.ok() && got->has_value());
  EXPECT_TRUE((*got)->simulated);
  p.simulated = false;  // the agent restarted without --simulate
  ASSERT_TRUE(store->upsert_processor(p).ok());
  EXPECT_FALSE((*store->processor("sim1"))->simulated);

  Deployment d;
  d.spec.name = "sim";
  d.spec.model_url = "http://127.0.0.1/m.gguf";
  d.spec.model_sha256 = std::string(64, 'a');
  d.spec.engine.simulated = true;
  d.created_ms = kT0;
  ASSERT_TRUE(store->create_deployment(d).ok());
  auto back = store->deployment("sim");
  ASSERT_TRUE(back.ok() && back->has_value());
  expect_same(**back, d);
}

TEST_P(StoreTest, GatewaySettingsAndDrainingRoundTrip) {
  auto store = reopen();
  ASSERT_NE(store, nullptr);
  Deployment d = make_deployment("g", 1, 0, kT0);
  d.spec.gateway = {"fraud-v1", 5, 1500, 16, 250};
  ASSERT_TRUE(store->create_deployment(d).ok());
  auto back = store->deployment("g");
  ASSERT_TRUE(back.ok() && back->has_value());
  EXPECT_EQ((*back)->spec.gateway.alias, "fraud-v1");
  EXPECT_EQ((*back)->spec.gateway.queue_max, 5);
  EXPECT_EQ((*back)->spec.gateway.queue_timeout_ms, 1500);
  EXPECT_EQ((*back)->spec.gateway.hedge_max_tokens, 16);
  EXPECT_EQ((*back)->spec.gateway.hedge_delay_ms, 250);
  Replica r = replicas_of(*store, "g")[0];
  r.draining = true;
  ASSERT_TRUE(store->update_replica(r, kT0 + 1).ok());
  EXPECT_TRUE(replicas_of(*store, "g")[0].draining);
}

TEST_P(StoreTest, ScalingAddsRowsAndDrainsThoseBeyondTheCount) {
  auto store = reopen();
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(store->create_deployment(make_deployment("s", 2, 1, kT0)).ok());
  ASSERT_TRUE(store->scale_deployment("s", 4, 1, kT0 + 1).ok());
  EXPECT_EQ((*store->deployment("s"))->spec.replicas, 4);
  std::vector<Replica> rows = replicas_of(*store, "s");
  ASSERT_EQ(rows.size(), 5u);
  for (const Replica& r : rows) EXPECT_FALSE(r.draining) << r.index;
  // Down to 1 + 1: rows 2..4 drain until the hub removes them.
  ASSERT_TRUE(store->scale_deployment("s", 1, 1, kT0 + 2).ok());
  rows = replicas_of(*store, "s");
  ASSERT_EQ(rows.size(), 5u);
  for (const Replica& r : rows) EXPECT_EQ(r.draining, r.index >= 2) << r.index;
  ASSERT_TRUE(store->remove_replica("s", 4, kT0 + 3).ok());
  EXPECT_EQ(store->remove_replica("s", 4, kT0 + 3).code(), StatusCode::NotFound);
  // Up again before rows 2 and 3 were removed: they serve again; row 4 is created afresh.
  ASSERT_TRUE(store->scale_deployment("s", 3, 2, kT0 + 4).ok());
  rows = replicas_of(*store, "s");
  ASSERT_EQ(rows.size(), 5u);
  for (const Replica& r : rows) EXPECT_FALSE(r.draining) << r.index;
  EXPECT_EQ(store->scale_deployment("none", 1, 0, kT0).code(), StatusCode::NotFound);
  EXPECT_EQ(store->scale_deployment("s", 0, 0, kT0).code(), StatusCode::InvalidArgument);
}

// The autoscaler's change: only from the count it read (another hub's or the operator's change
// meanwhile stands), and the spares left as they are.
TEST_P(StoreTest, RescaleChangesTheReplicasOnlyFromTheCountItRead) {
  auto store = reopen();
  auto other = reopen();  // another hub
  ASSERT_TRUE(store->create_deployment(make_deployment("s", 2, 1, kT0)).ok());
  auto done = store->rescale_replicas("s", 2, 4, kT0 + 1);
  ASSERT_TRUE(done.ok()) << done.status().to_string();
  EXPECT_TRUE(*done);
  EXPECT_EQ((*store->deployment("s"))->spec.replicas, 4);
  EXPECT_EQ((*store->deployment("s"))->spec.spares, 1);
  EXPECT_EQ(replicas_of(*store, "s").size(), 5u);
  // The operator scaled it to 3 + 2 on another hub before this hub's next write.
  ASSERT_TRUE(other->scale_deployment("s", 3, 2, kT0 + 2).ok());
  done = store->rescale_replicas("s", 4, 1, kT0 + 3);
  ASSERT_TRUE(done.ok());
  EXPECT_FALSE(*done);
  EXPECT_EQ((*store->deployment("s"))->spec.replicas, 3);
  EXPECT_EQ((*store->deployment("s"))->spec.spares, 2);
  for (const Replica& r : replicas_of(*store, "s")) EXPECT_FALSE(r.draining) << r.index;
  // From the count it has, it goes down to 1 + 2, draining the rows past them (indexes 3 and 4).
  done = store->rescale_replicas("s", 3, 1, kT0 + 4);
  ASSERT_TRUE(done.ok() && *done);
  EXPECT_EQ((*store->deployment("s"))->spec.spares, 2);
  for (const Replica& r : replicas_of(*store, "s")) EXPECT_EQ(r.draining, r.index >= 3) << r.index;
  EXPECT_EQ(store->rescale_replicas("none", 1, 2, kT0).status().code(), StatusCode::NotFound);
  EXPECT_EQ(store->rescale_replicas("s", 1, 0, kT0).status().code(), StatusCode::InvalidArgument);
}

// The operator's spares-only scale on one hub, after another hub's autoscaler changed the replica
// count: the replicas stay as that hub wrote them. (The hub's scale API once read both counts, then
// wrote both, so its stale replica count undid the autoscaler's.)
TEST_P(StoreTest, ScaleWritesOnlyTheCountsItIsGiven) {
  auto store = reopen();
  auto other = reopen();  // another hub
  ASSERT_TRUE(store->create_deployment(make_deployment("s", 2, 0, kT0)).ok());
  auto done = other->rescale_replicas("s", 2, 5, kT0 + 1);
  ASSERT_TRUE(done.ok() && *done);
  ASSERT_TRUE(store->scale_deployment("s", std::nullopt, 1, kT0 + 2).ok());
  EXPECT_EQ((*store->deployment("s"))->spec.replicas, 5);
  EXPECT_EQ((*store->deployment("s"))->spec.spares, 1);
  EXPECT_EQ(replicas_of(*store, "s").size(), 6u);
  ASSERT_TRUE(other->scale_deployment("s", 3, std::nullopt, kT0 + 3).ok());
  EXPECT_EQ((*store->deployment("s"))->spec.replicas, 3);
  EXPECT_EQ((*store->deployment("s"))->spec.spares, 1);
  for (const Replica& r : replicas_of(*store, "s")) EXPECT_EQ(r.draining, r.index >= 4) << r.index;
  EXPECT_EQ(store->scale_deployment("s", std::nullopt, std::nullopt, kT0).code(), StatusCode::InvalidArgument);
  EXPECT_EQ(store->scale_deployment("s", std::nullopt, -1, kT0).code(), StatusCode::InvalidArgument);
}

TEST_P(StoreTest, RowsKeepTheirServingWhenTheSpecChanges) {
  auto store = reopen();
  ASSERT_NE(store, nullptr);
  Deployment d = make_deployment("u", 1, 1, kT0);
  ASSERT_TRUE(store->create_deployment(d).ok());
  const Serving before = serving_of(d.spec);
  for (const Replica& r : replicas_of(*store, "u")) EXPECT_EQ(r.serving, before) << r.index;
  // A new model, engine and requirements: the deployment takes them, its rows do not.
  DeploymentSpec next = d.spec;
  next.model_url = "https://models.test/v2.gguf";
  next.model_sha256 = std::string(64, 'c');
  next.engine.parallel = 3;
  next.engine.lora = {"lora-ref"};
  next.requirements.min_ram_bytes = 20ULL << 30;
  next.requirements.allow = {};
  next.requirements.charging_only = false;
  next.requirements.min_battery = 60;
  next.requirements.max_temperature_c = 39;
  next.env = {{"K", "v"}};
  next.gateway.alias = "new";
  next.max_price_per_day = 9;
  ASSERT_TRUE(store->update_deployment_spec(next).ok());
  const DeploymentSpec stored = (*store->deployment("u"))->spec;
  EXPECT_EQ(serving_of(stored), serving_of(next));
  EXPECT_EQ(stored.requirements.min_ram_bytes, next.requirements.min_ram_bytes);
  EXPECT_TRUE(stored.requirements.allow.empty());
  EXPECT_FALSE(stored.requirements.charging_only);
  EXPECT_EQ(stored.requirements.min_battery, 60);
  EXPECT_EQ(stored.requirements.max_temperature_c, 39);
  EXPECT_EQ(stored.env, next.env);
  EXPECT_EQ(stored.gateway.alias, "new");
  EXPECT_EQ(stored.max_price_per_day, 9);
  EXPECT_EQ(stored.replicas, 1);
  EXPECT_EQ(stored.spares, 1);
  for (const Replica& r : replicas_of(*store, "u")) EXPECT_EQ(r.serving, before) << r.index;
  // A row given the new serving (an in-place reload) keeps it; rows created by a scale-up get it.
  Replica r0 = replica_at(*store, "u", 0);
  r0.serving = serving_of(next);
  r0.reloading = true;
  ASSERT_TRUE(store->update_replica(r0, kT0 + 1).ok());
  EXPECT_EQ(replica_at(*store, "u", 0).serving, serving_of(next));
  EXPECT_TRUE(replica_at(*store, "u", 0).reloading);
  ASSERT_TRUE(store->scale_deployment("u", 2, 1, kT0 + 2).ok());
  EXPECT_EQ(replica_at(*store, "u", 2).serving, serving_of(next));
  EXPECT_EQ(replica_at(*store, "u", 1).serving, before);
  DeploymentSpec none = next;
  none.name = "none";
  EXPECT_EQ(store->update_deployment_spec(none).code(), StatusCode::NotFound);
}

TEST_P(StoreTest, TheSecretsVersionRisesOnlyWhenTheEnvChanges) {
  auto store = reopen();
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(store->create_deployment(make_deployment("v", 2, 0, kT0)).ok());
  EXPECT_EQ((*store->deployment("v"))->secrets_version, 1);
  DeploymentSpec spec = (*store->deployment("v"))->spec;
  spec.max_price_per_day = 7;  // not a secret
  ASSERT_TRUE(store->update_deployment_spec(spec).ok());
  EXPECT_EQ((*store->deployment("v"))->secrets_version, 1);
  spec.env = {{"HF_TOKEN", "enc1:aa"}};
  ASSERT_TRUE(store->update_deployment_spec(spec).ok());
  EXPECT_EQ((*store->deployment("v"))->secrets_version, 2);
  ASSERT_TRUE(store->update_deployment_spec(spec).ok());  // the same sealed value: no change
  EXPECT_EQ((*store->deployment("v"))->secrets_version, 2);
  spec.env = {{"HF_TOKEN", "enc1:bb"}};
  ASSERT_TRUE(store->update_deployment_spec(spec).ok());
  EXPECT_EQ((*store->deployment("v"))->secrets_version, 3);

  // Each row keeps the version its device acknowledged, in every read; going offline clears it.
  Processor p = make_processor("dev", 1.0, kT0);
  ASSERT_TRUE(store->upsert_processor(p).ok());
  Replica r = replica_at(*store, "v", 0);
  r.processor_id = "dev";
  r.state = ReplicaState::Ready;
  r.secrets_version = 3;
  ASSERT_TRUE(store->update_replica(r, kT0 + 1).ok());
  EXPECT_EQ(replica_at(*store, "v", 0).secrets_version, 3);
  EXPECT_EQ(replicas_of(*store, "")[0].secrets_version, 3);
  ASSERT_TRUE(store->mark_processor_offline("dev", kT0 + 2).ok());
  EXPECT_EQ(replica_at(*store, "v", 0).secrets_version, 0);
}

TEST_P(StoreTest, SurgeRowsAreAddedOnceAndScalingNeverDrainsThem) {
  auto store = reopen();
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(store->create_deployment(make_deployment("s", 2, 0, kT0)).ok());
  Replica surge;
  surge.deployment = "s";
  surge.index = kSurgeIndexBase + 1;
  surge.serving.model_sha256 = std::string(64, 'd');
  surge.cost = 99;  // ignored: a new row has accrued nothing
  ASSERT_TRUE(store->add_replica(surge).ok());
  EXPECT_EQ(store->add_replica(surge).code(), StatusCode::InvalidArgument);
  Replica stranger = surge;
  stranger.deployment = "none";
  EXPECT_EQ(store->add_replica(stranger).code(), StatusCode::NotFound);
  const Replica back = replica_at(*store, "s", kSurgeIndexBase + 1);
  EXPECT_EQ(back.serving.model_sha256, std::string(64, 'd'));
  EXPECT_EQ(back.cost, 0);
  ASSERT_TRUE(store->scale_deployment("s", 1, 0, kT0 + 1).ok());
  EXPECT_TRUE(replica_at(*store, "s", 1).draining);
  EXPECT_FALSE(replica_at(*store, "s", kSurgeIndexBase + 1).draining);
  ASSERT_TRUE(store->remove_replica("s", kSurgeIndexBase + 1, kT0 + 2).ok());
}

}  // namespace
}  // namespace cellserve::fleet
