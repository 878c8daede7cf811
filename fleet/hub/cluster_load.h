// This hub's part in sharing replica load with the other hubs of a cluster (replica_loads.h,
// hub_peers.h): what it reports of the replicas whose tunnels it holds, what it takes from the
// others' reports, and the count of the requests they relay through it.
#pragma once

#include <memory>
#include <vector>

#include "fleet/hub/hub_state.h"
#include "fleet/hub/replica_forwarder.h"
#include "fleet/hub/replica_loads.h"
#include "fleet/tunnel/replica_transport.h"

namespace cellserve::fleet {

// The ready replicas served through this hub's own open agent links, with the slots routing
// counts and how many are taken (busy clamped to slots).
std::vector<ReplicaLoad> own_replica_loads(HubState& state);

// This hub's queues with requests waiting (ReplicaForwarder::queue_waits), within the message's
// bounds.
std::vector<QueueLoad> own_queue_loads(ReplicaForwarder& forwarder);

// A peer's report for the replicas whose tunnels it holds: each replaces what this hub knew of
// that replica's load (ReplicaRegistry::report_load, ignored for a replica another processor
// serves now).
void apply_peer_loads(HubState& state, const std::vector<ReplicaLoad>& loads);

// `agent` wrapped so that a request relayed from another hub counts as in flight on its replica
// here, where every request to that replica passes, while it lasts.
std::shared_ptr<ReplicaTransport> counted_relay_transport(HubState& state, std::shared_ptr<ReplicaTransport> agent);

}  // namespace cellserve::fleet
