// ScalingEventLog: each deployment's autoscaling decisions (docs/autoscale.md), kept in the store
// so that every hub shows the same history, whichever hub led when it was made. A deployment
// keeps its latest kMaxScalingEventsPerDeployment; they go with it when it is deleted.
// Errors: as Store.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"

namespace cellserve::fleet {

// One decision: what the autoscaler did (or wanted to and could not), and why.
struct ScalingEvent {
  std::string deployment;
  int64_t at_ms = 0;
  // "scale_up", "scale_down", or "held": it wanted more replicas and max_replicas, the budget
  // or the devices available stopped it.
  std::string action;
  int from_replicas = 0;
  int to_replicas = 0;
  std::string reason;  // one line a person reads ("queue wait 12.3 s > target 10 s")
  bool operator==(const ScalingEvent&) const = default;
};

inline constexpr int kMaxScalingEventsPerDeployment = 500;

class ScalingEventLog {
 public:
  virtual ~ScalingEventLog() = default;
  // Appends `e`, dropping its deployment's oldest beyond kMaxScalingEventsPerDeployment, in one
  // transaction. NotFound when the deployment is absent.
  virtual Status add(const ScalingEvent& e) = 0;
  // The latest `limit` events of `deployment`, newest first (equal times: the later added first).
  virtual Result<std::vector<ScalingEvent>> latest(const std::string& deployment, int limit) = 0;
};

}  // namespace cellserve::fleet
