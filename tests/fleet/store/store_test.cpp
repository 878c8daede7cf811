// The store suite (store_fixture.h), once per engine: processors, attestation pins, enrolment,
// API keys, agreements and canaries, a restart, and concurrent use. The other records have files
// of their own: deployment_, service_history_, spec_ and sqlite_store_test.cpp.

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "fleet/store/store.h"
#include "tests/fleet/store/store_fixture.h"
#include "tests/fleet/store/store_records.h"

namespace cellserve::fleet {
namespace {

INSTANTIATE_TEST_SUITE_P(Engines, StoreTest, ::testing::Values(StoreEngine::Sqlite, StoreEngine::Postgres),
                         store_engine_name);

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

}  // namespace
}  // namespace cellserve::fleet
