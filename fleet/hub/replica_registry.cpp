#include "fleet/hub/replica_registry.h"

#include <algorithm>
#include <bit>
#include <set>

namespace cellserve::fleet {

// Shared by a replica's entry and its InFlight guards, so counts survive refresh().
struct ReplicaRegistry::InFlight::Counters {
  std::atomic<int> in_flight{0};
  std::atomic<int> ended_since_report{0};  // hub requests that ended since the agent's last report
  int reported_slots = 0;                  // guarded by the registry's mutex, as are the rest
  int reported_busy = 0;
  PrefillProgress reported_prefill;
  int64_t reported_prefill_ms = 0;  // when it was reported, on the registry's clock
  int consecutive_failures = 0;
  int64_t ejected_until_ms = 0;
  // The last `recent_count` outcomes (at most kErrorRateWindow), newest in bit 0; 1: a failure.
  uint32_t recent_failures = 0;
  int recent_count = 0;
};

ReplicaRegistry::InFlight::InFlight(std::shared_ptr<Counters> counters) : counters_(std::move(counters)) {
  ++counters_->in_flight;
}

ReplicaRegistry::InFlight::~InFlight() {
  if (!counters_) return;
  --counters_->in_flight;
  ++counters_->ended_since_report;
}

ReplicaRegistry::InFlight& ReplicaRegistry::InFlight::operator=(InFlight&& other) noexcept {
  if (this != &other) {
    InFlight ended(std::move(*this));  // its destructor ends the request counted so far
    counters_ = std::move(other.counters_);
  }
  return *this;
}

void ReplicaRegistry::refresh(const std::vector<Deployment>& deployments, const std::vector<Replica>& rows,
                              const std::map<std::string, std::string>& replica_keys) {
  std::map<std::string, DeploymentView> next_deployments;
  for (const Deployment& d : deployments) {
    const auto key = replica_keys.find(d.spec.name);
    next_deployments[d.spec.name] =
        DeploymentView{d.spec.name,           d.spec.replicas,
                       d.spec.spares,         d.spec.engine.parallel,
                       d.spec.gateway,        d.created_ms,
                       d.secrets_version,     key == replica_keys.end() ? std::string() : key->second,
                       d.spec.engine.ctx_size};
  }
  std::lock_guard lock(mu_);
  // A processor that moved to another index of its deployment (a spare promoted, a rolling
  // update's swap) keeps its counters: its requests in flight stay counted where it now is.
  std::map<std::pair<std::string, std::string>, std::shared_ptr<InFlight::Counters>> by_processor;
  for (const auto& [key, e] : replicas_) {
    if (!e.view.processor_id.empty() && e.view.state != ReplicaState::Offline) {
      by_processor[{key.first, e.view.processor_id}] = e.counters;
    }
  }
  std::map<Key, Entry> next;
  for (const Replica& r : rows) {
    const auto dep = next_deployments.find(r.deployment);
    if (dep == next_deployments.end()) continue;
    Key key{r.deployment, r.index};
    Entry e;
    const auto old = replicas_.find(key);
    const auto moved = r.processor_id.empty() ? by_processor.end() : by_processor.find({r.deployment, r.processor_id});
    if (old != replicas_.end() && old->second.view.processor_id == r.processor_id) {
      e.counters = old->second.counters;
    } else if (moved != by_processor.end()) {
      e.counters = moved->second;
    } else {
      // Another processor (or none): a clean load and failure record.
      e.counters = std::make_shared<InFlight::Counters>();
    }
    e.view.deployment = r.deployment;
    e.view.index = r.index;
    e.view.spare = r.index >= dep->second.replicas;
    e.view.state = r.state;
    e.view.progress = r.progress;
    e.view.processor_id = r.processor_id;
    e.view.claimed = {r.prefill_tps, r.decode_tps};
    e.view.draining = r.draining || r.reloading;
    e.view.secrets_current = r.secrets_version >= dep->second.secrets_version;
    next.emplace(std::move(key), std::move(e));
  }
  replicas_.swap(next);
  deployments_.swap(next_deployments);
  // Measurements of a device that no longer serves a deployment go with it.
  std::set<std::pair<std::string, std::string>> serving;  // (deployment, processor id)
  for (const auto& [key, e] : replicas_) serving.emplace(key.first, e.view.processor_id);
  std::erase_if(speeds_, [&](const auto& kv) { return !serving.contains(kv.first); });
}

void ReplicaRegistry::report_load(const std::string& deployment, int index, const std::string& processor_id, int slots,
                                  int free_slots, PrefillProgress prefill) {
  std::lock_guard lock(mu_);
  const auto it = replicas_.find(Key{deployment, index});
  if (it == replicas_.end() || it->second.view.processor_id != processor_id || slots <= 0) return;
  InFlight::Counters& c = *it->second.counters;
  c.reported_slots = slots;
  c.reported_busy = std::clamp(slots - free_slots, 0, slots);
  c.reported_prefill.total = std::max(0, prefill.total);
  c.reported_prefill.done = std::clamp(prefill.done, 0, c.reported_prefill.total);
  c.reported_prefill_ms = steady_ms();
  c.ended_since_report.store(0);
}

void ReplicaRegistry::report_device(const std::string& processor_id, double slowdown, bool paused) {
  std::lock_guard lock(mu_);
  devices_[processor_id] = {std::max(1.0, slowdown), paused};
}

void ReplicaRegistry::forget_device(const std::string& processor_id) {
  std::lock_guard lock(mu_);
  devices_.erase(processor_id);
}

ReplicaView ReplicaRegistry::snapshot(const Entry& e, int64_t now_ms) const {
  ReplicaView v = e.view;
  if (const auto d = devices_.find(v.processor_id); d != devices_.end()) {
    v.slowdown = d->second.slowdown;
    v.device_paused = d->second.paused;
  }
  const InFlight::Counters& c = *e.counters;
  v.in_flight = c.in_flight.load();
  const auto dep = deployments_.find(v.deployment);
  const int spec_slots =
      dep != deployments_.end() && dep->second.parallel > 0 ? dep->second.parallel : kDefaultReplicaSlots;
  v.slots = c.reported_slots > 0 ? std::min(c.reported_slots, spec_slots) : spec_slots;
  if (const auto m = speeds_.find({v.deployment, v.processor_id}); m != speeds_.end()) v.measured = m->second;
  const SpeedFigures routed = routed_speeds(v.claimed, v.measured);
  v.prefill_tps = routed.prefill_tps;
  v.decode_tps = routed.decode_tps;
  v.speed_claim_inflated = v.measured.claim_inflated();
  v.reported_busy = std::max(0, c.reported_busy - c.ended_since_report.load());
  v.busy = std::max(v.in_flight, v.reported_busy);
  // The reported prefill as it stands now: none once nothing runs there, else less what the
  // device has read since the report at its routed prompt speed (a report is a poll old).
  if (v.busy > 0 && c.reported_prefill.pending() > 0) {
    const double read = std::max<int64_t>(0, now_ms - c.reported_prefill_ms) / 1000.0 * std::max(0.0, v.prefill_tps);
    v.prefill = c.reported_prefill;
    v.prefill.done = static_cast<int>(std::min<double>(v.prefill.total, v.prefill.done + read));
  } else {
    v.prefill = {};
  }
  v.consecutive_failures = c.consecutive_failures;
  v.ejected = c.ejected_until_ms > now_ms;
  return v;
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
  out.replica = snapshot(it->second, steady_ms());
  return out;
}

std::optional<DeploymentView> ReplicaRegistry::deployment(const std::string& name) const {
  std::lock_guard lock(mu_);
  const auto it = deployments_.find(name);
  if (it == deployments_.end()) return std::nullopt;
  return it->second;
}

std::vector<ReplicaView> ReplicaRegistry::replicas(const std::string& deployment) const {
  std::lock_guard lock(mu_);
  const int64_t now = steady_ms();
  std::vector<ReplicaView> out;
  for (const auto& [key, e] : replicas_) {
    if (!deployment.empty() && key.first != deployment) continue;
    out.push_back(snapshot(e, now));
  }
  return out;
}

ReplicaRegistry::InFlight ReplicaRegistry::begin_request(const std::string& deployment, int index) {
  std::lock_guard lock(mu_);
  const auto it = replicas_.find(Key{deployment, index});
  if (it == replicas_.end()) return InFlight();
  return InFlight(it->second.counters);
}

bool ReplicaRegistry::record_speed(const std::string& deployment, int index, const std::string& processor_id,
                                   const AnswerSample& sample) {
  std::lock_guard lock(mu_);
  const auto it = replicas_.find(Key{deployment, index});
  if (it == replicas_.end() || processor_id.empty() || it->second.view.processor_id != processor_id) return false;
  SpeedMeter& meter = speeds_[{deployment, processor_id}];
  const bool was_inflated = meter.claim_inflated();
  meter.add(sample, it->second.view.claimed);
  return !was_inflated && meter.claim_inflated();
}

bool ReplicaRegistry::record_result(const std::string& deployment, int index, bool ok) {
  std::lock_guard lock(mu_);
  const auto it = replicas_.find(Key{deployment, index});
  if (it == replicas_.end()) return false;
  InFlight::Counters& c = *it->second.counters;
  constexpr uint32_t kWindowMask = (1u << kErrorRateWindow) - 1;
  c.recent_failures = ((c.recent_failures << 1) | (ok ? 0u : 1u)) & kWindowMask;
  c.recent_count = std::min(c.recent_count + 1, kErrorRateWindow);
  if (ok) {
    c.consecutive_failures = 0;
    c.ejected_until_ms = 0;
    return false;
  }
  // Each failure at or past the threshold (including the probe after an ejection) ejects again.
  // So does a failure that brings the recent error rate to the threshold, for a replica that fails
  // often but not in a row (a sick replica between good answers).
  const bool in_a_row = ++c.consecutive_failures >= kEjectAfterFailures;
  const bool error_rate = c.recent_count >= kErrorRateMinOutcomes &&
                          std::popcount(c.recent_failures) * 100 >= kEjectAtErrorRatePercent * c.recent_count;
  if (!in_a_row && !error_rate) return false;
  c.ejected_until_ms = steady_ms() + kEjectionTime.count();
  // The probe after the ejection starts a new window, and its answer alone decides: a success
  // re-admits the replica, a failure ejects it again (as a third failure in a row would).
  c.recent_failures = 0;
  c.recent_count = 0;
  c.consecutive_failures = std::max(c.consecutive_failures, kEjectAfterFailures - 1);
  return true;
}

int64_t ReplicaRegistry::steady_ms() const {
  return std::chrono::duration_cast<std::chrono::milliseconds>(clock_.now().time_since_epoch()).count();
}

}  // namespace cellserve::fleet
