#include "fleet/hub/cluster_load.h"

#include <algorithm>

#include "fleet/spec/replica_address.h"

namespace cellserve::fleet {
namespace {

class CountedRelay final : public ReplicaTransport {
 public:
  CountedRelay(HubState& state, std::shared_ptr<ReplicaTransport> agent) : state_(state), agent_(std::move(agent)) {}

  Status forward(const net::HttpRequest& request, net::ResponseWriter& out, bool* responded) override {
    ReplicaRegistry::InFlight counted;
    if (const std::optional<ReplicaAddress> a = replica_address_from_path(request.path)) {
      counted = state_.registry.begin_request(a->deployment, a->index);
    }
    return agent_->forward(request, out, responded);
  }

 private:
  HubState& state_;
  std::shared_ptr<ReplicaTransport> agent_;
};

}  // namespace

std::vector<ReplicaLoad> own_replica_loads(HubState& state) {
  std::vector<ReplicaLoad> loads;
  for (const ReplicaView& r : state.registry.replicas("")) {
    if (r.processor_id.empty() || r.state != ReplicaState::Ready || r.slots <= 0) continue;
    const std::shared_ptr<AgentLink> link = state.links.find(r.processor_id);
    if (!link || link->tunnel->closed()) continue;
    const int slots = std::min(r.slots, kMaxLoadSlots);
    // The registry keeps a prefill within the agents' bound (0 <= done <= total <= 2^30).
    static_assert(kMaxLoadPrefillTokens == kMaxReportedPrefillTokens);
    loads.push_back(
        {r.deployment, r.index, r.processor_id, slots, std::clamp(r.busy, 0, slots), r.prefill.done, r.prefill.total});
  }
  return loads;
}

std::vector<QueueLoad> own_queue_loads(ReplicaForwarder& forwarder) {
  std::vector<QueueLoad> out;
  for (const auto& [deployment, q] : forwarder.queue_waits()) {
    if (q.waiting == 0 || out.size() == kMaxQueueLoads) continue;
    // In whole seconds: a wait that grows every tick would otherwise send the message every tick.
    const auto longest_ms = static_cast<int64_t>(q.longest_s) * 1000;
    out.push_back({deployment, static_cast<int>(std::min<size_t>(q.waiting, kMaxQueueWaiting)),
                   std::clamp<int64_t>(longest_ms, 0, kMaxQueueWaitMs)});
  }
  return out;
}

void apply_peer_loads(HubState& state, const std::vector<ReplicaLoad>& loads) {
  for (const ReplicaLoad& l : loads) {
    state.registry.report_load(l.deployment, l.index, l.processor_id, l.slots, l.slots - l.busy,
                               {l.prefill_done, l.prefill_total});
  }
}

std::shared_ptr<ReplicaTransport> counted_relay_transport(HubState& state, std::shared_ptr<ReplicaTransport> agent) {
  if (!agent) return nullptr;
  return std::make_shared<CountedRelay>(state, std::move(agent));
}

}  // namespace cellserve::fleet
