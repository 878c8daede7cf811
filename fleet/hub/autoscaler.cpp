#include "fleet/hub/autoscaler.h"

#include <algorithm>
#include <set>

#include "fleet/matcher/matcher.h"
#include "fleet/spec/cron_schedule.h"

namespace cellserve::fleet {
namespace {

// A row the count includes: a replica (not a spare, nor a rolling update's surge row) that is
// not being drained away.
bool counted_row(const Deployment& d, const Replica& r) { return r.index < d.spec.replicas && !r.draining; }

bool on_its_way(ReplicaState s) {
  return s == ReplicaState::Matched || s == ReplicaState::Downloading || s == ReplicaState::Loading ||
         s == ReplicaState::Tuning;
}

}  // namespace

bool Autoscaler::round(const std::vector<Deployment>& deployments, const std::vector<Processor>& processors,
                       int64_t now) {
  std::set<std::string> scaled;
  for (const Deployment& d : deployments) {
    if (d.spec.autoscale.enabled()) scaled.insert(d.spec.name);
  }
  std::erase_if(tracked_, [&](const auto& e) { return !scaled.contains(e.first); });
  // Leading again under a new lease: while another hub led, nothing here watched the idle times
  // and rates, so they start again (which can only delay a fall).
  if (const int64_t token = state_.member->token(); token != lease_token_) {
    tracked_.clear();
    lease_token_ = token;
  }
  if (scaled.empty()) return false;
  auto rows = state_.store->replicas("");
  if (!rows.ok()) {
    state_.log("autoscaler: " + rows.status().message());
    return false;
  }
  std::vector<Batch> batches;
  if (batches_) {
    auto in_progress = batches_();
    if (in_progress.ok()) {
      batches = std::move(*in_progress);
    } else {
      state_.log("autoscaler: batches: " + in_progress.status().message());
    }
  }
  // The queues, read once per round: this hub's, and the other hubs' while their reports are fresh
  // (they come with every load message).
  waits_ = state_.peer_queues.totals(kPeerQueueMaxAge);
  for (const auto& [name, q] : forwarder_.queue_waits()) {
    PeerQueues::Total& w = waits_[name];
    w.waiting += static_cast<int>(q.waiting);
    w.longest_s = std::max(w.longest_s, q.longest_s);
  }
  bool changed = false;
  for (const Deployment& d : deployments) {
    if (!d.spec.autoscale.enabled() || !state_.member->leading()) continue;
    const ScalingSignals s = signals(d, *rows, processors, batches, now);
    changed |= apply(d, decide_scaling(d.spec, s), s, tracked_[d.spec.name], now);
  }
  return changed;
}

ScalingSignals Autoscaler::signals(const Deployment& d, const std::vector<Replica>& rows,
                                   const std::vector<Processor>& processors, const std::vector<Batch>& batches,
                                   int64_t now) {
  Tracked& t = tracked_[d.spec.name];
  if (t.created_ms != d.created_ms) {
    t = Tracked();
    t.created_ms = d.created_ms;
  }
  ScalingSignals s;
  s.now_ms = now;
  s.replicas = d.spec.replicas;
  s.free_asks = free_asks(processors, d, rows, state_.refused_homes);
  s.free_devices = static_cast<int>(s.free_asks.size());
  for (const Replica& r : rows) {
    if (r.deployment != d.spec.name || !counted_row(d, r)) continue;
    if (on_its_way(r.state) ||
        (s.free_devices > 0 && (r.state == ReplicaState::Unmatched || r.state == ReplicaState::Offline))) {
      ++s.coming_up;
    }
    s.committed_price_per_day += r.processor_id.empty() ? d.spec.max_price_per_day : r.price_per_day;
  }
  if (const auto w = waits_.find(d.spec.name); w != waits_.end()) {
    s.waiting = w->second.waiting;
    s.queue_wait_s = w->second.longest_s;
  }
  const std::vector<ReplicaView> views = state_.registry.replicas(d.spec.name);
  s.idle_replicas = idle_replicas(d, views, t, now);
  s.last_scale_up_ms = t.last_scale_up_ms;
  batch_signals(d, views, batches, t, s);
  schedule_signals(d.spec.autoscale, now, s);
  return s;
}

int Autoscaler::idle_replicas(const Deployment& d, const std::vector<ReplicaView>& views, Tracked& t, int64_t now) {
  const auto cooldown_ms = static_cast<int64_t>(d.spec.autoscale.cooldown_s * 1000);
  std::map<int, int64_t> seen;
  int idle = 0;
  for (const ReplicaView& v : views) {
    if (v.spare || v.draining || v.state != ReplicaState::Ready || v.index >= d.spec.replicas) continue;
    const auto last = t.last_busy_ms.find(v.index);
    // A replica first seen now starts its idle time now; one with work is busy now.
    const int64_t busy_ms = v.busy > 0 || v.in_flight > 0 || last == t.last_busy_ms.end() ? now : last->second;
    seen[v.index] = busy_ms;
    if (now - busy_ms >= cooldown_ms) ++idle;
  }
  t.last_busy_ms = std::move(seen);
  return idle;
}

void Autoscaler::batch_signals(const Deployment& d, const std::vector<ReplicaView>& views,
                               const std::vector<Batch>& batches, Tracked& t, ScalingSignals& s) {
  const int64_t deadline_s = d.spec.autoscale.batch_deadline_s;
  if (deadline_s <= 0) return;
  int64_t ended = 0;
  for (const Batch& b : batches) {
    if (b.deployment != d.spec.name || b.deployment_created_ms != d.created_ms) continue;
    ended += b.completed + b.failed;
    const int64_t left = std::max(0, b.total - b.completed - b.failed);
    if (left == 0) continue;
    s.batch_lines_left += left;
    int64_t deadline = b.created_ms + deadline_s * 1000;
    if (b.expires_ms > 0) deadline = std::min(deadline, b.expires_ms);
    if (s.batch_deadline_ms == 0 || deadline < s.batch_deadline_ms) {
      s.batch_deadline_ms = deadline;
      s.batch_id = b.id;
    }
  }
  // The rate: lines ended over the window, per replica ready. A batch that finished leaves the
  // sum, and a change of the replicas ready changes the rate: the samples start again then.
  int ready = 0;
  for (const ReplicaView& v : views) {
    if (!v.spare && v.state == ReplicaState::Ready) ++ready;
  }
  if (!t.samples.empty() && (ended < t.samples.back().lines_ended || ready != t.samples.back().ready)) {
    t.samples.clear();
  }
  t.samples.push_back({s.now_ms, ended, ready});
  while (t.samples.size() > 2 && s.now_ms - t.samples[1].at_ms >= kRateWindowMs) t.samples.pop_front();
  const auto& first = t.samples.front();
  const int64_t span_ms = s.now_ms - first.at_ms;
  if (s.batch_lines_left == 0 || span_ms < kRateWindowMs || ended <= first.lines_ended) return;
  s.lines_per_replica_s =
      static_cast<double>(ended - first.lines_ended) / (static_cast<double>(span_ms) / 1000.0) / std::max(1, ready);
}

void Autoscaler::schedule_signals(const AutoscaleSettings& a, int64_t now, ScalingSignals& s) {
  for (const ScheduleWindow& w : a.schedules) {
    auto cron = CronSchedule::parse(w.cron);  // checked at deploy: a stored window parses
    if (!cron.ok()) continue;
    const std::optional<int64_t> start = cron->window_start(now, w.for_s * 1000);
    if (!start || w.replicas <= s.schedule_replicas) continue;
    s.schedule_replicas = w.replicas;
    s.schedule_window = "schedule '" + w.cron + "' until " + scaling_time_text(*start + w.for_s * 1000, now);
  }
}

bool Autoscaler::apply(const Deployment& d, const ScalingDecision& decision, const ScalingSignals& s, Tracked& t,
                       int64_t now) {
  // A held decision is recorded once while the same limit keeps stopping the rise: again only
  // after a scale, or after cooldown_s without one (a queue that dips under its target for a round
  // is the same episode).
  const auto cooldown_ms = static_cast<int64_t>(d.spec.autoscale.cooldown_s * 1000);
  if (decision.action == "scale_up" || decision.action == "scale_down" ||
      (decision.action.empty() && now - t.last_held_ms >= cooldown_ms)) {
    t.held_limit.clear();
  }
  if (decision.action.empty()) return false;
  if (decision.action == "held") {
    const bool same_episode = t.held_limit == decision.limit;
    t.last_held_ms = now;
    if (same_episode) return false;
    t.held_limit = decision.limit;
  }
  const std::string& name = d.spec.name;
  const bool changes = decision.to_replicas != s.replicas;
  if (changes) {
    // Only from the count this round read: an operator's or another hub's change meanwhile stands.
    const Result<bool> scaled = state_.store->rescale_replicas(name, s.replicas, decision.to_replicas, now);
    if (!state_.saved(scaled.status(), "autoscaling deployment " + name) || !*scaled) return false;
    if (decision.to_replicas > s.replicas) t.last_scale_up_ms = now;
  }
  const ScalingEvent event{name, now, decision.action, s.replicas, decision.to_replicas, decision.reason};
  state_.saved(state_.store->scaling_events().add(event), "scaling event of " + name);
  state_.metrics.count_scaling(name, decision.action);
  state_.log("deployment " + name + " " + decision.action + " " + std::to_string(s.replicas) + " -> " +
             std::to_string(decision.to_replicas) + ": " + decision.reason);
  return changes;
}

}  // namespace cellserve::fleet
