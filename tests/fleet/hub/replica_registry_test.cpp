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

TEST(ReplicaRegistry, AgentReportsCountLessTheHubsRequestsThatEndedSince) {
  ReplicaRegistry reg;
  fill(reg, 1, 2);
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

}  // namespace
}  // namespace cellserve::fleet
