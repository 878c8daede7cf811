#include "fleet/matcher/matcher.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

namespace cellserve::fleet {
namespace {

constexpr uint64_t kGiB = 1ULL << 30;

Processor proc(const std::string& id, double price, uint64_t ram_gib = 16, double decode_tps = 10) {
  Processor p;
  p.id = id;
  p.name = "n-" + id;
  p.specs.ram_bytes = ram_gib * kGiB;
  p.specs.cores = 8;
  p.specs.big_cores = 8;
  p.specs.arch = "aarch64";
  p.benchmark.decode_tps = decode_tps;
  p.price_per_day = price;
  p.online = true;
  return p;
}

Deployment dep(const std::string& name, int replicas, int spares = 0, double max_price = 5, int64_t created_ms = 1) {
  Deployment d;
  d.spec.name = name;
  d.spec.replicas = replicas;
  d.spec.spares = spares;
  d.spec.max_price_per_day = max_price;
  d.spec.requirements.min_ram_bytes = 12 * kGiB;
  d.created_ms = created_ms;
  return d;
}

// The rows the store creates for `d`: replicas + spares, Unmatched.
std::vector<Replica> rows_of(const Deployment& d) {
  std::vector<Replica> rows;
  for (int i = 0; i < d.spec.replicas + d.spec.spares; ++i) {
    Replica r;
    r.deployment = d.spec.name;
    r.index = i;
    rows.push_back(r);
  }
  return rows;
}

Replica held(const std::string& deployment, int index, const std::string& processor, ReplicaState state) {
  Replica r;
  r.deployment = deployment;
  r.index = index;
  r.processor_id = processor;
  r.state = state;
  return r;
}

// Applies `plan`'s assignments to `rows` as the hub would (state Matched).
void apply_plan(const MatchPlan& plan, std::vector<Replica>& rows) {
  for (const Assignment& a : plan.assignments) {
    for (Replica& r : rows) {
      if (r.deployment == a.deployment && r.index == a.index) {
        r.processor_id = a.processor_id;
        r.price_per_day = a.price_per_day;
        r.state = ReplicaState::Matched;
      }
    }
  }
}

TEST(Meets, ExplainsTheFirstUnmetRequirement) {
  Requirements r;
  r.min_ram_bytes = 12 * kGiB;
  std::string why;
  EXPECT_FALSE(meets(proc("a", 1, 8), r, &why));
  EXPECT_EQ(why, "ram 8.0 GiB < 12.0 GiB");
  EXPECT_TRUE(meets(proc("a", 1, 12), r, &why));

  r.min_cores = 16;
  EXPECT_FALSE(meets(proc("a", 1), r, &why));
  EXPECT_EQ(why, "cores 8 < 16");
  r.min_cores = 0;

  r.arch = "x86_64";
  EXPECT_FALSE(meets(proc("a", 1), r, &why));
  EXPECT_EQ(why, "arch aarch64 != x86_64");
  r.arch = "aarch64";
  EXPECT_TRUE(meets(proc("a", 1), r));

  r.min_decode_tps = 20;
  EXPECT_FALSE(meets(proc("a", 1, 16, 12.5), r, &why));
  EXPECT_EQ(why, "decode 12.5 tok/s < 20.0 tok/s");
  r.min_decode_tps = 0;

  r.attested_only = true;
  EXPECT_FALSE(meets(proc("a", 1), r, &why));
  EXPECT_EQ(why, "not attested");
  Processor attested = proc("a", 1);
  attested.attested = true;
  EXPECT_TRUE(meets(attested, r));
  r.attested_only = false;

  r.allow = {"b", "dev-c"};
  EXPECT_FALSE(meets(proc("a", 1), r, &why));
  EXPECT_EQ(why, "not in the allow list");
  EXPECT_TRUE(meets(proc("b", 1), r));  // by id
  Processor labelled = proc("c", 1);
  labelled.label = "dev-c";
  EXPECT_TRUE(meets(labelled, r));  // by the label the operator fixed at approval
  // Never by the name a device gives itself: any device can call itself "dev-c".
  Processor impostor = proc("evil", 1);
  impostor.name = "dev-c";
  EXPECT_FALSE(meets(impostor, r));

  // Price and online state are not requirements.
  Processor offline_dear = proc("b", 1000);
  offline_dear.online = false;
  EXPECT_TRUE(meets(offline_dear, r));
  EXPECT_FALSE(meets(proc("a", 1), r, nullptr));  // why may be null
}

TEST(PlanMatches, NeverMatchesADeploymentToADeviceItFailedOn) {
  std::vector<Processor> procs = {proc("cheap", 1.0), proc("dear", 2.0)};
  Deployment d = dep("risk", 1, 0, 3.0);
  MatchPlan plan = plan_matches(procs, {d}, rows_of(d), {{"risk", "cheap"}});
  ASSERT_EQ(plan.assignments.size(), 1u);
  EXPECT_EQ(plan.assignments[0].processor_id, "dear");
  // Refused for another deployment only: still the cheapest here.
  plan = plan_matches(procs, {d}, rows_of(d), {{"other", "cheap"}});
  ASSERT_EQ(plan.assignments.size(), 1u);
  EXPECT_EQ(plan.assignments[0].processor_id, "cheap");
  EXPECT_TRUE(plan_matches(procs, {d}, rows_of(d), {{"risk", "cheap"}, {"risk", "dear"}}).assignments.empty());
}

TEST(PlanMatches, IssueScenarioPicksTheTwoRightProcessorsCheapestFirst) {
  // One below the RAM requirement, one above the maximum price, two right ones at the same
  // price: the faster of those wins the tie and takes replica 0.
  std::vector<Processor> procs = {proc("small", 0.5, 8), proc("dear", 9.0), proc("right-slow", 2.0, 16, 8),
                                  proc("right-fast", 2.0, 16, 15)};
  Deployment d = dep("risk", 2, 0, 3.0);
  MatchPlan plan = plan_matches(procs, {d}, rows_of(d));
  EXPECT_TRUE(plan.promotions.empty());
  ASSERT_EQ(plan.assignments.size(), 2u);
  EXPECT_EQ(plan.assignments[0].deployment, "risk");
  EXPECT_EQ(plan.assignments[0].index, 0);
  EXPECT_EQ(plan.assignments[0].processor_id, "right-fast");
  EXPECT_EQ(plan.assignments[0].price_per_day, 2.0);
  EXPECT_EQ(plan.assignments[1].index, 1);
  EXPECT_EQ(plan.assignments[1].processor_id, "right-slow");
}

TEST(PlanMatches, CheapestFirstThenIdOnFullTie) {
  std::vector<Processor> procs = {proc("z", 1.0), proc("y", 0.5), proc("b", 1.0), proc("a", 1.0)};
  Deployment d = dep("d", 3);
  MatchPlan plan = plan_matches(procs, {d}, rows_of(d));
  ASSERT_EQ(plan.assignments.size(), 3u);
  EXPECT_EQ(plan.assignments[0].processor_id, "y");
  EXPECT_EQ(plan.assignments[1].processor_id, "a");
  EXPECT_EQ(plan.assignments[2].processor_id, "b");
}

TEST(PlanMatches, UnmatchedReplicasWaitForAProcessorToJoin) {
  Deployment d = dep("d", 2);
  std::vector<Replica> rows = rows_of(d);
  std::vector<Processor> procs = {proc("p1", 1)};
  MatchPlan plan = plan_matches(procs, {d}, rows);
  ASSERT_EQ(plan.assignments.size(), 1u);
  EXPECT_EQ(plan.assignments[0].index, 0);
  apply_plan(plan, rows);

  // Nothing new: nothing to do.
  EXPECT_TRUE(plan_matches(procs, {d}, rows).assignments.empty());

  // A processor joins (offline ones do not count).
  Processor offline = proc("p0", 0.1);
  offline.online = false;
  procs.push_back(offline);
  EXPECT_TRUE(plan_matches(procs, {d}, rows).assignments.empty());
  procs.push_back(proc("p2", 1));
  plan = plan_matches(procs, {d}, rows);
  ASSERT_EQ(plan.assignments.size(), 1u);
  EXPECT_EQ(plan.assignments[0].index, 1);
  EXPECT_EQ(plan.assignments[0].processor_id, "p2");
}

TEST(PlanMatches, OfflineProcessorsReplicaIsMatchedElsewhere) {
  Deployment d = dep("d", 2);
  std::vector<Replica> rows = {held("d", 0, "gone", ReplicaState::Offline), held("d", 1, "p1", ReplicaState::Ready)};
  Processor gone = proc("gone", 0.1);
  gone.online = false;
  std::vector<Processor> procs = {gone, proc("p1", 1), proc("p2", 2)};
  MatchPlan plan = plan_matches(procs, {d}, rows);
  ASSERT_EQ(plan.assignments.size(), 1u);
  EXPECT_EQ(plan.assignments[0].index, 0);
  EXPECT_EQ(plan.assignments[0].processor_id, "p2");

  // When it comes back, its Offline row no longer holds it: it may serve again.
  procs[0].online = true;
  plan = plan_matches(procs, {d}, rows);
  ASSERT_EQ(plan.assignments.size(), 1u);
  EXPECT_EQ(plan.assignments[0].processor_id, "gone");
}

TEST(PlanMatches, BusyProcessorsAreSkippedAcrossDeployments) {
  Deployment a = dep("a", 1, 0, 5, 1);
  Deployment b = dep("b", 2, 0, 5, 2);
  // p1 serves a (any state but Offline holds it, Failed included).
  std::vector<Replica> rows = {held("a", 0, "p1", ReplicaState::Downloading)};
  for (const Replica& r : rows_of(b)) rows.push_back(r);
  rows[1] = held("b", 0, "p2", ReplicaState::Failed);
  std::vector<Processor> procs = {proc("p1", 0.1), proc("p2", 0.2), proc("p3", 3)};
  MatchPlan plan = plan_matches(procs, {b, a}, rows);
  ASSERT_EQ(plan.assignments.size(), 1u);
  EXPECT_EQ(plan.assignments[0].deployment, "b");
  EXPECT_EQ(plan.assignments[0].index, 1);
  EXPECT_EQ(plan.assignments[0].processor_id, "p3");
}

TEST(PlanMatches, DeploymentsInCreatedOrderAndEachProcessorOnce) {
  Deployment late = dep("late", 1, 0, 5, 20);
  Deployment early = dep("early", 1, 0, 5, 10);
  std::vector<Replica> rows = rows_of(late);
  for (const Replica& r : rows_of(early)) rows.push_back(r);
  MatchPlan plan = plan_matches({proc("p1", 1)}, {late, early}, rows);
  ASSERT_EQ(plan.assignments.size(), 1u);
  EXPECT_EQ(plan.assignments[0].deployment, "early");
}

TEST(PlanMatches, OnlyEnrolledDevicesArePlacedOn) {
  std::vector<Processor> procs = {proc("pending", 0.1), proc("revoked", 0.2), proc("enrolled", 0.3)};
  procs[0].enrollment = Enrollment::Pending;
  procs[1].enrollment = Enrollment::Revoked;
  Deployment d = dep("d", 3);
  const MatchPlan plan = plan_matches(procs, {d}, rows_of(d));
  ASSERT_EQ(plan.assignments.size(), 1u);
  EXPECT_EQ(plan.assignments[0].processor_id, "enrolled");
}

TEST(PlanMatches, AllowListArchAndAttestation) {
  std::vector<Processor> procs = {proc("cheap", 0.1), proc("x86", 0.2), proc("att", 0.3), proc("named", 0.4)};
  procs[1].specs.arch = "x86_64";
  procs[2].attested = true;

  procs[3].label = "named-by-operator";
  Deployment allow = dep("allow", 2);
  allow.spec.requirements.allow = {"named-by-operator", "x86"};
  MatchPlan plan = plan_matches(procs, {allow}, rows_of(allow));
  ASSERT_EQ(plan.assignments.size(), 2u);
  EXPECT_EQ(plan.assignments[0].processor_id, "x86");
  EXPECT_EQ(plan.assignments[1].processor_id, "named");

  Deployment arch = dep("arch", 1);
  arch.spec.requirements.arch = "x86_64";
  plan = plan_matches(procs, {arch}, rows_of(arch));
  ASSERT_EQ(plan.assignments.size(), 1u);
  EXPECT_EQ(plan.assignments[0].processor_id, "x86");

  Deployment attested = dep("attested", 2);
  attested.spec.requirements.attested_only = true;
  plan = plan_matches(procs, {attested}, rows_of(attested));
  ASSERT_EQ(plan.assignments.size(), 1u);
  EXPECT_EQ(plan.assignments[0].processor_id, "att");
}

TEST(PlanMatches, SparesAreFilledAfterReplicas) {
  Deployment d = dep("d", 2, 1);
  MatchPlan plan = plan_matches({proc("p1", 1), proc("p2", 2), proc("p3", 3)}, {d}, rows_of(d));
  ASSERT_EQ(plan.assignments.size(), 3u);
  EXPECT_EQ(plan.assignments[0].index, 0);
  EXPECT_EQ(plan.assignments[0].processor_id, "p1");
  EXPECT_EQ(plan.assignments[2].index, 2);
  EXPECT_EQ(plan.assignments[2].processor_id, "p3");
}

TEST(PlanMatches, ReadySparePromotedThenSpareRowRematched) {
  Deployment d = dep("d", 2, 2);
  std::vector<Replica> rows = {held("d", 0, "r0", ReplicaState::Ready), held("d", 1, "gone", ReplicaState::Offline),
                               held("d", 2, "s2", ReplicaState::Loading), held("d", 3, "s3", ReplicaState::Ready)};
  std::vector<Processor> procs = {proc("r0", 1), proc("s2", 1), proc("s3", 1), proc("new", 2)};
  MatchPlan plan = plan_matches(procs, {d}, rows);
  ASSERT_EQ(plan.promotions.size(), 1u);
  EXPECT_EQ(plan.promotions[0].deployment, "d");
  EXPECT_EQ(plan.promotions[0].replica_index, 1);
  EXPECT_EQ(plan.promotions[0].spare_index, 3);  // the Ready spare, not the loading one
  ASSERT_EQ(plan.assignments.size(), 1u);
  EXPECT_EQ(plan.assignments[0].index, 3);  // the spare row is the one re-matched
  EXPECT_EQ(plan.assignments[0].processor_id, "new");

  // No Ready spare: the replica row itself is re-matched.
  rows[3].state = ReplicaState::Downloading;
  plan = plan_matches(procs, {d}, rows);
  EXPECT_TRUE(plan.promotions.empty());
  ASSERT_EQ(plan.assignments.size(), 1u);
  EXPECT_EQ(plan.assignments[0].index, 1);
}

TEST(PlanMatches, PromotionWithoutAnyFreeProcessor) {
  Deployment d = dep("d", 1, 1);
  std::vector<Replica> rows = {held("d", 0, "", ReplicaState::Unmatched), held("d", 1, "s", ReplicaState::Ready)};
  MatchPlan plan = plan_matches({proc("s", 1)}, {d}, rows);
  ASSERT_EQ(plan.promotions.size(), 1u);
  EXPECT_EQ(plan.promotions[0].replica_index, 0);
  EXPECT_EQ(plan.promotions[0].spare_index, 1);
  EXPECT_TRUE(plan.assignments.empty());
}

TEST(PlanMatches, NonFiniteAskIsNeverOffered) {
  Deployment d = dep("d", 2);
  MatchPlan plan = plan_matches({proc("nan", std::nan("")), proc("ok", 1)}, {d}, rows_of(d));
  ASSERT_EQ(plan.assignments.size(), 1u);
  EXPECT_EQ(plan.assignments[0].processor_id, "ok");
}

TEST(PlanMatches, IsDeterministic) {
  std::vector<Processor> procs;
  for (int i = 0; i < 20; ++i) procs.push_back(proc("p" + std::to_string(19 - i), (i * 7) % 5, 16, i % 3));
  Deployment a = dep("a", 3, 1, 5, 1), b = dep("b", 4, 0, 3, 2);
  std::vector<Replica> rows = rows_of(a);
  for (const Replica& r : rows_of(b)) rows.push_back(r);
  MatchPlan first = plan_matches(procs, {a, b}, rows);
  std::reverse(procs.begin(), procs.end());
  std::reverse(rows.begin(), rows.end());
  MatchPlan second = plan_matches(procs, {b, a}, rows);
  ASSERT_EQ(first.assignments.size(), second.assignments.size());
  for (size_t i = 0; i < first.assignments.size(); ++i) {
    EXPECT_EQ(first.assignments[i].deployment, second.assignments[i].deployment);
    EXPECT_EQ(first.assignments[i].index, second.assignments[i].index);
    EXPECT_EQ(first.assignments[i].processor_id, second.assignments[i].processor_id);
  }
}

TEST(RunsEngine, SimulatedOnlyWithSimulated) {
  Processor real = proc("r", 1);
  Processor sim = proc("s", 1);
  sim.simulated = true;
  EngineSettings normal;
  EngineSettings simulated;
  simulated.simulated = true;
  std::string why;
  EXPECT_TRUE(runs_engine(real, normal));
  EXPECT_TRUE(runs_engine(sim, simulated));
  EXPECT_FALSE(runs_engine(sim, normal, &why));
  EXPECT_EQ(why, "simulated processor; the deployment is not simulated");
  EXPECT_FALSE(runs_engine(real, simulated, &why));
  EXPECT_EQ(why, "the deployment is simulated; the processor is not");
}

TEST(PlanMatches, SimulatedProcessorsServeOnlySimulatedDeployments) {
  // The simulated processors are the cheapest: a real deployment must still not take them.
  std::vector<Processor> procs = {proc("real1", 2), proc("real2", 3), proc("sim1", 0), proc("sim2", 0)};
  procs[2].simulated = procs[3].simulated = true;
  Deployment real = dep("real", 2, 0, 5, 1);
  Deployment sim = dep("sim", 2, 0, 5, 2);
  sim.spec.engine.simulated = true;
  std::vector<Replica> rows = rows_of(real);
  for (const Replica& r : rows_of(sim)) rows.push_back(r);
  const MatchPlan plan = plan_matches(procs, {real, sim}, rows);
  ASSERT_EQ(plan.assignments.size(), 4u);
  for (const Assignment& a : plan.assignments) {
    EXPECT_EQ(a.processor_id.starts_with("sim"), a.deployment == "sim") << a.deployment << " -> " << a.processor_id;
  }
  // With no simulated processor, a simulated deployment waits.
  const MatchPlan none = plan_matches({proc("real1", 2)}, {sim}, rows_of(sim));
  EXPECT_TRUE(none.assignments.empty());
}

TEST(Market, CountsSimulatedProcessorsOnlyWhenAsked) {
  std::vector<Processor> procs = {proc("real", 2), proc("sim", 1)};
  procs[1].simulated = true;
  MarketQuery q;
  EXPECT_EQ(market(procs, {}, q).eligible, 1);
  EXPECT_EQ(market(procs, {}, q).average_ask, 2);
  q.simulated = true;
  EXPECT_EQ(market(procs, {}, q).eligible, 1);
  EXPECT_EQ(market(procs, {}, q).average_ask, 1);
}

TEST(Market, Figures) {
  std::vector<Processor> procs = {proc("small", 0.5, 8), proc("a", 1.0), proc("b", 2.0), proc("c", 3.0),
                                  proc("off", 0.1)};
  procs[4].online = false;
  std::vector<Replica> rows = {held("d", 0, "b", ReplicaState::Ready), held("d", 1, "c", ReplicaState::Offline)};
  MarketQuery q;
  q.requirements.min_ram_bytes = 12 * kGiB;
  q.replicas = 2;
  MarketFigures f = market(procs, rows, q);
  EXPECT_EQ(f.eligible, 4);              // a, b, c, off
  EXPECT_EQ(f.available, 2);             // a, c (b serves; off is offline)
  EXPECT_DOUBLE_EQ(f.average_ask, 2.0);  // a, b, c
  ASSERT_TRUE(f.price_for_replicas.has_value());
  EXPECT_EQ(*f.price_for_replicas, 3.0);

  q.replicas = 1;
  EXPECT_EQ(*market(procs, rows, q).price_for_replicas, 1.0);
  q.replicas = 3;
  EXPECT_FALSE(market(procs, rows, q).price_for_replicas.has_value());

  q.requirements.arch = "riscv64";
  f = market(procs, rows, q);
  EXPECT_EQ(f.eligible, 0);
  EXPECT_EQ(f.available, 0);
  EXPECT_EQ(f.average_ask, 0);
  EXPECT_FALSE(f.price_for_replicas.has_value());
}

TEST(MeetsNow, FollowsTheDevicesLastStatusPoll) {
  Requirements r;
  Processor p = proc("a", 1);
  std::string why;
  EXPECT_TRUE(meets_now(p, r, &why)) << "no live requirement, nothing reported";

  r.charging_only = true;
  EXPECT_FALSE(meets_now(p, r, &why)) << "charging_only wants a device known to be plugged in";
  EXPECT_EQ(why, "charging unknown (the device shows no power supply)");
  p.device.charging = false;
  EXPECT_FALSE(meets_now(p, r, &why));
  EXPECT_EQ(why, "not charging");
  p.device.charging = true;
  EXPECT_TRUE(meets_now(p, r));
  r.charging_only = false;

  r.min_battery = 30;
  p.device.battery_percent = 15;
  EXPECT_TRUE(meets_now(p, r)) << "charging: the battery level does not matter";
  p.device.charging = false;
  EXPECT_FALSE(meets_now(p, r, &why));
  EXPECT_EQ(why, "battery 15% < 30%");
  p.device.battery_percent = 30;
  EXPECT_TRUE(meets_now(p, r));

  r.max_temperature_c = 42;
  p.device.battery_temp_c = 38;
  p.device.max_thermal_c = 49.1;
  EXPECT_FALSE(meets_now(p, r, &why)) << "the hottest reading counts";
  EXPECT_EQ(why, "temperature 49.1 °C > 42.0 °C");
  p.device.max_thermal_c.reset();
  EXPECT_TRUE(meets_now(p, r));

  p.device.paused = "battery 15% and not charging (below --min-battery 20%)";
  EXPECT_FALSE(meets_now(p, Requirements{}, &why)) << "a paused device takes no replica of any deployment";
  EXPECT_EQ(why, "paused: battery 15% and not charging (below --min-battery 20%)");
}

TEST(PlanMatches, PlacesAChargingOnlyDeploymentOnTheChargingPhone) {
  std::vector<Processor> procs = {proc("cheap", 1), proc("dear", 2)};
  procs[0].device.charging = false;
  procs[0].device.battery_percent = 80;
  procs[1].device.charging = true;
  Deployment d = dep("risk", 1);
  d.spec.requirements.charging_only = true;
  MatchPlan plan = plan_matches(procs, {d}, rows_of(d), {});
  ASSERT_EQ(plan.assignments.size(), 1u);
  EXPECT_EQ(plan.assignments[0].processor_id, "dear") << "the cheaper phone runs on battery";
  procs[0].device.charging = true;
  plan = plan_matches(procs, {d}, rows_of(d), {});
  ASSERT_EQ(plan.assignments.size(), 1u);
  EXPECT_EQ(plan.assignments[0].processor_id, "cheap") << "plugged in, the cheaper phone wins again";
}

}  // namespace
}  // namespace cellserve::fleet
