// The reconcile loop: once per poll interval, or sooner when something changed. Every hub beats
// its heartbeat, marks the agents whose tunnel to it closed offline, refreshes its registry and
// hands each of its own agent links its desired assignments (pushed by its heartbeat). The hub
// holding the reconcile lease (cluster_member.h) alone also marks offline the agents no live hub
// holds, forgets dead hubs, advances rolling updates, matches unserved replicas to processors
// (fleet/matcher) and promotes spares: that work runs once, cluster-wide.
#include <set>

#include <boost/json.hpp>

#include "fleet/attest/attested_seal.h"
#include "fleet/attest/base64.h"
#include "fleet/crypto/identity.h"
#include "fleet/crypto/sha256.h"
#include "fleet/hub/supervisor.h"
#include "fleet/matcher/matcher.h"
#include "fleet/matcher/rollout.h"
#include "fleet/spec/agent_protocol.h"

namespace cellserve::fleet {
namespace {

namespace json = boost::json;

// `inner` (sealed to the device's identity key) sealed again to its attested key: opening needs
// both (docs/attestation.md, "Sealed secrets").
Result<std::string> seal_to_attested(const AttestationPin& pin, const std::string& processor,
                                     const std::string& inner) {
  const std::optional<std::string> spki = attest::base64_decode(pin.key_spki);
  if (!spki) return Status::internal("the pinned attested key does not decode");
  return attest::seal_to_attested_key(*spki, processor, inner);
}

// The row of `rows` at `index`, or null.
Replica* replica_at(std::vector<Replica>& rows, int index) {
  for (Replica& r : rows) {
    if (r.index == index) return &r;
  }
  return nullptr;
}

}  // namespace

void Supervisor::start(HubOrigins origins) {
  origins_ = std::move(origins);
  thread_ = std::thread([this] { reconcile_loop(); });
  if (state_.attestation && state_.attestation->status_feed() != nullptr)
    status_thread_ = std::thread([this] { status_loop(); });
}

void Supervisor::join() {
  if (thread_.joinable()) thread_.join();
  status_wakeup_.stop();
  if (AttestationStatusFeed* feed = state_.attestation ? state_.attestation->status_feed() : nullptr) feed->cancel();
  if (status_thread_.joinable()) status_thread_.join();
}

void Supervisor::reconcile_loop() {
  do {
    reconcile_once();
  } while (state_.reconcile.wait(state_.options.poll_interval));
}

void Supervisor::remove_drained_rows(const std::vector<Deployment>& deployments, int64_t now) {
  bool removed = false;
  for (const Deployment& d : deployments) {
    const int total = d.spec.replicas + d.spec.spares;
    for (const ReplicaView& r : state_.registry.replicas(d.spec.name)) {
      if (r.index < total || !r.draining || r.in_flight > 0) continue;
      if (state_.store->remove_replica(d.spec.name, r.index, now).ok()) {
        state_.log("replica " + d.spec.name + "/" + std::to_string(r.index) +
                   (r.index >= kSurgeIndexBase ? " removed (replaced, drained)" : " removed (scaled down, drained)"));
        removed = true;
      }
    }
  }
  if (removed) state_.refresh_registry();
}

void Supervisor::roll_out(const std::vector<Deployment>& deployments, const std::vector<Processor>& processors,
                          int64_t now) {
  auto all = state_.store->replicas("");
  if (!all.ok()) return;
  std::map<std::string, const Processor*> devices;
  for (const Processor& p : processors) devices[p.id] = &p;
  bool changed = false;
  for (const Deployment& d : deployments) {
    std::vector<Replica> rows;
    for (const Replica& r : *all) {
      if (r.deployment == d.spec.name) rows.push_back(r);
    }
    std::map<int, int> in_flight;
    for (const ReplicaView& v : state_.registry.replicas(d.spec.name)) in_flight[v.index] = v.in_flight;
    const std::vector<RolloutStep> steps =
        plan_rollout(d.spec, rows, in_flight, devices, free_devices(processors, *all, d.spec, state_.refused_homes));
    for (const RolloutStep& step : steps) changed |= apply_rollout_step(d, step, rows, now);
  }
  if (changed) state_.refresh_registry();
}

bool Supervisor::apply_rollout_step(const Deployment& d, const RolloutStep& step, std::vector<Replica>& rows,
                                    int64_t now) {
  const std::string& name = d.spec.name;
  const std::string where = "replica " + name + "/" + std::to_string(step.index);
  Replica* r = replica_at(rows, step.index);
  switch (step.kind) {
    case RolloutStep::Kind::AddSurge: {
      Replica surge;
      surge.deployment = name;
      surge.index = kSurgeIndexBase + step.index;
      surge.serving = serving_of(d.spec);
      if (!state_.store->add_replica(surge).ok()) return false;
      state_.log("rolling update: " + where + ": its replacement loads the new spec on a free device");
      break;
    }
    case RolloutStep::Kind::SwapIn: {
      Replica* surge = replica_at(rows, kSurgeIndexBase + step.index);
      if (r == nullptr || surge == nullptr) return false;
      // The new device takes the address; the old one drains at the surge index and is
      // removed once its requests have finished (remove_drained_rows).
      Replica promoted = *surge;
      promoted.index = step.index;
      Replica retired = *r;
      retired.index = surge->index;
      retired.draining = true;
      retired.reloading = false;
      state_.saved(state_.store->update_replica(promoted, now), replica_context(promoted));
      state_.saved(state_.store->update_replica(retired, now), replica_context(retired));
      state_.log("rolling update: " + where + " now serves the new spec on " + promoted.processor_id.substr(0, 16) +
                 "; the old device drains");
      break;
    }
    case RolloutStep::Kind::DropSurge:
    case RolloutStep::Kind::Drain: {
      if (r == nullptr) return false;
      const bool replacement = step.kind == RolloutStep::Kind::DropSurge;
      (replacement ? r->draining : r->reloading) = true;
      state_.saved(state_.store->update_replica(*r, now), replica_context(*r));
      state_.log("rolling update: " + where +
                 (replacement ? " (a replacement) is not needed any more; it drains"
                              : " drains to reload in place (no free device to surge onto)"));
      break;
    }
    case RolloutStep::Kind::Reload: {
      if (r == nullptr) return false;
      Replica next = *r;
      next.reloading = false;
      const bool same = next.serving == serving_of(d.spec);
      next.serving = serving_of(d.spec);
      if (!step.keep_device) {
        if (next.state != ReplicaState::Offline) {
          next.processor_id.clear();
          next.secrets_version = 0;
          next.state = ReplicaState::Unmatched;
        }
        next.progress = 0;
        next.prefill_tps = next.decode_tps = 0;
        next.detail = "the new spec needs another device";
      } else if (!same) {
        next.state = ReplicaState::Matched;  // its device loads the new serving
        next.progress = 0;
        next.prefill_tps = next.decode_tps = 0;
        next.detail = "reloading for the new spec";
      }
      state_.saved(state_.store->update_replica(next, now), replica_context(next));
      state_.log("rolling update: " + where + (step.keep_device ? " reloads in place" : " moves to another device"));
      break;
    }
  }
  return true;  // every step that did not return above changed a row
}

std::optional<AttestationPin> Supervisor::attested_seal_key(const std::string& processor, const Deployment& d) {
  if (!d.spec.requirements.attested_only) return std::nullopt;
  auto pin = state_.store->attestation_pin(processor);
  if (!pin.ok() || !pin->has_value() || !(*pin)->ecdh || (*pin)->change_approved) return std::nullopt;
  return **pin;
}

const std::string& Supervisor::sealed_for(const std::string& processor, const Deployment& d) {
  SealedSecrets& cached = sealed_secrets_[{processor, d.spec.name}];
  const std::optional<AttestationPin> pin = attested_seal_key(processor, d);
  const std::string attested_key = pin ? pin->key_sha256 : std::string();
  // A failure is kept too (sealed stays ""): it was logged once, and this version cannot open.
  if (cached.version == d.secrets_version && cached.created_ms == d.created_ms && cached.attested_key == attested_key) {
    return cached.sealed;
  }
  cached = {d.created_ms, d.secrets_version, {}, {}, {}, attested_key};
  DeploymentSecrets plain;
  plain.replica_key = state_.replica_key(d.spec.name, d.created_ms);
  plain.ack_key = random_hex(32);
  for (const auto& [name, value] : d.spec.env) {
    auto opened = state_.secrets.open(value);
    if (!opened.ok()) {
      state_.log("deployment " + d.spec.name + ": secret " + name + ": " + opened.status().message() +
                 "; its replicas get no secrets and no traffic");
      return cached.sealed;
    }
    plain.env.emplace_back(name, std::move(opened).value());
  }
  std::string payload = secrets_payload(plain);
  auto sealed = seal_to_device(processor, payload);
  if (sealed.ok() && pin) sealed = seal_to_attested(*pin, processor, *sealed);
  // The plain values exist only while sealed: zeroed now (the store keeps them sealed).
  wipe(payload);
  wipe(plain.replica_key);
  for (auto& [name, value] : plain.env) wipe(value);
  if (sealed.ok()) {
    cached.sealed = std::move(sealed).value();
    cached.challenge = random_hex(32);
    cached.proof = secrets_ack_proof(plain.ack_key, d.spec.name, static_cast<int>(d.secrets_version), cached.challenge);
  } else {
    state_.log("deployment " + d.spec.name + ": cannot seal its secrets to device " + processor.substr(0, 16) + ": " +
               sealed.status().message());
  }
  wipe(plain.ack_key);
  return cached.sealed;
}

void Supervisor::reconcile_once() {
  const int64_t now = state_.now_ms();
  ClusterMember& member = *state_.member;
  // Per hub, every round: its heartbeat, its keys' usage, its closed tunnels. (Where the other
  // hubs hold their tunnels is read for routing by the ClusterDirectory, not here.)
  state_.saved(member.heartbeat(), "hub " + member.id() + " heartbeat");
  const bool leader = member.lead();
  state_.flush_key_usage();
  const std::vector<std::shared_ptr<AgentLink>> closed = take_closed_links();
  // The live and the forgotten hubs: only the leader acts on them.
  Result<ClusterMember::Members> members = ClusterMember::Members{};
  if (leader) members = member.members();
  std::unique_lock lock(state_.state_mu);
  forget_closed_links(closed, now);
  write_polled_online(now);
  // Once cluster-wide, on the hub holding the reconcile lease.
  if (leader && members.ok()) {
    lead_round(*members, now);
  } else if (autoscaler_ != nullptr) {
    autoscaler_->forget();  // a round it did not watch: what it measured would be stale
  }
  // Every hub routes to every replica (other hubs write rows too): the registry follows the store
  // each round.
  if (state_.refresh_registry()) push_own_assignments(lock, now);
}

void Supervisor::write_polled_online(int64_t now) {
  // One statement for every agent that answered since the last round, not one per poll: with
  // hundreds of agents per hub, per-poll writes were what the database spent its time on.
  std::vector<std::string> ids;
  for (const std::string& id : state_.polled) {
    if (const auto link = state_.links.find(id); link && !link->tunnel->closed()) ids.push_back(id);
  }
  state_.polled.clear();
  state_.saved(state_.store->touch_processors(ids, now), "the polled processors' last seen");
}

std::vector<std::shared_ptr<AgentLink>> Supervisor::take_closed_links() {
  // The links are dropped outside state_mu: a link's destructor joins its heartbeat, which takes it.
  std::vector<std::shared_ptr<AgentLink>> closed;
  for (auto& link : state_.links.all()) {
    if (link->tunnel->closed()) {
      state_.links.remove(link);
      closed.push_back(std::move(link));
    }
  }
  return closed;
}

bool Supervisor::drop_tunnel(const std::string& processor_id, int64_t now) {
  // Its processor is offline only while no other hub holds a newer tunnel of the same agent (it
  // re-dialed another hub before this one noticed the close).
  auto dropped = state_.store->cluster().drop_tunnel(processor_id, state_.member->id());
  if (!dropped.ok()) {
    state_.log("store: tunnel of " + processor_id.substr(0, 16) + ": " + dropped.status().message());
    undropped_tunnels_.insert(processor_id);  // tried again next round
    return false;
  }
  undropped_tunnels_.erase(processor_id);
  if (*dropped)
    state_.saved(state_.store->mark_processor_offline(processor_id, now), "processor " + processor_id.substr(0, 16));
  return *dropped;
}

void Supervisor::forget_closed_links(const std::vector<std::shared_ptr<AgentLink>>& closed, int64_t now) {
  // Records a store that was away could not drop, unless the agent has dialed this hub again.
  for (const std::string& id : std::set<std::string>(undropped_tunnels_)) {
    if (state_.links.find(id)) {
      undropped_tunnels_.erase(id);
    } else {
      drop_tunnel(id, now);
    }
  }
  for (const auto& link : closed) {
    const std::string& id = link->processor_id;
    const bool dropped = drop_tunnel(id, now);
    state_.device_states.erase(id);
    std::erase_if(state_.tuned_settings, [&](const auto& e) { return e.second.processor_id == id; });
    state_.registry.forget_device(id);
    state_.log("agent " + id.substr(0, 16) + (dropped ? " offline: " : " gone from this hub: ") +
               link->tunnel->close_reason());
  }
}

void Supervisor::lead_round(const ClusterMember::Members& members, int64_t now) {
  const ClusterMember& member = *state_.member;
  // Pending devices unseen for a day are forgotten: a key is free to make, so the table of
  // those waiting for approval must not only grow.
  if (auto forgotten = state_.store->remove_pending_processors(now - kPendingLifetimeMs); !forgotten.ok()) {
    state_.log("store: " + forgotten.status().message());
  } else if (*forgotten > 0) {
    state_.log(std::to_string(*forgotten) + " pending device(s) unseen for 24 h forgotten");
  }
  for (const std::string& dead : members.forgotten) {
    if (!member.leading()) return;
    if (state_.saved(state_.store->cluster().remove_hub(dead), "hub " + dead)) {
      state_.log("hub " + dead + " silent too long: forgotten");
    }
  }
  if (!member.leading()) return;
  mark_untunnelled_offline(members, now);

  // Matching, on the states the heartbeats have written, after removing what a scale-down or a
  // rolling update finished draining and advancing rolling updates.
  auto processors = state_.store->processors();
  auto deployments = state_.store->deployments();
  if (!processors.ok() || !deployments.ok() || !member.leading()) return;
  state_.attach_device_states(*processors);
  remove_drained_rows(*deployments, now);
  if (!member.leading()) return;
  // Autoscaling before matching, so that new rows are matched this round.
  if (autoscaler_ != nullptr && autoscaler_->round(*deployments, *processors, now)) {
    deployments = state_.store->deployments();
    if (!deployments.ok() || !member.leading()) return;
  }
  roll_out(*deployments, *processors, now);
  if (!member.leading()) return;
  match(*processors, *deployments, now);
}

void Supervisor::mark_untunnelled_offline(const ClusterMember::Members& members, int64_t now) {
  // Processors first, tunnels after: an agent that connects between the two reads has its tunnel
  // recorded before its row says online (agent_admission.cpp), so it is never taken for gone.
  auto processors = state_.store->processors();
  if (!processors.ok()) return state_.log("store: " + processors.status().message());
  auto tunnels = state_.store->cluster().tunnels();
  if (!tunnels.ok()) return state_.log("store: tunnels: " + tunnels.status().message());
  std::set<std::string> held;  // processors whose tunnel a live hub holds
  for (const TunnelRecord& t : *tunnels) {
    if (members.alive.contains(t.hub_id)) held.insert(t.processor_id);
  }
  for (const Processor& p : *processors) {
    if (!p.online || held.contains(p.id) || !state_.member->leading()) continue;
    // A hub restart, or a hub that died with its tunnels: the agent is offline until it dials.
    state_.saved(state_.store->mark_processor_offline(p.id, now), "processor " + p.id.substr(0, 16));
  }
}

void Supervisor::match(std::vector<Processor>& processors, const std::vector<Deployment>& deployments, int64_t now) {
  auto rows = state_.store->replicas("");
  if (!rows.ok()) return;
  const MatchPlan plan = plan_matches(processors, deployments, *rows, state_.refused_homes);
  auto find_row = [&](const std::string& dep, int index) -> Replica* {
    for (Replica& r : *rows) {
      if (r.deployment == dep && r.index == index) return &r;
    }
    return nullptr;
  };
  for (const Promotion& pr : plan.promotions) {
    Replica* replica = find_row(pr.deployment, pr.replica_index);
    Replica* spare = find_row(pr.deployment, pr.spare_index);
    if (replica == nullptr || spare == nullptr || !state_.member->leading()) continue;
    // The spare's processor now serves the replica's address; the replica's old home becomes
    // the spare row, to be re-matched.
    Replica promoted = *spare;
    promoted.index = replica->index;
    Replica demoted = *replica;
    demoted.index = spare->index;
    demoted.state = ReplicaState::Unmatched;
    demoted.processor_id.clear();
    demoted.secrets_version = 0;
    state_.saved(state_.store->update_replica(demoted, now), replica_context(demoted));
    state_.saved(state_.store->update_replica(promoted, now), replica_context(promoted));
    state_.log("replica " + pr.deployment + "/" + std::to_string(pr.replica_index) + ": spare " +
               std::to_string(pr.spare_index) + " promoted");
  }
  for (const Assignment& a : plan.assignments) {
    Replica* r = find_row(a.deployment, a.index);
    if (r == nullptr || !state_.member->leading()) continue;
    Replica next = *r;
    next.processor_id = a.processor_id;
    next.secrets_version = 0;  // until the new device says it opened them
    next.price_per_day = a.price_per_day;
    next.state = ReplicaState::Matched;
    next.progress = 0;
    next.detail.clear();
    next.prefill_tps = next.decode_tps = 0;
    next.matched_ms = now;
    state_.saved(state_.store->update_replica(next, now), replica_context(next));
    state_.log("replica " + a.deployment + "/" + std::to_string(a.index) + " matched to " +
               a.processor_id.substr(0, 16) + " at " + std::to_string(a.price_per_day) + "/day");
  }
}

void Supervisor::push_own_assignments(std::unique_lock<std::mutex>& lock, int64_t now) {
  // Each of this hub's agents gets its full desired set, from the rows whoever leads wrote; its
  // heartbeat pushes it when it changed. Secrets are sealed here, to this hub's own devices only.
  // The rows are those refresh_registry() has just read.
  const std::vector<Replica>* rows = &state_.known.rows;
  const std::vector<Deployment>* deployments = &state_.known.deployments;
  const std::vector<std::shared_ptr<AgentLink>> links = state_.links.all();
  std::set<std::string> own;
  for (const auto& link : links) own.insert(link->processor_id);
  // What a device loads is its row's serving, not the spec: during a rolling update the old rows
  // keep the old model until they are replaced.
  std::map<std::string, const Deployment*> by_name;
  for (const Deployment& d : *deployments) by_name[d.spec.name] = &d;
  std::map<std::string, std::vector<AssignmentMessage>> wanted;
  std::set<std::pair<std::string, std::string>> sealed_in_use;
  for (const Replica& r : *rows) {
    if (r.processor_id.empty() || r.state == ReplicaState::Offline || !own.contains(r.processor_id)) continue;
    const auto d = by_name.find(r.deployment);
    if (d == by_name.end()) continue;
    AssignmentMessage a;
    a.deployment = r.deployment;
    a.index = r.index;
    a.model_url = r.serving.model_url;
    a.model_sha256 = r.serving.model_sha256;
    a.engine = r.serving.engine;
    a.secrets_version = static_cast<int>(d->second->secrets_version);
    a.sealed_secrets = sealed_for(r.processor_id, *d->second);
    a.secrets_challenge = sealed_secrets_[{r.processor_id, r.deployment}].challenge;
    sealed_in_use.insert({r.processor_id, r.deployment});
    wanted[r.processor_id].push_back(std::move(a));
  }
  std::erase_if(sealed_secrets_, [&](const auto& entry) { return !sealed_in_use.contains(entry.first); });
  // A closed hub serves /files/ only with a token (one per device); an open one needs none.
  if (!state_.options.api_key.empty()) {
    for (auto& [processor, assignments] : wanted) {
      const std::string token = state_.files_tokens.issue(processor, now / 1000);
      for (AssignmentMessage& a : assignments) a.files_token = token;
    }
  }
  lock.unlock();
  for (const auto& link : links) {
    link->want_assignments(json::serialize(to_json(wanted[link->processor_id])));
  }
}

}  // namespace cellserve::fleet
