#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <thread>

#include <unistd.h>

#include "fleet/store/open_store.h"
#include "fleet/store/sqlite_db.h"
#include "fleet/store/sqlite_schema.h"
#include "fleet/store/store.h"
#include "tests/fleet/every_field_spec.h"
#include "tests/fleet/store/store_fixture.h"

namespace cellserve::fleet {
namespace {

namespace fs = std::filesystem;

constexpr int64_t kT0 = 1'700'000'000'000;  // a Unix time in ms
constexpr int64_t kHour = 60 * 60 * 1000;

INSTANTIATE_TEST_SUITE_P(Engines, StoreTest, ::testing::Values(StoreEngine::Sqlite, StoreEngine::Postgres),
                         store_engine_name);

Processor make_processor(const std::string& id, double price, int64_t registered_ms) {
  Processor p;
  p.id = id;
  p.name = "name-" + id;
  p.specs.ram_bytes = (16ULL << 30) + 7;
  p.specs.free_disk_bytes = 100ULL << 30;
  p.specs.cores = 8;
  p.specs.big_cores = 4;
  p.specs.arch = "aarch64";
  p.specs.os = "android 14";
  p.specs.cpu_features = {"neon", "dotprod", "i8mm"};
  p.benchmark.prefill_tps = 123.5;
  p.benchmark.decode_tps = 17.25;
  p.benchmark.shape = "qwen35-0.8b Q4_K_M pp512 tg128";
  p.price_per_day = price;
  p.attested = true;
  p.online = true;
  p.registered_ms = registered_ms;
  p.last_seen_ms = registered_ms + 5;
  return p;
}

Deployment make_deployment(const std::string& name, int replicas, int spares, int64_t created_ms) {
  Deployment d;
  d.spec.name = name;
  d.spec.model_url = "hf://org/model/model-q4_k_m.gguf";
  d.spec.model_sha256 = std::string(64, 'a');
  d.spec.requirements.min_ram_bytes = 12ULL << 30;
  d.spec.requirements.min_cores = 4;
  d.spec.requirements.arch = "aarch64";
  d.spec.requirements.min_decode_tps = 5.5;
  d.spec.requirements.attested_only = true;
  d.spec.requirements.allow = {"abc", "phone \"1\""};
  d.spec.requirements.charging_only = true;
  d.spec.requirements.min_battery = 35;
  d.spec.requirements.max_temperature_c = 41.5;
  d.spec.replicas = replicas;
  d.spec.spares = spares;
  d.spec.max_price_per_day = 2.5;
  d.spec.engine.ctx_size = 8192;
  d.spec.engine.parallel = 2;
  d.spec.engine.threads = 4;
  d.spec.engine.lora = {"https://x/a.gguf:0.5", "hf://o/r/b.gguf"};
  d.spec.env = {{"A", "1"}, {"B", "x=y"}};
  d.created_ms = created_ms;
  return d;
}

void expect_same(const Processor& a, const Processor& b) {
  EXPECT_EQ(a.id, b.id);
  EXPECT_EQ(a.name, b.name);
  EXPECT_EQ(a.specs.ram_bytes, b.specs.ram_bytes);
  EXPECT_EQ(a.specs.free_disk_bytes, b.specs.free_disk_bytes);
  EXPECT_EQ(a.specs.cores, b.specs.cores);
  EXPECT_EQ(a.specs.big_cores, b.specs.big_cores);
  EXPECT_EQ(a.specs.arch, b.specs.arch);
  EXPECT_EQ(a.specs.os, b.specs.os);
  EXPECT_EQ(a.specs.cpu_features, b.specs.cpu_features);
  EXPECT_EQ(a.benchmark.prefill_tps, b.benchmark.prefill_tps);
  EXPECT_EQ(a.benchmark.decode_tps, b.benchmark.decode_tps);
  EXPECT_EQ(a.benchmark.shape, b.benchmark.shape);
  EXPECT_EQ(a.price_per_day, b.price_per_day);
  EXPECT_EQ(a.attested, b.attested);
  EXPECT_EQ(a.simulated, b.simulated);
  EXPECT_EQ(a.online, b.online);
  EXPECT_EQ(a.registered_ms, b.registered_ms);
  EXPECT_EQ(a.last_seen_ms, b.last_seen_ms);
}

void expect_same(const Requirements& a, const Requirements& b) {
  EXPECT_EQ(a.min_ram_bytes, b.min_ram_bytes);
  EXPECT_EQ(a.min_cores, b.min_cores);
  EXPECT_EQ(a.arch, b.arch);
  EXPECT_EQ(a.min_decode_tps, b.min_decode_tps);
  EXPECT_EQ(a.attested_only, b.attested_only);
  EXPECT_EQ(a.allow, b.allow);
  EXPECT_EQ(a.charging_only, b.charging_only);
  EXPECT_EQ(a.min_battery, b.min_battery);
  EXPECT_EQ(a.max_temperature_c, b.max_temperature_c);
}

void expect_same(const Deployment& a, const Deployment& b) {
  EXPECT_EQ(a.spec.name, b.spec.name);
  expect_same(a.spec.requirements, b.spec.requirements);
  EXPECT_EQ(a.spec.model_url, b.spec.model_url);
  EXPECT_EQ(a.spec.model_sha256, b.spec.model_sha256);
  EXPECT_EQ(a.spec.replicas, b.spec.replicas);
  EXPECT_EQ(a.spec.spares, b.spec.spares);
  EXPECT_EQ(a.spec.max_price_per_day, b.spec.max_price_per_day);
  EXPECT_EQ(a.spec.engine.ctx_size, b.spec.engine.ctx_size);
  EXPECT_EQ(a.spec.engine.parallel, b.spec.engine.parallel);
  EXPECT_EQ(a.spec.engine.threads, b.spec.engine.threads);
  EXPECT_EQ(a.spec.engine.lora, b.spec.engine.lora);
  EXPECT_EQ(a.spec.engine.simulated, b.spec.engine.simulated);
  EXPECT_EQ(a.spec.env, b.spec.env);
  EXPECT_EQ(a.created_ms, b.created_ms);
}

void expect_same(const Replica& a, const Replica& b) {
  EXPECT_EQ(a.deployment, b.deployment);
  EXPECT_EQ(a.index, b.index);
  EXPECT_EQ(a.processor_id, b.processor_id);
  EXPECT_EQ(a.price_per_day, b.price_per_day);
  EXPECT_EQ(a.state, b.state);
  EXPECT_EQ(a.progress, b.progress);
  EXPECT_EQ(a.detail, b.detail);
  EXPECT_EQ(a.prefill_tps, b.prefill_tps);
  EXPECT_EQ(a.decode_tps, b.decode_tps);
  EXPECT_EQ(a.matched_ms, b.matched_ms);
  EXPECT_EQ(a.ready_since_ms, b.ready_since_ms);
  EXPECT_DOUBLE_EQ(a.cost, b.cost);
}

std::vector<Replica> replicas_of(Store& store, const std::string& deployment) {
  auto rows = store.replicas(deployment);
  EXPECT_TRUE(rows.ok()) << rows.status().to_string();
  return rows.ok() ? *rows : std::vector<Replica>{};
}

Replica replica_at(Store& store, const std::string& deployment, int index) {
  for (const Replica& r : replicas_of(store, deployment)) {
    if (r.index == index) return r;
  }
  ADD_FAILURE() << "no replica " << index << " in " << deployment;
  return {};
}

TEST_P(StoreTest, ProcessorRoundTripsEveryField) {
  auto store = reopen();
  ASSERT_NE(store, nullptr);
  Processor p = make_processor("ab12", 1.75, kT0);
  p.specs.ram_bytes = ~0ULL - 3;  // above INT64_MAX: the bit pattern survives
  ASSERT_TRUE(store->upsert_processor(p).ok());
  auto got = store->processor("ab12");
  ASSERT_TRUE(got.ok()) << got.status().to_string();
  ASSERT_TRUE(got->has_value());
  expect_same(**got, p);

  auto missing = store->processor("nope");
  ASSERT_TRUE(missing.ok());
  EXPECT_FALSE(missing->has_value());
}

TEST_P(StoreTest, AttestationPinRoundTripsAndSurvivesAReopen) {
  AttestationPin pin;
  pin.processor_id = "ab12";
  pin.key_sha256 = std::string(64, 'c');
  pin.key_spki = "MFkw";
  pin.challenge = std::string(64, '1');
  pin.verified_boot_key = std::string(64, '5');
  pin.boot_state = "Verified, locked";
  pin.app_packages = {"com.cellserve.agent", "com.other"};
  pin.app_digests = {std::string(64, 'd')};
  pin.evidence = R"({"chain":["AA=="],"signature":"AA=="})";
  pin.pinned_ms = kT0;
  {
    auto store = reopen();
    ASSERT_NE(store, nullptr);
    EXPECT_FALSE(store->attestation_pin("ab12").value().has_value());
    ASSERT_TRUE(store->put_attestation_pin(pin).ok());
    pin.held = "another key";
    pin.change_approved = true;
    pin.ecdh = true;
    ASSERT_TRUE(store->put_attestation_pin(pin).ok());  // replaces
  }
  auto store = reopen();
  ASSERT_NE(store, nullptr);
  auto got = store->attestation_pin("ab12");
  ASSERT_TRUE(got.ok() && got->has_value());
  const AttestationPin& g = **got;
  EXPECT_EQ(g.key_sha256, pin.key_sha256);
  EXPECT_EQ(g.key_spki, pin.key_spki);
  EXPECT_EQ(g.challenge, pin.challenge);
  EXPECT_EQ(g.verified_boot_key, pin.verified_boot_key);
  EXPECT_EQ(g.boot_state, pin.boot_state);
  EXPECT_EQ(g.app_packages, pin.app_packages);
  EXPECT_EQ(g.app_digests, pin.app_digests);
  EXPECT_EQ(g.evidence, pin.evidence);
  EXPECT_EQ(g.pinned_ms, kT0);
  EXPECT_EQ(g.held, "another key");
  EXPECT_TRUE(g.change_approved);
  EXPECT_TRUE(g.ecdh);
  EXPECT_EQ(store->attestation_pins().value().size(), 1u);
}

TEST_P(StoreTest, UpsertKeepsRegisteredMsAndReplacesTheRest) {
  auto store = reopen();
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(store->upsert_processor(make_processor("p1", 1.0, kT0)).ok());
  Processor again = make_processor("p1", 3.0, kT0 + 999);
  again.name = "renamed";
  again.specs.cpu_features = {};
  again.online = false;
  ASSERT_TRUE(store->upsert_processor(again).ok());
  auto got = store->processor("p1");
  ASSERT_TRUE(got.ok() && got->has_value());
  Processor expected = again;
  expected.registered_ms = kT0;
  expect_same(**got, expected);

  // A processor first stored with registered_ms 0 takes the first non-zero value.
  ASSERT_TRUE(store->upsert_processor(make_processor("p2", 1.0, 0)).ok());
  ASSERT_TRUE(store->upsert_processor(make_processor("p2", 1.0, kT0 + 7)).ok());
  ASSERT_TRUE(store->upsert_processor(make_processor("p2", 1.0, kT0 + 8)).ok());
  EXPECT_EQ((*store->processor("p2"))->registered_ms, kT0 + 7);
}

TEST_P(StoreTest, ProcessorsOrderedByRegistrationThenId) {
  auto store = reopen();
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(store->upsert_processor(make_processor("c", 1, kT0 + 1)).ok());
  ASSERT_TRUE(store->upsert_processor(make_processor("b", 1, kT0)).ok());
  ASSERT_TRUE(store->upsert_processor(make_processor("a", 1, kT0 + 1)).ok());
  auto all = store->processors();
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->size(), 3u);
  EXPECT_EQ((*all)[0].id, "b");
  EXPECT_EQ((*all)[1].id, "a");
  EXPECT_EQ((*all)[2].id, "c");
}

TEST_P(StoreTest, SetProcessorOnline) {
  auto store = reopen();
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(store->upsert_processor(make_processor("p", 1, kT0)).ok());
  ASSERT_TRUE(store->set_processor_online("p", false, kT0 + 100).ok());
  auto p = **store->processor("p");
  EXPECT_FALSE(p.online);
  EXPECT_EQ(p.last_seen_ms, kT0 + 5);  // unchanged when going offline
  ASSERT_TRUE(store->set_processor_online("p", true, kT0 + 200).ok());
  p = **store->processor("p");
  EXPECT_TRUE(p.online);
  EXPECT_EQ(p.last_seen_ms, kT0 + 200);
  EXPECT_EQ(store->set_processor_online("ghost", true, kT0).code(), StatusCode::NotFound);
}

// One write for every agent a hub polled: ids with quotes and backslashes stay whole (the
// PostgreSQL array literal escapes them), unknown ids are skipped, others are untouched.
TEST_P(StoreTest, TouchProcessorsMarksEachOnlineInOneWrite) {
  auto store = reopen();
  ASSERT_NE(store, nullptr);
  const std::vector<std::string> ids = {"p1", "q\"uote", "back\\slash,{x}"};
  for (const std::string& id : ids) {
    ASSERT_TRUE(store->upsert_processor(make_processor(id, 1, kT0)).ok());
    ASSERT_TRUE(store->set_processor_online(id, false, kT0).ok());
  }
  ASSERT_TRUE(store->upsert_processor(make_processor("other", 1, kT0)).ok());
  ASSERT_TRUE(store->set_processor_online("other", false, kT0).ok());
  std::vector<std::string> touched = ids;
  touched.push_back("ghost");
  ASSERT_TRUE(store->touch_processors(touched, kT0 + 300).ok());
  ASSERT_TRUE(store->touch_processors({}, kT0 + 400).ok());
  for (const std::string& id : ids) {
    const Processor p = **store->processor(id);
    EXPECT_TRUE(p.online) << id;
    EXPECT_EQ(p.last_seen_ms, kT0 + 300) << id;
  }
  const Processor other = **store->processor("other");
  EXPECT_FALSE(other.online);
  EXPECT_EQ(other.last_seen_ms, kT0 + 5);
  EXPECT_FALSE(store->processor("ghost")->has_value());
}

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

TEST_P(StoreTest, RestartKeepsEverything) {
  Processor p = make_processor("p1", 2.4, kT0);
  Deployment d = make_deployment("d", 2, 1, kT0);
  {
    auto store = reopen();
    ASSERT_NE(store, nullptr);
    ASSERT_TRUE(store->upsert_processor(p).ok());
    ASSERT_TRUE(store->create_deployment(d).ok());
    Replica r = replica_at(*store, "d", 1);
    r.processor_id = "p1";
    r.price_per_day = 2.4;
    r.state = ReplicaState::Ready;
    ASSERT_TRUE(store->update_replica(r, kT0).ok());
    r.state = ReplicaState::Loading;
    ASSERT_TRUE(store->update_replica(r, kT0 + kHour).ok());
    r.state = ReplicaState::Ready;
    ASSERT_TRUE(store->update_replica(r, kT0 + 2 * kHour).ok());
  }
  auto store = reopen();
  ASSERT_NE(store, nullptr);
  auto got = store->processor("p1");
  ASSERT_TRUE(got.ok() && got->has_value());
  expect_same(**got, p);
  auto dep = store->deployment("d");
  ASSERT_TRUE(dep.ok() && dep->has_value());
  expect_same(**dep, d);
  auto rows = replicas_of(*store, "d");
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[1].state, ReplicaState::Ready);
  EXPECT_EQ(rows[1].processor_id, "p1");
  EXPECT_NEAR(rows[1].cost, 0.1, 1e-12);
  EXPECT_EQ(rows[1].ready_since_ms, kT0 + 2 * kHour);
  EXPECT_NEAR(store->replica_cost(rows[1], kT0 + 3 * kHour), 0.2, 1e-12);
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

// A hub database written before simulated processors existed (schema 1) opens, and its rows read
// as not simulated.
TEST(SqliteStore, SchemaOneFileMigrates) {
  TempDb db;
  {
    auto raw = SqliteDb::open(db.path());
    ASSERT_TRUE(raw.ok()) << raw.status().to_string();
    // Schema 1 as fleet/store/sqlite_store.cpp's first migration wrote it, with one row each.
    constexpr const char* kSchemaOneWithRows = R"sql(
CREATE TABLE processors (
  id TEXT PRIMARY KEY NOT NULL, name TEXT NOT NULL, ram_bytes INTEGER NOT NULL,
  free_disk_bytes INTEGER NOT NULL, cores INTEGER NOT NULL, big_cores INTEGER NOT NULL, arch TEXT NOT NULL,
  os TEXT NOT NULL, cpu_features TEXT NOT NULL, prefill_tps REAL NOT NULL, decode_tps REAL NOT NULL,
  bench_shape TEXT NOT NULL, price_per_day REAL NOT NULL, attested INTEGER NOT NULL, online INTEGER NOT NULL,
  registered_ms INTEGER NOT NULL, last_seen_ms INTEGER NOT NULL);
CREATE TABLE deployments (
  name TEXT PRIMARY KEY NOT NULL, model_url TEXT NOT NULL, model_sha256 TEXT NOT NULL,
  min_ram_bytes INTEGER NOT NULL, min_cores INTEGER NOT NULL, req_arch TEXT NOT NULL, min_decode_tps REAL NOT NULL,
  attested_only INTEGER NOT NULL, allow_list TEXT NOT NULL, replicas INTEGER NOT NULL, spares INTEGER NOT NULL,
  max_price_per_day REAL NOT NULL, ctx_size INTEGER NOT NULL, parallel INTEGER NOT NULL, threads INTEGER NOT NULL,
  lora TEXT NOT NULL, env TEXT NOT NULL, created_ms INTEGER NOT NULL);
CREATE TABLE replicas (
  deployment TEXT NOT NULL REFERENCES deployments(name) ON DELETE CASCADE, idx INTEGER NOT NULL,
  processor_id TEXT NOT NULL, price_per_day REAL NOT NULL, state TEXT NOT NULL, progress REAL NOT NULL,
  detail TEXT NOT NULL, prefill_tps REAL NOT NULL, decode_tps REAL NOT NULL, matched_ms INTEGER NOT NULL,
  ready_since_ms INTEGER NOT NULL, cost REAL NOT NULL, PRIMARY KEY (deployment, idx));
INSERT INTO processors VALUES ('old1', 'old', 1, 1, 4, 4, 'x86_64', 'linux', '[]', 1, 2, '', 0.5, 0, 0, 5, 6);
INSERT INTO deployments VALUES ('dep', 'http://h/m.gguf',
  'bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb', 0, 0, '', 0, 0, '[]', 1, 0, 1, 2048, 2, 0, '[]', '[]', 7);
INSERT INTO replicas VALUES ('dep', 0, 'old1', 0.5, 'ready', 1, '', 10, 5, 3, 4, 0);
PRAGMA user_version = 1;
)sql";
    ASSERT_TRUE((*raw)->exec(kSchemaOneWithRows).ok());
  }
  auto store = open_or_die(db.path());
  ASSERT_NE(store, nullptr);
  auto p = store->processor("old1");
  ASSERT_TRUE(p.ok() && p->has_value()) << p.status().to_string();
  EXPECT_EQ((*p)->name, "old");
  EXPECT_FALSE((*p)->simulated);
  EXPECT_EQ((*p)->enrollment, Enrollment::Enrolled) << "a device from before enrolment was admitted then";
  auto d = store->deployment("dep");
  ASSERT_TRUE(d.ok() && d->has_value()) << d.status().to_string();
  EXPECT_FALSE((*d)->spec.engine.simulated);
  // Later migrations' columns read as their defaults.
  EXPECT_EQ((*d)->spec.gateway.queue_max, 64);
  EXPECT_EQ((*d)->spec.gateway.queue_timeout_ms, 30000);
  EXPECT_EQ((*d)->spec.gateway.alias, "");
  EXPECT_FALSE((*d)->spec.requirements.charging_only);
  EXPECT_EQ((*d)->spec.requirements.min_battery, 0);
  EXPECT_EQ((*d)->spec.requirements.max_temperature_c, 0);
  // A row from before rolling updates serves what its deployment asks for.
  const Replica row = replica_at(*store, "dep", 0);
  EXPECT_EQ(row.serving, serving_of((*d)->spec));
  EXPECT_EQ(row.serving.model_sha256, std::string(64, 'b'));
  EXPECT_EQ(row.serving.engine.ctx_size, 2048);
  EXPECT_FALSE(row.reloading);
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

TEST_P(StoreTest, EnrollmentAndTokensRoundTrip) {
  auto store = reopen();
  ASSERT_NE(store, nullptr);
  Processor p = make_processor("p1", 1, kT0);
  p.enrollment = Enrollment::Pending;
  ASSERT_TRUE(store->upsert_processor(p).ok());
  EXPECT_EQ((*store->processor("p1"))->enrollment, Enrollment::Pending);
  ASSERT_TRUE(store->set_enrollment("p1", Enrollment::Revoked, std::nullopt, kT0).ok());
  EXPECT_EQ((*store->processor("p1"))->enrollment, Enrollment::Revoked);
  // A registration never writes the enrolment back (issue 43, item 1): only set_enrollment does.
  p.enrollment = Enrollment::Enrolled;
  p.online = true;
  ASSERT_TRUE(store->upsert_processor(p).ok());
  EXPECT_EQ((*store->processor("p1"))->enrollment, Enrollment::Revoked);
  EXPECT_TRUE((*store->processor("p1"))->online);
  // An id never seen gets a row, so it can be approved before it first joins (item 12).
  ASSERT_TRUE(store->set_enrollment("none", Enrollment::Enrolled, std::string("dev9"), kT0).ok());
  const auto none = *store->processor("none");
  ASSERT_TRUE(none.has_value());
  EXPECT_EQ(none->enrollment, Enrollment::Enrolled);
  EXPECT_EQ(none->label, "dev9");
  EXPECT_FALSE(none->online);
  // Labels are unique; a later registration keeps the operator's label.
  EXPECT_EQ(store->set_enrollment("p1", Enrollment::Enrolled, std::string("dev9"), kT0).code(),
            StatusCode::InvalidArgument);
  Processor again = make_processor("none", 1, kT0);
  again.name = "dev9-claimed";
  ASSERT_TRUE(store->upsert_processor(again).ok());
  EXPECT_EQ((*store->processor("none"))->label, "dev9");
  // Pending rows expire once unseen, offline and unassigned.
  Processor pending = make_processor("pend", 1, kT0);
  pending.enrollment = Enrollment::Pending;
  pending.online = false;
  ASSERT_TRUE(store->upsert_processor(pending).ok());
  EXPECT_EQ(*store->remove_pending_processors(kT0 + 5), 0);
  EXPECT_EQ(*store->remove_pending_processors(kT0 + 6), 1);
  EXPECT_FALSE((*store->processor("pend")).has_value());
  EXPECT_TRUE((*store->processor("p1")).has_value());
  // A two-use token: spent twice, then refused; an expired one is refused at once.
  ASSERT_TRUE(store->add_enrollment_token({"h2", "two", 2, kT0 + kHour, kT0}).ok());
  ASSERT_TRUE(store->add_enrollment_token({"old", "", 5, kT0 + 1, kT0}).ok());
  EXPECT_TRUE(*store->redeem_enrollment_token("h2", kT0));
  EXPECT_TRUE(*store->redeem_enrollment_token("h2", kT0));
  EXPECT_FALSE(*store->redeem_enrollment_token("h2", kT0));
  EXPECT_FALSE(*store->redeem_enrollment_token("old", kT0 + 1));
  EXPECT_FALSE(*store->redeem_enrollment_token("nope", kT0));
  auto tokens = store->enrollment_tokens();
  ASSERT_TRUE(tokens.ok());
  ASSERT_EQ(tokens->size(), 2u);
  EXPECT_EQ((*tokens)[0].uses_left + (*tokens)[1].uses_left, 5);
  // Withdrawn by its listed id (the hash's first 12 digits): no use is left.
  const std::string hash = std::string(12, 'c') + std::string(52, '1');
  ASSERT_TRUE(store->add_enrollment_token({hash, "w", 3, kT0 + kHour, kT0}).ok());
  EXPECT_EQ(store->withdraw_enrollment_token("cccc").code(), StatusCode::NotFound);
  EXPECT_EQ(store->withdraw_enrollment_token("dddddddddddd").code(), StatusCode::NotFound);
  ASSERT_TRUE(store->withdraw_enrollment_token(std::string(12, 'c')).ok());
  EXPECT_FALSE(*store->redeem_enrollment_token(hash, kT0));
}

TEST_P(StoreTest, ApiKeysKeepTheirStateAcrossARestart) {
  ApiKey k;
  k.id = "abc123abc123";
  k.hash = std::string(64, 'f');
  k.name = "batch";
  k.deployment = "risk";
  k.rpm = 60;
  k.tokens_per_day = 1000;
  k.created_ms = kT0;
  k.deployment_created_ms = kT0 - 5;
  {
    auto store = reopen();
    ASSERT_NE(store, nullptr);
    ASSERT_TRUE(store->add_api_key(k).ok());
    EXPECT_EQ(store->add_api_key(k).code(), StatusCode::InvalidArgument);
    k.requests = 7;
    k.tokens = 300;
    k.day = 19000;
    k.day_tokens = 120;
    k.revoked = true;
    ASSERT_TRUE(store->update_api_key(k).ok());  // its revocation and binding, not its usage
    ApiKey none = k;
    none.id = "none";
    EXPECT_EQ(store->update_api_key(none).code(), StatusCode::NotFound);
  }
  auto store = reopen();
  ASSERT_NE(store, nullptr);
  auto keys = store->api_keys();
  ASSERT_TRUE(keys.ok()) << keys.status().to_string();
  ASSERT_EQ(keys->size(), 1u);
  const ApiKey& back = (*keys)[0];
  EXPECT_EQ(back.hash, k.hash);
  EXPECT_EQ(back.name, "batch");
  EXPECT_EQ(back.deployment, "risk");
  EXPECT_EQ(back.rpm, 60);
  EXPECT_EQ(back.tokens_per_day, 1000);
  EXPECT_EQ(back.requests, 0) << "usage is counted by quotas() alone";
  EXPECT_EQ(back.tokens, 0);
  EXPECT_EQ(back.day, 0);
  EXPECT_EQ(back.day_tokens, 0);
  EXPECT_TRUE(back.revoked);
  EXPECT_EQ(back.deployment_created_ms, kT0 - 5) << "the key stays bound to its deployment's identity";
  ApiKey bound = back;
  bound.deployment_created_ms = kT0 + 9;  // a key stored unbound, bound at the hub's start
  ASSERT_TRUE(store->update_api_key(bound).ok());
  EXPECT_EQ((*store->api_keys())[0].deployment_created_ms, kT0 + 9);
}

TEST(SqliteStore, GarbageFileIsDataLoss) {
  TempDb db;
  {
    std::ofstream out(db.path(), std::ios::binary);
    for (int i = 0; i < 64; ++i) out << "this is not a database, just some text line " << i << "\n";
  }
  auto store = open_sqlite_store(db.path());
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().code(), StatusCode::DataLoss) << store.status().to_string();
  EXPECT_NE(store.status().message().find(db.path()), std::string::npos);
}

