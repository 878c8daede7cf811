// The reconcile loop: once per poll interval, or sooner when something changed, it marks agents
// whose tunnel closed offline, matches unserved replicas to processors (fleet/matcher),
// promotes spares, and hands each agent link its desired assignments (pushed by its heartbeat).
#include <boost/json.hpp>

#include "fleet/hub/hub_impl.h"
#include "fleet/matcher/matcher.h"
#include "fleet/spec/agent_protocol.h"

namespace cellserve::fleet {
namespace {

namespace json = boost::json;

}  // namespace

void Hub::Impl::reconcile_loop() {
  std::unique_lock lock(mu);
  while (!stopping) {
    lock.unlock();
    reconcile_once();
    lock.lock();
    wake.wait_for(lock, options.poll_interval, [&] { return stopping || wake_requested; });
    wake_requested = false;
  }
}

void Hub::Impl::remove_drained_rows(const std::vector<Deployment>& deployments, int64_t now) {
  bool removed = false;
  for (const Deployment& d : deployments) {
    const int total = d.spec.replicas + d.spec.spares;
    for (const ReplicaView& r : registry.replicas(d.spec.name)) {
      if (r.index < total || !r.draining || r.in_flight > 0) continue;
      if (store->remove_replica(d.spec.name, r.index, now).ok()) {
        log("replica " + d.spec.name + "/" + std::to_string(r.index) + " removed (scaled down, drained)");
        removed = true;
      }
    }
  }
  if (removed) refresh_registry();
}

void Hub::Impl::reconcile_once() {
  const int64_t now = now_ms();
  // 1. Tunnels that closed: their processors are offline, their replicas need new homes. The
  // links are dropped outside state_mu: a link's destructor joins its heartbeat, which takes it.
  std::vector<std::shared_ptr<AgentLink>> closed;
  for (auto& link : links.all()) {
    if (link->tunnel->closed()) {
      links.remove(link);
      closed.push_back(std::move(link));
    }
  }
  std::unique_lock lock(state_mu);
  for (const auto& link : closed) {
    (void)store->mark_processor_offline(link->processor_id, now);
    log("agent " + link->processor_id.substr(0, 16) + " offline: " + link->tunnel->close_reason());
  }
  // Processors the store thinks online without a tunnel (a hub restart) are offline.
  auto processors = store->processors();
  if (!processors.ok()) return log("store: " + processors.status().message());
  for (const Processor& p : *processors) {
    if (p.online && !links.find(p.id)) (void)store->mark_processor_offline(p.id, now);
  }

  // 2. Matching, on the states the heartbeats have written, after removing what a scale-down
  // finished draining.
  processors = store->processors();
  auto deployments = store->deployments();
  if (!processors.ok() || !deployments.ok()) return;
  remove_drained_rows(*deployments, now);
  auto rows = store->replicas("");
  if (!rows.ok()) return;
  const MatchPlan plan = plan_matches(*processors, *deployments, *rows, refused_homes);
  auto find_row = [&](const std::string& dep, int index) -> Replica* {
    for (Replica& r : *rows) {
      if (r.deployment == dep && r.index == index) return &r;
    }
    return nullptr;
  };
  for (const Promotion& pr : plan.promotions) {
    Replica* replica = find_row(pr.deployment, pr.replica_index);
    Replica* spare = find_row(pr.deployment, pr.spare_index);
    if (replica == nullptr || spare == nullptr) continue;
    // The spare's processor now serves the replica's address; the replica's old home becomes
    // the spare row, to be re-matched.
    Replica promoted = *spare;
    promoted.index = replica->index;
    Replica demoted = *replica;
    demoted.index = spare->index;
    demoted.state = ReplicaState::Unmatched;
    demoted.processor_id.clear();
    (void)store->update_replica(demoted, now);
    (void)store->update_replica(promoted, now);
    log("replica " + pr.deployment + "/" + std::to_string(pr.replica_index) + ": spare " +
        std::to_string(pr.spare_index) + " promoted");
  }
  for (const Assignment& a : plan.assignments) {
    Replica* r = find_row(a.deployment, a.index);
    if (r == nullptr) continue;
    Replica next = *r;
    next.processor_id = a.processor_id;
    next.price_per_day = a.price_per_day;
    next.state = ReplicaState::Matched;
    next.progress = 0;
    next.detail.clear();
    next.prefill_tps = next.decode_tps = 0;
    next.matched_ms = now;
    (void)store->update_replica(next, now);
    log("replica " + a.deployment + "/" + std::to_string(a.index) + " matched to " + a.processor_id.substr(0, 16) +
        " at " + std::to_string(a.price_per_day) + "/day");
  }
  refresh_registry();

  // 3. Each agent's full desired set; its heartbeat pushes it when it changed.
  rows = store->replicas("");
  if (!rows.ok()) return;
  std::map<std::string, const DeploymentSpec*> specs;
  for (const Deployment& d : *deployments) specs[d.spec.name] = &d.spec;
  std::map<std::string, std::vector<AssignmentMessage>> wanted;
  for (const Replica& r : *rows) {
    if (r.processor_id.empty() || r.state == ReplicaState::Offline) continue;
    const auto spec = specs.find(r.deployment);
    if (spec == specs.end()) continue;
    wanted[r.processor_id].push_back(
        {r.deployment, r.index, spec->second->model_url, spec->second->model_sha256, spec->second->engine});
  }
  lock.unlock();
  for (const auto& link : links.all()) {
    link->want_assignments(json::serialize(to_json(wanted[link->processor_id])));
  }
}

}  // namespace cellserve::fleet
