// decide_scaling (fleet/matcher/autoscale.h): the floor, the queue, the batch deadline, the
// budget, the free devices and the cool-down, each on plain figures.
#include "fleet/matcher/autoscale.h"

#include <gtest/gtest.h>

namespace cellserve::fleet {
namespace {

constexpr int64_t kNow = 1'796'601'600'000;  // 2026-12-07 00:00 UTC

DeploymentSpec scaled(int min, int max) {
  DeploymentSpec spec;
  spec.name = "risk";
  spec.max_price_per_day = 2;
  spec.autoscale.min_replicas = min;
  spec.autoscale.max_replicas = max;
  spec.autoscale.target_wait_s = 10;
  spec.autoscale.cooldown_s = 300;
  return spec;
}

ScalingSignals at(int replicas) {
  ScalingSignals s;
  s.now_ms = kNow;
  s.replicas = replicas;
  s.free_devices = 10;
  s.free_asks = std::vector<double>(10, 1.0);
  return s;
}

TEST(DecideScaling, NothingWithoutAutoscalingOrWithoutASignal) {
  DeploymentSpec fixed;
  fixed.replicas = 3;
  EXPECT_EQ(decide_scaling(fixed, at(3)).action, "");
  EXPECT_EQ(decide_scaling(scaled(1, 5), at(2)).action, "");
}

TEST(DecideScaling, AQueueThatWaitsPastTheTargetAddsOneReplicaAtATime) {
  ScalingSignals s = at(2);
  s.waiting = 7;
  s.queue_wait_s = 12.5;
  const ScalingDecision d = decide_scaling(scaled(1, 5), s);
  EXPECT_EQ(d.action, "scale_up");
  EXPECT_EQ(d.to_replicas, 3);
  EXPECT_EQ(d.reason, "queue wait 12.5 s > target_wait_s 10.0 (7 waiting)");
  s.coming_up = 1;  // the last one added is still loading: wait for it
  EXPECT_EQ(decide_scaling(scaled(1, 5), s).action, "");
  s.coming_up = 0;
  s.queue_wait_s = 9.9;
  EXPECT_EQ(decide_scaling(scaled(1, 5), s).action, "");
}

TEST(DecideScaling, MaxReplicasTheBudgetAndFreeDevicesHoldARise) {
  ScalingSignals s = at(5);
  s.waiting = 1;
  s.queue_wait_s = 30;
  ScalingDecision d = decide_scaling(scaled(1, 5), s);
  EXPECT_EQ(d.action, "held");
  EXPECT_EQ(d.limit, "max_replicas");
  EXPECT_EQ(d.to_replicas, 5);

  DeploymentSpec budget = scaled(1, 20);
  budget.autoscale.max_total_price_per_day = 6;
  s.committed_price_per_day = 5;  // 5 rows at 1/day: room for one more at the cheapest ask of 1
  d = decide_scaling(budget, s);
  EXPECT_EQ(d.action, "scale_up");
  EXPECT_EQ(d.to_replicas, 6);
  s.replicas = 6;
  s.committed_price_per_day = 6;
  d = decide_scaling(budget, s);
  EXPECT_EQ(d.action, "held");
  EXPECT_EQ(d.limit, "budget");
  EXPECT_NE(d.reason.find("max_total_price_per_day 6"), std::string::npos) << d.reason;

  s.free_devices = 0;
  s.free_asks.clear();
  d = decide_scaling(scaled(1, 20), s);
  EXPECT_EQ(d.action, "held");
  EXPECT_EQ(d.limit, "devices");
}

TEST(DecideScaling, TheBudgetCountsEachFreeDevicesAskCheapestFirst) {
  DeploymentSpec budget = scaled(1, 50);
  budget.autoscale.max_total_price_per_day = 5;
  ScalingSignals s = at(2);
  s.committed_price_per_day = 1;
  s.free_asks = {0.1, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5};
  s.free_devices = 10;
  s.batch_id = "b";
  s.batch_lines_left = 100000;
  s.batch_deadline_ms = kNow + 60'000;
  s.lines_per_replica_s = 0.01;
  // 4 left: 0.1 and seven at 0.5 fit (3.6), the eighth does not.
  ScalingDecision d = decide_scaling(budget, s);
  EXPECT_EQ(d.to_replicas, 10);
  EXPECT_EQ(d.limit, "budget");
  // A device that asks next to nothing neither breaks the sum nor lifts the cap past the devices.
  s.free_asks = {1e-12, 1e-12, 1e-12};
  s.free_devices = 3;
  d = decide_scaling(budget, s);
  EXPECT_EQ(d.to_replicas, 5);
  EXPECT_EQ(d.limit, "devices");
}

TEST(DecideScaling, ABatchNeverGetsMoreNewReplicasThanLinesLeft) {
  ScalingSignals s = at(2);
  s.batch_id = "b";
  s.batch_lines_left = 3;
  s.batch_deadline_ms = kNow + 5'000;
  s.lines_per_replica_s = 1.0 / 60;
  EXPECT_EQ(decide_scaling(scaled(1, 50), s).to_replicas, 5);
  s.batch_deadline_ms = kNow - 1;  // late, with three lines left
  EXPECT_EQ(decide_scaling(scaled(1, 50), s).to_replicas, 5);
}

TEST(DecideScaling, TheFloorRisesWithoutFreeDevicesAndAScheduleWindowRaisesIt) {
  ScalingSignals s = at(1);
  s.free_devices = 0;
  s.free_asks.clear();
  s.schedule_replicas = 50;  // above max_replicas: max it is
  s.schedule_window = "schedule '0 1 * * *' until 05:00 UTC";
  const ScalingDecision d = decide_scaling(scaled(1, 30), s);
  EXPECT_EQ(d.action, "scale_up");
  EXPECT_EQ(d.to_replicas, 30);
  EXPECT_EQ(d.reason, "schedule '0 1 * * *' until 05:00 UTC asks for 30 replicas");
  // A floor that the budget cannot pay for rises as far as it can.
  DeploymentSpec budget = scaled(1, 30);
  budget.autoscale.max_total_price_per_day = 10;  // 2/day each, with no free ask known
  s.committed_price_per_day = 2;
  const ScalingDecision capped = decide_scaling(budget, s);
  EXPECT_EQ(capped.to_replicas, 5);
  EXPECT_EQ(capped.limit, "budget");
}

TEST(DecideScaling, ABatchBacklogGetsTheReplicasItsDeadlineNeeds) {
  ScalingSignals s = at(2);
  s.batch_id = "batch_1";
  s.batch_lines_left = 9000;
  s.batch_deadline_ms = kNow + 3600'000;  // an hour left
  s.lines_per_replica_s = 0.25;           // 900 lines an hour per replica: 10 needed, 12 with the margin
  ScalingDecision d = decide_scaling(scaled(1, 50), s);
  EXPECT_EQ(d.action, "scale_up");
  EXPECT_EQ(d.to_replicas, 12);
  EXPECT_EQ(d.reason,
            "batch batch_1: 9000 lines left would end about 05:00 UTC at 2 replicas, after its deadline 01:00 UTC; it "
            "needs 12");
  // Unknown rate: nothing yet, and no fall either while lines are left.
  s.lines_per_replica_s = 0;
  s.replicas = 4;
  s.idle_replicas = 4;
  EXPECT_EQ(decide_scaling(scaled(1, 50), s).action, "");
  // Past its deadline: as many as it may have.
  s.lines_per_replica_s = 0.25;
  s.batch_deadline_ms = kNow - 1;
  d = decide_scaling(scaled(1, 50), s);
  EXPECT_EQ(d.to_replicas, 14);  // 4 now + the 10 free devices
  EXPECT_EQ(d.limit, "devices");
}

TEST(DecideScaling, IdleReplicasGoAfterTheCoolDownNeverBelowTheFloorNorWhileRequestsWait) {
  ScalingSignals s = at(5);
  s.idle_replicas = 3;
  s.last_scale_up_ms = kNow - 299'000;
  EXPECT_EQ(decide_scaling(scaled(1, 8), s).action, "") << "a rise less than cooldown_s ago";
  s.last_scale_up_ms = kNow - 300'000;
  ScalingDecision d = decide_scaling(scaled(1, 8), s);
  EXPECT_EQ(d.action, "scale_down");
  EXPECT_EQ(d.to_replicas, 2);
  EXPECT_EQ(d.reason, "3 replica(s) idle for cooldown_s 300.0 s");
  EXPECT_EQ(decide_scaling(scaled(4, 8), s).to_replicas, 4);
  s.waiting = 1;
  EXPECT_EQ(decide_scaling(scaled(1, 8), s).action, "");
  s.waiting = 0;
  s.replicas = 9;  // max_replicas lowered below the count
  EXPECT_EQ(decide_scaling(scaled(1, 8), s).to_replicas, 8);
}

TEST(ScalingTimeText, NamesTheDayOnlyWhenItIsAnother) {
  EXPECT_EQ(scaling_time_text(kNow + 5 * 3600'000, kNow), "05:00 UTC");
  EXPECT_EQ(scaling_time_text(kNow + 25 * 3600'000, kNow), "Dec 08 01:00 UTC");
}

}  // namespace
}  // namespace cellserve::fleet
