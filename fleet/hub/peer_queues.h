// The queues the other hubs of a cluster reported (queue sharing, hub_peers.h), for the leading
// hub's autoscaler (autoscaler.h), which adds them to its own endpoint's: each hub's latest
// report, counted while it is fresh. Thread-safe.
#pragma once

#include <chrono>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "base/clock.h"
#include "fleet/hub/replica_loads.h"

namespace cellserve::fleet {

class PeerQueues {
 public:
  explicit PeerQueues(const Clock& clock) : clock_(clock) {}

  // Hub `hub_id`'s queues now (an empty list: none waiting there), replacing its last report.
  void put(const std::string& hub_id, std::vector<QueueLoad> queues);

  // By deployment, the queues of the reports no older than `max_age`: the requests waiting at
  // those hubs together, and the longest wait among them. Older reports are forgotten.
  struct Total {
    int waiting = 0;
    double longest_s = 0;
  };
  std::map<std::string, Total> totals(std::chrono::milliseconds max_age);

 private:
  struct Report {
    Clock::time_point at;
    std::vector<QueueLoad> queues;
  };
  const Clock& clock_;
  std::mutex mu_;
  std::map<std::string, Report> by_hub_;  // one per hub with an authenticated link
};

}  // namespace cellserve::fleet
