// The load message hubs send each other (hub_peers.h, kHubLoadPath): for each replica whose
// agent's tunnel the sending hub holds, its slots and how many are taken. Every request to such a
// replica passes through that hub, its own and those relayed from the other hubs, so its count is
// the whole cluster's; the others route with it instead of seeing only their own requests.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace cellserve::fleet {

struct ReplicaLoad {
  std::string deployment;
  int index = 0;
  std::string processor_id;
  int slots = 0;  // 1..kMaxLoadSlots
  int busy = 0;   // 0..slots
  // The prompt tokens its device is reading (its agent's last report): 0..kMaxLoadPrefillTokens.
  int prefill_done = 0;
  int prefill_total = 0;

  bool operator==(const ReplicaLoad&) const = default;
};

// Bounds on what a peer may send: entries per message, and slots per replica.
inline constexpr size_t kMaxReplicaLoads = 8192;
inline constexpr int kMaxLoadSlots = 1024;
inline constexpr int kMaxLoadPrefillTokens = 1 << 30;

// {"loads":[{"deployment":..,"index":..,"processor":..,"slots":..,"busy":..,"prefill_done":..,
// "prefill_total":..},...]} (the prefill fields may be absent: 0)
std::string replica_loads_json(const std::vector<ReplicaLoad>& loads);
// The message's entries; InvalidArgument for a body that is not one (bad JSON, a field of the
// wrong type or out of its bounds, too many entries). Nothing partial is returned.
Result<std::vector<ReplicaLoad>> replica_loads_from_json(std::string_view body);

}  // namespace cellserve::fleet