TEST(SqliteStore, UnopenablePathIsAnError) {
  auto store = open_sqlite_store("/nonexistent-cellserve-dir/sub/hub.db");
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().code(), StatusCode::Internal) << store.status().to_string();
}

TEST(SqliteStore, InMemoryDatabaseWorks) {
  auto store = open_or_die(":memory:");
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(store->create_deployment(make_deployment("m", 1, 0, kT0)).ok());
  EXPECT_EQ(replicas_of(*store, "m").size(), 1u);
}

TEST_P(StoreTest, ConcurrentUseFromFourThreads) {
  auto store = reopen();
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(store->create_deployment(make_deployment("d", 4, 0, kT0)).ok());
  constexpr int kThreads = 4;
  constexpr int kRounds = 25;
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kRounds; ++i) {
        Processor p = make_processor("t" + std::to_string(t) + "-" + std::to_string(i), 1, kT0 + i);
        if (!store->upsert_processor(p).ok()) ++failures;
        Replica r;
        r.deployment = "d";
        r.index = t;
        r.processor_id = p.id;
        r.price_per_day = 24;
        r.state = i % 2 == 0 ? ReplicaState::Ready : ReplicaState::Loading;
        if (!store->update_replica(r, kT0 + i * kHour).ok()) ++failures;
        if (!store->processors().ok() || !store->replicas("").ok()) ++failures;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(store->processors()->size(), static_cast<size_t>(kThreads * kRounds));
  // Each row was Ready for hours [0,1), [2,3), ... [22,23) at 1 per hour, and changed processor
  // every round, closing each interval: 12 hours; the last round (24) leaves it Ready again.
  for (const Replica& r : replicas_of(*store, "d")) {
    EXPECT_NEAR(r.cost, 12.0, 1e-9) << r.index;
    EXPECT_EQ(r.state, ReplicaState::Ready);
  }
}

}  // namespace
}  // namespace cellserve::fleet

