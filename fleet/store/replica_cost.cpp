#include "fleet/store/replica_cost.h"

#include <algorithm>

namespace cellserve::fleet {

double open_interval_cost(const Replica& r, int64_t now_ms) {
  if (r.state != ReplicaState::Ready || r.ready_since_ms <= 0) return 0;
  int64_t served = std::max<int64_t>(0, now_ms - r.ready_since_ms);
  return r.price_per_day * static_cast<double>(served) / static_cast<double>(kMsPerDay);
}

void carry_cost(const Replica& prev, Replica& next, int64_t now_ms) {
  next.cost = prev.cost;
  next.ready_since_ms = 0;
  bool open = prev.state == ReplicaState::Ready;
  if (open && (next.state != ReplicaState::Ready || next.processor_id != prev.processor_id ||
               next.price_per_day != prev.price_per_day)) {
    next.cost += open_interval_cost(prev, now_ms);
    open = false;
  }
  if (next.state == ReplicaState::Ready) next.ready_since_ms = open ? prev.ready_since_ms : now_ms;
}

}  // namespace cellserve::fleet
