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

// A hub's queue at one deployment's endpoint: the requests waiting there for a replica, and the
// longest wait. The leader's autoscaler adds the other hubs' queues to its own (autoscaler.h).
struct QueueLoad {
  std::string deployment;
  int waiting = 0;         // 1..kMaxQueueWaiting (a queue with none waiting is not sent)
  int64_t longest_ms = 0;  // 0..kMaxQueueWaitMs

  bool operator==(const QueueLoad&) const = default;
};
inline constexpr size_t kMaxQueueLoads = 4096;
inline constexpr int kMaxQueueWaiting = 100000;  // a deployment's queue_max at most
inline constexpr int64_t kMaxQueueWaitMs = 86400LL * 1000;

// Bounds on what a peer may send: entries per message, and slots per replica.
inline constexpr size_t kMaxReplicaLoads = 8192;
inline constexpr int kMaxLoadSlots = 1024;
inline constexpr int kMaxLoadPrefillTokens = 1 << 30;

// {"loads":[{"deployment":..,"index":..,"processor":..,"slots":..,"busy":..,"prefill_done":..,
// "prefill_total":..},...],"queues":[{"deployment":..,"waiting":..,"longest_ms":..},...]} (the
// prefill fields and "queues" may be absent: 0 and none; older hubs send neither and ignore them)
std::string replica_loads_json(const std::vector<ReplicaLoad>& loads, const std::vector<QueueLoad>& queues = {});
// The message's entries; InvalidArgument for a body that is not one (bad JSON, a field of the
// wrong type or out of its bounds, too many entries). Nothing partial is returned.
Result<std::vector<ReplicaLoad>> replica_loads_from_json(std::string_view body);
// The message's "queues" (none when absent); InvalidArgument as above.
Result<std::vector<QueueLoad>> queue_loads_from_json(std::string_view body);
// Both, from one parse of the body (what a hub does with each message it takes).
struct HubLoadMessage {
  std::vector<ReplicaLoad> loads;
  std::vector<QueueLoad> queues;
};
Result<HubLoadMessage> hub_load_from_json(std::string_view body);

}  // namespace cellserve::fleet
