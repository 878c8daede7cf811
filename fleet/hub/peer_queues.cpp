#include "fleet/hub/peer_queues.h"

#include <algorithm>

namespace cellserve::fleet {

void PeerQueues::put(const std::string& hub_id, std::vector<QueueLoad> queues) {
  std::lock_guard lock(mu_);
  by_hub_[hub_id] = {clock_.now(), std::move(queues)};
}

std::map<std::string, PeerQueues::Total> PeerQueues::totals(std::chrono::milliseconds max_age) {
  const Clock::time_point now = clock_.now();
  std::lock_guard lock(mu_);
  std::erase_if(by_hub_, [&](const auto& e) { return now - e.second.at > max_age; });
  std::map<std::string, Total> out;
  for (const auto& [hub, report] : by_hub_) {
    for (const QueueLoad& q : report.queues) {
      Total& t = out[q.deployment];
      t.waiting = std::min(t.waiting + q.waiting, kMaxQueueWaiting * 64);  // a bound, whatever the peers say
      t.longest_s = std::max(t.longest_s, static_cast<double>(q.longest_ms) / 1000.0);
    }
  }
  return out;
}

}  // namespace cellserve::fleet
