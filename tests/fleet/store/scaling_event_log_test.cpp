// ScalingEventLog (scaling_event_log.h) on both engines: events read back newest first, as
// written, from another connection (another hub); a deployment keeps its latest 500; they go with
// the deployment; an event of a deployment that does not exist is refused.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "fleet/store/scaling_event_log.h"
#include "tests/fleet/store/store_fixture.h"
#include "tests/fleet/store/store_records.h"

namespace cellserve::fleet {
namespace {

class ScalingEventLogTest : public StoreTest {};

INSTANTIATE_TEST_SUITE_P(Engines, ScalingEventLogTest, ::testing::Values(StoreEngine::Sqlite, StoreEngine::Postgres),
                         store_engine_name);

ScalingEvent event(const std::string& deployment, int64_t at_ms, int from, int to) {
  return {deployment, at_ms, to > from ? "scale_up" : "scale_down", from, to, "queue wait 12.5 s > target 10 s"};
}

TEST_P(ScalingEventLogTest, ReadsBackNewestFirstFromAnotherConnection) {
  auto one = reopen();
  auto two = reopen();
  ASSERT_TRUE(one->create_deployment(make_deployment("risk", 1, 0, 1000)).ok());
  ASSERT_TRUE(one->create_deployment(make_deployment("other", 1, 0, 1001)).ok());
  ASSERT_TRUE(one->scaling_events().add(event("risk", 5000, 1, 2)).ok());
  ASSERT_TRUE(two->scaling_events().add(event("risk", 5000, 2, 3)).ok());  // same time: the later first
  ASSERT_TRUE(one->scaling_events().add(event("other", 6000, 1, 4)).ok());
  ScalingEvent held = event("risk", 7000, 3, 3);
  held.action = "held";
  held.reason = "max_replicas 3 reached";
  ASSERT_TRUE(one->scaling_events().add(held).ok());

  auto events = two->scaling_events().latest("risk", 10);
  ASSERT_TRUE(events.ok()) << events.status().to_string();
  ASSERT_EQ(events->size(), 3u);
  EXPECT_EQ((*events)[0], held);
  EXPECT_EQ((*events)[1], event("risk", 5000, 2, 3));
  EXPECT_EQ((*events)[2], event("risk", 5000, 1, 2));
  auto limited = one->scaling_events().latest("risk", 1);
  ASSERT_TRUE(limited.ok());
  ASSERT_EQ(limited->size(), 1u);
  EXPECT_EQ((*limited)[0].action, "held");
}

TEST_P(ScalingEventLogTest, KeepsTheLatestFiveHundredPerDeployment) {
  auto store = reopen();
  ASSERT_TRUE(store->create_deployment(make_deployment("risk", 1, 0, 1000)).ok());
  ASSERT_TRUE(store->create_deployment(make_deployment("other", 1, 0, 1001)).ok());
  ASSERT_TRUE(store->scaling_events().add(event("other", 1, 1, 2)).ok());
  for (int i = 0; i < kMaxScalingEventsPerDeployment + 20; ++i) {
    ASSERT_TRUE(store->scaling_events().add(event("risk", 1000 + i, i, i + 1)).ok()) << i;
  }
  auto events = store->scaling_events().latest("risk", 10000);
  ASSERT_TRUE(events.ok());
  ASSERT_EQ(events->size(), static_cast<size_t>(kMaxScalingEventsPerDeployment));
  EXPECT_EQ(events->front().at_ms, 1000 + kMaxScalingEventsPerDeployment + 19);
  EXPECT_EQ(events->back().at_ms, 1000 + 20);
  auto other = store->scaling_events().latest("other", 10);
  ASSERT_TRUE(other.ok());
  EXPECT_EQ(other->size(), 1u);  // another deployment's trimming leaves it alone
}

TEST_P(ScalingEventLogTest, GoWithTheirDeploymentAndNeedOne) {
  auto store = reopen();
  ASSERT_TRUE(store->create_deployment(make_deployment("risk", 1, 0, 1000)).ok());
  ASSERT_TRUE(store->scaling_events().add(event("risk", 5000, 1, 2)).ok());
  ASSERT_TRUE(store->delete_deployment("risk", 6000).ok());
  EXPECT_EQ(store->scaling_events().add(event("risk", 7000, 1, 2)).code(), StatusCode::NotFound);
  ASSERT_TRUE(store->create_deployment(make_deployment("risk", 1, 0, 8000)).ok());
  auto events = store->scaling_events().latest("risk", 10);
  ASSERT_TRUE(events.ok());
  EXPECT_TRUE(events->empty());  // a deployment created again under the name starts with none
}

}  // namespace
}  // namespace cellserve::fleet
