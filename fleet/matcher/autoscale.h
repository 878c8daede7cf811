// The autoscaler's decision (docs/autoscale.md): how many replicas a deployment should have now,
// from what the hub sees of it, and why. A pure function over plain figures, like the matcher:
// no I/O, no clock. fleet/hub/autoscaler.h gathers the figures and applies the decision.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "fleet/store/records.h"

namespace cellserve::fleet {

// What the hub sees of one autoscaled deployment at one moment.
struct ScalingSignals {
  int64_t now_ms = 0;
  int replicas = 0;   // the count it has now (spec.replicas)
  int coming_up = 0;  // of those, rows not Ready yet (unmatched, or on their way: matched .. tuning)
  // The queue at the deployment endpoint: requests waiting for a replica, and the longest wait.
  int waiting = 0;
  double queue_wait_s = 0;
  // The batches in progress: lines not ended, the earliest deadline of a batch with lines left
  // (0: none) and what it is named by, and the lines one replica ends per second (measured over
  // the last minute; 0: not known yet).
  int64_t batch_lines_left = 0;
  int64_t batch_deadline_ms = 0;
  std::string batch_id;
  double lines_per_replica_s = 0;
  // Ready replicas that have had nothing in flight for cooldown_s or longer, and when the count
  // last went up (0: never seen).
  int idle_replicas = 0;
  int64_t last_scale_up_ms = 0;
  // The prices per day of the rows it has (each matched row's, max_price_per_day for the rest),
  // and of the devices that could take a new row now: how many, and the cheapest one's ask.
  double committed_price_per_day = 0;
  int free_devices = 0;
  std::vector<double> free_asks;  // those devices' asks, cheapest first (free_devices of them)
  // The most replicas an active [[schedule]] window asks for (0: none active), and that window
  // in words ("schedule '0 1 * * *' until 05:00 UTC").
  int schedule_replicas = 0;
  std::string schedule_window;
};

struct ScalingDecision {
  // "" (nothing to do), "scale_up", "scale_down", or "held" (more were wanted and max_replicas,
  // the budget or the free devices stopped it).
  std::string action;
  int to_replicas = 0;
  std::string reason;
  // What stopped a rise ("max_replicas", "budget", "devices"; "" when nothing did): the hub
  // records a held decision once per stretch of rounds with the same limit.
  std::string limit;
};

// The decision for `spec` (autoscaled: spec.autoscale.enabled()) given `s`. Rules:
// - never below the floor (min_replicas, or an active schedule window's replicas), never above
//   max_replicas, and a rise only as far as max_total_price_per_day pays for (the new replicas at
//   the free devices' asks, cheapest first; without free devices, at max_price_per_day);
// - up by one when the queue's wait passes target_wait_s and no row is still coming up, and only
//   onto a free device;
// - up to what the batch backlog needs to end by its deadline (with a 10 % margin) once its rate
//   is known and no row is still coming up, onto free devices; never more new replicas than
//   lines left;
// - down, when nothing waits and the batches do not need them, by the replicas idle for
//   cooldown_s, once cooldown_s has passed since the last rise; the hub drains them first.
ScalingDecision decide_scaling(const DeploymentSpec& spec, const ScalingSignals& s);

// "05:00 UTC" (or "Dec 8 05:00 UTC" when not on `now_ms`'s day): how events name a time.
std::string scaling_time_text(int64_t at_ms, int64_t now_ms);

}  // namespace cellserve::fleet
