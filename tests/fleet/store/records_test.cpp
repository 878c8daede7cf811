#include "fleet/store/records.h"

#include <gtest/gtest.h>

namespace cellserve::fleet {
namespace {

TEST(ReplicaState, NamesRoundTrip) {
  const ReplicaState all[] = {ReplicaState::Unmatched, ReplicaState::Matched, ReplicaState::Downloading,
                              ReplicaState::Loading,   ReplicaState::Tuning,  ReplicaState::Ready,
                              ReplicaState::Failed,    ReplicaState::Offline};
  for (ReplicaState s : all) {
    auto parsed = parse_replica_state(replica_state_name(s));
    ASSERT_TRUE(parsed.has_value()) << replica_state_name(s);
    EXPECT_EQ(*parsed, s);
  }
  EXPECT_STREQ(replica_state_name(ReplicaState::Unmatched), "unmatched");
  EXPECT_STREQ(replica_state_name(ReplicaState::Downloading), "downloading");
  EXPECT_STREQ(replica_state_name(ReplicaState::Ready), "ready");
  EXPECT_FALSE(parse_replica_state("Ready").has_value());
  EXPECT_FALSE(parse_replica_state("").has_value());
}

}  // namespace
}  // namespace cellserve::fleet
