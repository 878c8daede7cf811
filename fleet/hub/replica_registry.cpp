#include "fleet/hub/replica_registry.h"

namespace cellserve::fleet {

void ReplicaRegistry::refresh(const std::vector<Deployment>& deployments, const std::vector<Replica>& rows) {
  std::map<std::string, DeploymentEntry> next_deployments;
  for (const Deployment& d : deployments) next_deployments[d.spec.name] = DeploymentEntry{d.spec.replicas};
  std::lock_guard lock(mu_);
  std::map<Key, Entry> next;
  for (const Replica& r : rows) {
    const auto dep = next_deployments.find(r.deployment);
    if (dep == next_deployments.end()) continue;
    Key key{r.deployment, r.index};
    Entry e;
    const auto old = replicas_.find(key);
    e.in_flight = old != replicas_.end() ? old->second.in_flight : std::make_shared<std::atomic<int>>(0);
    e.view.deployment = r.deployment;
    e.view.index = r.index;
    e.view.spare = r.index >= dep->second.replicas;
    e.view.state = r.state;
    e.view.progress = r.progress;
    e.view.processor_id = r.processor_id;
    e.view.prefill_tps = r.prefill_tps;
    e.view.decode_tps = r.decode_tps;
    next.emplace(std::move(key), std::move(e));
  }
  replicas_.swap(next);
  deployments_.swap(next_deployments);
}

ReplicaRegistry::Lookup ReplicaRegistry::find(const std::string& deployment, int index) const {
  std::lock_guard lock(mu_);
  Lookup out;
  const auto dep = deployments_.find(deployment);
  if (dep == deployments_.end()) return out;
  out.replicas = dep->second.replicas;
  const auto it = replicas_.find(Key{deployment, index});
  if (index >= dep->second.replicas || it == replicas_.end()) {
    out.kind = Lookup::Kind::NoSuchReplica;
    return out;
  }
  out.kind = Lookup::Kind::Found;
  out.replica = it->second.view;
  out.replica.in_flight = it->second.in_flight->load();
  return out;
}

std::vector<ReplicaView> ReplicaRegistry::replicas(const std::string& deployment) const {
  std::lock_guard lock(mu_);
  std::vector<ReplicaView> out;
  for (const auto& [key, e] : replicas_) {
    if (!deployment.empty() && key.first != deployment) continue;
    out.push_back(e.view);
    out.back().in_flight = e.in_flight->load();
  }
  return out;
}

ReplicaRegistry::InFlight ReplicaRegistry::begin_request(const std::string& deployment, int index) {
  std::lock_guard lock(mu_);
  const auto it = replicas_.find(Key{deployment, index});
  if (it == replicas_.end()) return InFlight();
  return InFlight(it->second.in_flight);
}

}  // namespace cellserve::fleet
