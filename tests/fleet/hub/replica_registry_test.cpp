// The registry's load accounting: exact in-flight counts that survive refreshes and guard moves,
// agents' slot reports less the requests that ended since, and ejection after failures.
#include "fleet/hub/replica_registry.h"

#include <gtest/gtest.h>

namespace cellserve::fleet {
namespace {

void fill(ReplicaRegistry& reg, int replicas, int parallel) {
  Deployment d;
  d.spec.name = "risk";
  d.spec.replicas = replicas;
  d.spec.engine.parallel = parallel;
  std::vector<Replica> rows;
  for (int i = 0; i < replicas; ++i) {
    Replica r;
    r.deployment = "risk";
    r.index = i;
    r.processor_id = "p" + std::to_string(i);
    r.state = ReplicaState::Ready;
    rows.push_back(r);
  }
  reg.refresh({d}, rows);
}

int busy(const ReplicaRegistry& reg, int index) { return reg.find("risk", index).replica.busy; }

TEST(ReplicaRegistry, InFlightCountsFollowTheGuardsThroughMovesAndRefreshes) {
  ReplicaRegistry reg;
  fill(reg, 2, 3);
  EXPECT_EQ(reg.find("risk", 0).replica.slots, 3) << "the spec's parallel until the agent reports";
  ReplicaRegistry::InFlight a = reg.begin_request("risk", 0);
  ReplicaRegistry::InFlight b = reg.begin_request("risk", 0);
  EXPECT_EQ(reg.find("risk", 0).replica.in_flight, 2);
  // Assigning over a guard ends its request (the regression: a default move-assignment leaked it).
  a = reg.begin_request("risk", 1);
  EXPECT_EQ(reg.find("risk", 0).replica.in_flight, 1);
  EXPECT_EQ(reg.find("risk", 1).replica.in_flight, 1);
  a = ReplicaRegistry::InFlight();
  EXPECT_EQ(reg.find("risk", 1).replica.in_flight, 0);
  EXPECT_FALSE(reg.begin_request("risk", 7)) << "no such replica";
  {
    ReplicaRegistry::InFlight moved(std::move(b));
    EXPECT_EQ(reg.find("risk", 0).replica.in_flight, 1);
  }
  EXPECT_EQ(reg.find("risk", 0).replica.in_flight, 0);
}

TEST(ReplicaRegistry, CountsFollowAProcessorThatMovedToAnotherIndex) {
  // A rolling update's swap: the new device takes index 0, the old one drains at a surge index
  // with its requests still in flight; they must stay counted there, or the hub would remove the
  // old row (and unload the old model) under them.
  ReplicaRegistry reg;
  fill(reg, 1, 2);
  Deployment d;
  d.spec.name = "risk";
  d.spec.replicas = 1;
  std::vector<Replica> rows(2);
  rows[0].deployment = rows[1].deployment = "risk";
  rows[0].index = 0;
  rows[0].processor_id = "p0";
  rows[0].state = rows[1].state = ReplicaState::Ready;
  rows[1].index = kSurgeIndexBase;
  rows[1].processor_id = "new";
  reg.refresh({d}, rows);
  ReplicaRegistry::InFlight old_request = reg.begin_request("risk", 0);
  ReplicaRegistry::InFlight new_request = reg.begin_request("risk", kSurgeIndexBase);
  std::swap(rows[0].processor_id, rows[1].processor_id);
  rows[1].draining = true;
  reg.refresh({d}, rows);
  std::vector<ReplicaView> views = reg.replicas("risk");
  ASSERT_EQ(views.size(), 2u);
  EXPECT_EQ(views[0].processor_id, "new");
  EXPECT_EQ(views[0].in_flight, 1);
  EXPECT_EQ(views[1].processor_id, "p0");
  EXPECT_EQ(views[1].in_flight, 1);
  EXPECT_TRUE(views[1].draining);
  old_request = ReplicaRegistry::InFlight();
  EXPECT_EQ(reg.replicas("risk")[1].in_flight, 0);
  EXPECT_EQ(reg.replicas("risk")[0].in_flight, 1);
  // A row reloading in place takes no new requests either.
  rows[0].reloading = true;
  reg.refresh({d}, rows);
  EXPECT_TRUE(reg.replicas("risk")[0].draining);
}

TEST(ReplicaRegistry, AgentReportsCountLessTheHubsRequestsThatEndedSince) {
  ReplicaRegistry reg;
  fill(reg, 1, 4);
  {
    ReplicaRegistry::InFlight one = reg.begin_request("risk", 0);
    // The agent saw 4 slots with 1 free: 3 busy, though the hub has 1 in flight (someone else
    // uses the device, or the report is of a moment ago).
    reg.report_load("risk", 0, "p0", 4, 1);
    reg.report_load("risk", 0, "someone-else", 8, 0);  // not its processor: ignored
    EXPECT_EQ(reg.find("risk", 0).replica.slots, 4);
    EXPECT_EQ(busy(reg, 0), 3);
  }
  // The hub's request ended after the report: it no longer counts.
  EXPECT_EQ(busy(reg, 0), 2);
  reg.report_load("risk", 0, "p0", 4, 4);
  EXPECT_EQ(busy(reg, 0), 0);
}

// The prefill a device reported, as routing sees it: the last report's, less what the device has
// read since at its routed prompt speed (the prior's 100 tokens/s here), and none once nothing
// runs there.
TEST(ReplicaRegistry, APrefillInProgressIsTheLastReportsLessWhatWasReadSince) {
  ManualClock clock;
  ReplicaRegistry reg(clock);
  fill(reg, 1, 4);
  reg.report_load("risk", 0, "p0", 4, 3, {1000, 7000});
  reg.report_load("risk", 0, "someone-else", 4, 3, {0, 90000});  // not its processor: ignored
  EXPECT_EQ(reg.find("risk", 0).replica.prefill, (PrefillProgress{1000, 7000}));
  EXPECT_EQ(reg.find("risk", 0).replica.prefill.pending(), 6000);
  clock.advance(std::chrono::seconds(10));
  EXPECT_EQ(reg.find("risk", 0).replica.prefill, (PrefillProgress{2000, 7000})) << "10 s at 100 tokens/s";
  clock.advance(std::chrono::seconds(100));
  EXPECT_EQ(reg.find("risk", 0).replica.prefill.pending(), 0);
  reg.report_load("risk", 0, "p0", 4, 3, {1000, 7000});
  EXPECT_EQ(reg.find("risk", 0).replica.prefill.pending(), 6000);
  { ReplicaRegistry::InFlight ended = reg.begin_request("risk", 0); }
  EXPECT_EQ(reg.find("risk", 0).replica.busy, 0);
  EXPECT_EQ(reg.find("risk", 0).replica.prefill, PrefillProgress{}) << "the request it was reading for has ended";
  reg.report_load("risk", 0, "p0", 4, 4);  // read, answered: nothing in progress
  EXPECT_EQ(reg.find("risk", 0).replica.prefill, PrefillProgress{});
  reg.report_load("risk", 0, "p0", 4, 3, {9000, 7000});  // more read than there is: clamped
  EXPECT_EQ(reg.find("risk", 0).replica.prefill.pending(), 0);
}

TEST(ReplicaRegistry, EjectsAfterConsecutiveFailuresUntilASuccess) {
  ReplicaRegistry reg;
  fill(reg, 1, 2);
  for (int i = 1; i < ReplicaRegistry::kEjectAfterFailures; ++i) reg.record_result("risk", 0, false);
  EXPECT_FALSE(reg.find("risk", 0).replica.ejected);
  reg.record_result("risk", 0, true);
  for (int i = 1; i < ReplicaRegistry::kEjectAfterFailures; ++i) reg.record_result("risk", 0, false);
  EXPECT_FALSE(reg.find("risk", 0).replica.ejected) << "a success in between resets the count";
  reg.record_result("risk", 0, false);
  EXPECT_TRUE(reg.find("risk", 0).replica.ejected);
  reg.record_result("risk", 0, true);
  EXPECT_FALSE(reg.find("risk", 0).replica.ejected);
}

TEST(ReplicaRegistry, EjectsAReplicaWhoseRecentErrorRateReachesTheThresholdThoughNeverTwiceInARow) {
  ReplicaRegistry reg;
  fill(reg, 2, 2);
  // Replica 0 fails every other request: never twice in a row, half of the time.
  for (int i = 1; i < ReplicaRegistry::kErrorRateMinOutcomes; ++i) {
    reg.record_result("risk", 0, i % 2 == 1);
    EXPECT_FALSE(reg.find("risk", 0).replica.ejected) << "too few outcomes to judge a rate, at " << i;
  }
  EXPECT_TRUE(reg.record_result("risk", 0, false)) << "half of the last " << ReplicaRegistry::kErrorRateMinOutcomes;
  EXPECT_TRUE(reg.find("risk", 0).replica.ejected);
  // The probe after the ejection decides alone: a failure ejects it again...
  EXPECT_TRUE(reg.record_result("risk", 0, false)) << "a failed probe ejects again";
  // ...and one success re-admits it.
  reg.record_result("risk", 0, true);
  EXPECT_FALSE(reg.find("risk", 0).replica.ejected);
  // Replica 1 fails one request in three: below the threshold, it keeps its traffic.
  for (int i = 0; i < 3 * ReplicaRegistry::kErrorRateWindow; ++i) {
    EXPECT_FALSE(reg.record_result("risk", 1, i % 3 != 0)) << "ejected at outcome " << i;
  }
  EXPECT_FALSE(reg.find("risk", 1).replica.ejected);
}

TEST(ReplicaRegistry, AReplicaIsCurrentOnlyAtItsDeploymentsSecretsVersion) {
  ReplicaRegistry reg;
  Deployment d;
  d.spec.name = "risk";
  d.spec.replicas = 2;
  d.secrets_version = 3;
  std::vector<Replica> rows(2);
  for (int i = 0; i < 2; ++i) {
    rows[i].deployment = "risk";
    rows[i].index = i;
    rows[i].processor_id = "p" + std::to_string(i);
    rows[i].state = ReplicaState::Ready;
  }
  rows[0].secrets_version = 3;
  rows[1].secrets_version = 2;  // its device has not opened the rotated secret yet
  reg.refresh({d}, rows, {{"risk", "replica-key"}});
  EXPECT_TRUE(reg.find("risk", 0).replica.secrets_current);
  EXPECT_FALSE(reg.find("risk", 1).replica.secrets_current);
  EXPECT_EQ(reg.deployment("risk")->replica_key, "replica-key");
  EXPECT_EQ(reg.deployment("risk")->secrets_version, 3);
}

TEST(ReplicaRegistry, ADevicesReportReachesEveryReplicaItServesUntilForgotten) {
  ReplicaRegistry reg;
  fill(reg, 2, 2);
  reg.report_device("p1", 3.5, /*paused=*/true);
  EXPECT_DOUBLE_EQ(reg.find("risk", 0).replica.slowdown, 1);
  EXPECT_FALSE(reg.find("risk", 0).replica.device_paused);
  EXPECT_DOUBLE_EQ(reg.find("risk", 1).replica.slowdown, 3.5);
  EXPECT_TRUE(reg.find("risk", 1).replica.device_paused);
  fill(reg, 2, 2);  // a refresh keeps what the device said
  EXPECT_TRUE(reg.replicas("risk")[1].device_paused);
  reg.report_device("p1", 0.2, /*paused=*/false);  // never faster than measured
  EXPECT_DOUBLE_EQ(reg.find("risk", 1).replica.slowdown, 1);
  EXPECT_FALSE(reg.find("risk", 1).replica.device_paused);
  reg.report_device("p0", 2, true);
  reg.forget_device("p0");
  EXPECT_FALSE(reg.find("risk", 0).replica.device_paused);
  EXPECT_DOUBLE_EQ(reg.find("risk", 0).replica.slowdown, 1);
}

TEST(ReplicaRegistry, SlotsAreTheAgentsReportAtMostTheSpecsParallel) {
  ReplicaRegistry reg;
  fill(reg, 1, 3);
  reg.report_load("risk", 0, "p0", 4096, 4096);  // a device claiming 4,096 free slots
  EXPECT_EQ(reg.find("risk", 0).replica.slots, 3);
  reg.report_load("risk", 0, "p0", 1, 1);  // fewer than asked: believed (it only loses traffic)
  EXPECT_EQ(reg.find("risk", 0).replica.slots, 1);
  fill(reg, 1, 0);  // no parallel in the spec: the agent's default
  reg.report_load("risk", 0, "p0", 4096, 4096);
  EXPECT_EQ(reg.find("risk", 0).replica.slots, kDefaultReplicaSlots);
}

// Two replicas whose devices claim `claimed` speeds (their status polls).
void fill_claiming(ReplicaRegistry& reg, const SpeedFigures& claimed0, const SpeedFigures& claimed1,
                   const std::string& processor1 = "p1") {
  Deployment d;
  d.spec.name = "risk";
  d.spec.replicas = 2;
  std::vector<Replica> rows(2);
  for (int i = 0; i < 2; ++i) {
    rows[i].deployment = "risk";
    rows[i].index = i;
    rows[i].state = ReplicaState::Ready;
    rows[i].prefill_tps = (i == 0 ? claimed0 : claimed1).prefill_tps;
    rows[i].decode_tps = (i == 0 ? claimed0 : claimed1).decode_tps;
  }
  rows[0].processor_id = "p0";
  rows[1].processor_id = processor1;
  reg.refresh({d}, rows);
}

TEST(ReplicaRegistry, RoutesOnWhatItMeasuredAndFlagsAnInflatedClaimOnce) {
  ReplicaRegistry reg;
  fill_claiming(reg, {400, 25}, {40000, 2500});  // replica 1 claims 100x what it does
  EXPECT_DOUBLE_EQ(reg.find("risk", 1).replica.decode_tps, kPriorDecodeTps) << "unmeasured: the prior at most";
  EXPECT_DOUBLE_EQ(reg.find("risk", 1).replica.claimed.decode_tps, 2500);
  // Both really write 25 tok/s: 26 tokens, the first after 0.1 s, the rest in 1 s.
  const AnswerSample answer{40, 26, true, 0.1, 1.1};
  EXPECT_FALSE(reg.record_speed("risk", 1, "someone-else", answer)) << "not its processor: ignored";
  EXPECT_EQ(reg.find("risk", 1).replica.measured.answers(), 0);
  int flagged = 0;
  for (int i = 0; i < 2 * kTrustedSamples; ++i) {
    flagged += reg.record_speed("risk", 1, "p1", answer);
    EXPECT_FALSE(reg.record_speed("risk", 0, "p0", answer));
  }
  EXPECT_EQ(flagged, 1) << "the event is reported once";
  const ReplicaView liar = reg.find("risk", 1).replica;
  const ReplicaView honest = reg.find("risk", 0).replica;
  EXPECT_TRUE(liar.speed_claim_inflated);
  EXPECT_FALSE(honest.speed_claim_inflated);
  EXPECT_DOUBLE_EQ(liar.decode_tps, 25) << "routed on the measurement, not the claim";
  EXPECT_DOUBLE_EQ(honest.decode_tps, 25);
  EXPECT_DOUBLE_EQ(liar.measured.decode().value, 25);
  // Its measurements stay while it serves the deployment, and go when another device takes over.
  fill_claiming(reg, {400, 25}, {40000, 2500});
  EXPECT_TRUE(reg.find("risk", 1).replica.speed_claim_inflated);
  fill_claiming(reg, {400, 25}, {40000, 2500}, "p2");
  EXPECT_FALSE(reg.find("risk", 1).replica.speed_claim_inflated);
  EXPECT_DOUBLE_EQ(reg.find("risk", 1).replica.decode_tps, kPriorDecodeTps);
  fill_claiming(reg, {400, 25}, {40000, 2500});
  EXPECT_EQ(reg.find("risk", 1).replica.measured.answers(), 0) << "a returning device starts from the prior";
}

}  // namespace
}  // namespace cellserve::fleet