namespace cellserve::fleet {
namespace {

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

namespace cellserve::fleet {
namespace {

// A spec with every field set (tests/fleet/every_field_spec.h) reads back equal from the store,
// as the deployment and as its rows' serving, across a restart; scaling and spec updates keep it.
TEST_P(StoreTest, EverySpecFieldRoundTripsThroughTheStore) {
  Deployment d;
  d.spec = test_specs::every_field_spec();
  test_specs::expect_every_field_set(d.spec);
  d.created_ms = kT0;
  d.secrets_version = 4;
  {
    auto store = reopen();
    ASSERT_NE(store, nullptr);
    ASSERT_TRUE(store->create_deployment(d).ok());
  }
  auto store = reopen();
  ASSERT_NE(store, nullptr);
  auto got = store->deployment(d.spec.name);
  ASSERT_TRUE(got.ok() && got->has_value()) << got.status().to_string();
  EXPECT_EQ((*got)->spec, d.spec);
  EXPECT_EQ((*got)->created_ms, kT0);
  EXPECT_EQ((*got)->secrets_version, 4);
  const auto rows = replicas_of(*store, d.spec.name);
  ASSERT_EQ(rows.size(), 5u);
  for (const Replica& r : rows) EXPECT_EQ(r.serving, serving_of(d.spec));

  ASSERT_TRUE(store->scale_deployment(d.spec.name, 4, 1, kT0 + 1).ok());
  DeploymentSpec want = d.spec;
  want.replicas = 4;
  want.spares = 1;
  EXPECT_EQ((*store->deployment(d.spec.name))->spec, want);

  // An update replaces every field but the counts (scale_deployment's).
  DeploymentSpec next = want;
  next.replicas = 9;
  next.engine.ctx_size = 4096;
  next.gateway.first_byte_timeout_ms = 0;
  next.requirements.allow.clear();
  ASSERT_TRUE(store->update_deployment_spec(next).ok());
  next.replicas = 4;
  EXPECT_EQ((*store->deployment(d.spec.name))->spec, next);
  EXPECT_EQ((*store->deployment(d.spec.name))->secrets_version, 4) << "the env did not change";
  EXPECT_EQ(replica_at(*store, d.spec.name, 0).serving, serving_of(d.spec)) << "rows keep their serving";
}

// A hub.db of schema 15 (spec fields in columns) becomes one of documents: every field of every
// row reads as it did, and the file takes new deployments, scaling and updates afterwards.
TEST(SqliteStore, SchemaFifteenSpecColumnsBecomeDocuments) {
  TempDb db;
  DeploymentSpec spec = test_specs::every_field_spec();
  // Fields added after schema 15 were never columns: they read as their defaults.
  spec.gateway.verify_fraction = 0;
  spec.gateway.verify_agreement = "text";
  {
    auto raw = SqliteDb::open(db.path());
    ASSERT_TRUE(raw.ok()) << raw.status().to_string();
    const auto migrations = hub_schema_migrations();
    ASSERT_GE(migrations.size(), 15u);
    for (size_t v = 0; v < 15; ++v) ASSERT_TRUE((*raw)->exec(migrations[v]).ok()) << v;
    // The values of every_field_spec(), as schema 15 held them.
    const std::string sha(64, 'e');
    const std::string lora =
        R"(["aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa 0.5 https://x/a.gguf",)"
        R"("hf://o/r/b.gguf"])";
    const std::string rows =
        "INSERT INTO deployments (name, model_url, model_sha256, min_ram_bytes, min_cores, req_arch, min_decode_tps, "
        "attested_only, allow_list, replicas, spares, max_price_per_day, ctx_size, parallel, threads, lora, env, "
        "created_ms, simulated, alias, queue_max, queue_timeout_ms, hedge_max_tokens, hedge_delay_ms, "
        "secrets_version, batch_reserve_slots, charging_only, min_battery, max_temperature_c, first_byte_timeout_ms) "
        "VALUES ('every-field', 'hf://org/model/model-q4_k_m.gguf', '" +
        sha + "', " + std::to_string((12ULL << 30) + 7) +
        ", 6, 'aarch64', 5.25, 1, '[\"abc\",\"phone \\\"1\\\"\"]', 3, 2, 0.1, 8192, 3, 5, '" + lora +
        "', '[[\"TOKEN\",\"s3cr\\\"et\"],[\"A_B\",\"\"]]', 1700000000000, 1, 'gpt-4o-mini', 9, 1500, 64, 250, 4, 0, 1, "
        "35, 41.5, 4000);"
        "INSERT INTO deployments (name, model_url, model_sha256, min_ram_bytes, min_cores, req_arch, min_decode_tps, "
        "attested_only, allow_list, replicas, spares, max_price_per_day, ctx_size, parallel, threads, lora, env, "
        "created_ms) VALUES ('plain', 'http://h/m.gguf', '" +
        sha + "', 0, 0, '', 0, 0, '[]', 1, 0, 2, 0, 0, 0, '[]', '[]', 1700000000001);" +
        "INSERT INTO replicas (deployment, idx, processor_id, price_per_day, state, progress, detail, prefill_tps, "
        "decode_tps, matched_ms, ready_since_ms, cost, draining, model_url, model_sha256, ctx_size, parallel, threads, "
        "lora, simulated, reloading, secrets_version) VALUES ('every-field', 0, 'p1', 0.5, 'ready', 1, 'ok', 10, 5, 3, "
        "4, 0.25, 1, 'hf://org/model/model-q4_k_m.gguf', '" +
        sha + "', 8192, 3, 5, '" + lora +
        "', 1, 1, 4), ('plain', 0, '', 0, 'unmatched', 0, '', 0, 0, 0, 0, 0, 0, 'http://old/m.gguf', '" +
        std::string(64, 'b') + "', 0, 0, 0, '[]', 0, 0, 0);";
    ASSERT_TRUE((*raw)->exec(rows.c_str()).ok());
  }
  auto store = open_or_die(db.path());
  ASSERT_NE(store, nullptr);
  auto got = store->deployment("every-field");
  ASSERT_TRUE(got.ok() && got->has_value()) << got.status().to_string();
  EXPECT_EQ((*got)->spec, spec);
  EXPECT_EQ((*got)->created_ms, kT0);
  EXPECT_EQ((*got)->secrets_version, 4);
  const Replica row = replica_at(*store, "every-field", 0);
  EXPECT_EQ(row.serving, serving_of(spec));
  EXPECT_EQ(row.processor_id, "p1");
  EXPECT_EQ(row.state, ReplicaState::Ready);
  EXPECT_EQ(row.detail, "ok");
  EXPECT_EQ(row.cost, 0.25);
  EXPECT_TRUE(row.draining);
  EXPECT_TRUE(row.reloading);
  EXPECT_EQ(row.secrets_version, 4);

  auto plain = store->deployment("plain");
  ASSERT_TRUE(plain.ok() && plain->has_value()) << plain.status().to_string();
  DeploymentSpec want;
  want.name = "plain";
  want.model_url = "http://h/m.gguf";
  want.model_sha256 = spec.model_sha256;
  want.max_price_per_day = 2;
  EXPECT_EQ((*plain)->spec, want) << "columns a migration added read as their defaults";
  EXPECT_EQ(replica_at(*store, "plain", 0).serving.model_url, "http://old/m.gguf");

  // The dropped columns no longer hold anything back.
  ASSERT_TRUE(store->scale_deployment("plain", 2, 0, kT0 + 1).ok());
  EXPECT_EQ(replica_at(*store, "plain", 1).serving, serving_of(want));
  want.replicas = 2;
  want.gateway.alias = "renamed";
  ASSERT_TRUE(store->update_deployment_spec(want).ok());
  EXPECT_EQ((*store->deployment("plain"))->spec, want);
  ASSERT_TRUE(store->create_deployment(make_deployment("fresh", 1, 0, kT0 + 2)).ok());
  const auto all = store->deployments();
  ASSERT_TRUE(all.ok()) << all.status().to_string();
  ASSERT_EQ(all->size(), 3u);
  EXPECT_EQ((*all)[0].spec.name, "every-field");
  EXPECT_EQ((*all)[2].spec.name, "fresh");
}

// A document the store cannot read is DataLoss, never a guess.
// Spot checks' records survive a restart; canaries belong to their deployment and go with it.
TEST_P(StoreTest, AgreementsAndCanariesPersist) {
  DeviceAgreement a{"dev1", 12, 7, 5, 0b1100011, 12, true, "agreed in 7 of its last 12", kT0};
  const std::string cases = "{\"request\": {\"prompt\": \"p\", \"seed\": 1}, \"expect\": \"x\"}\n";
  {
    auto store = reopen();
    ASSERT_NE(store, nullptr);
    ASSERT_TRUE(store->save_agreement(a).ok());
    a.checks = 13;  // replaced, not added
    ASSERT_TRUE(store->save_agreement(a).ok());
    DeviceAgreement fresh;
    fresh.processor_id = "dev2";
    ASSERT_TRUE(store->save_agreement(fresh).ok());
    EXPECT_EQ(store->set_canaries(CanarySet{"nope", cases, 5}).code(), StatusCode::NotFound);
    ASSERT_TRUE(store->create_deployment(make_deployment("risk", 1, 0, kT0)).ok());
    ASSERT_TRUE(store->create_deployment(make_deployment("kept", 1, 0, kT0 + 1)).ok());
    ASSERT_TRUE(store->set_canaries(CanarySet{"risk", cases, 5}).ok());
    ASSERT_TRUE(store->set_canaries(CanarySet{"kept", cases, 7}).ok());
  }
  auto store = reopen();
  ASSERT_NE(store, nullptr);
  auto got = store->agreements();
  ASSERT_TRUE(got.ok()) << got.status().to_string();
  ASSERT_EQ(got->size(), 2u);
  EXPECT_EQ((*got)[0], a);
  EXPECT_EQ((*got)[1].processor_id, "dev2");
  auto canaries = store->canaries();
  ASSERT_TRUE(canaries.ok());
  EXPECT_EQ(*canaries, (std::vector<CanarySet>{{"kept", cases, 7}, {"risk", cases, 5}}));
  ASSERT_TRUE(store->delete_deployment("risk", kT0 + 5).ok());
  ASSERT_TRUE(store->set_canaries(CanarySet{"kept", "", 7}).ok());  // empty: removed
  EXPECT_TRUE(store->canaries()->empty());
}

TEST(SqliteStore, AnUnreadableSpecDocumentIsDataLoss) {
  TempDb db;
  auto store = open_or_die(db.path());
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(store->create_deployment(make_deployment("d", 1, 0, kT0)).ok());
  {
    auto raw = SqliteDb::open(db.path());
    ASSERT_TRUE(raw.ok());
    ASSERT_TRUE((*raw)->exec("UPDATE deployments SET spec = '{\"name\":\"d\",\"replicas\":\"x\"}'").ok());
  }
  auto got = store->deployment("d");
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), StatusCode::DataLoss);
  EXPECT_NE(got.status().message().find("replicas"), std::string::npos) << got.status().message();
  {
    auto raw = SqliteDb::open(db.path());
    ASSERT_TRUE(raw.ok());
    ASSERT_TRUE((*raw)->exec("UPDATE deployments SET spec = '{\"name\":\"other\"}'").ok());
  }
  got = store->deployment("d");
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), StatusCode::DataLoss);
}

}  // namespace
}  // namespace cellserve::fleet
