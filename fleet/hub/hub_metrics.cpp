#include "fleet/hub/hub_metrics.h"

#include <algorithm>
#include <set>
#include <sstream>

#include "fleet/spec/replica_address.h"

namespace cellserve::fleet {

int64_t HubMetrics::now_minute() {
  return std::chrono::duration_cast<std::chrono::minutes>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

void HubMetrics::HourCounter::add(int64_t now) {
  if (now != minute) {
    // Clear the minutes skipped since the last count (all of them after an hour's silence).
    for (int64_t m = std::max(minute + 1, now - 59); m <= now; ++m) per_minute[static_cast<size_t>(m % 60)] = 0;
    minute = now;
  }
  ++per_minute[static_cast<size_t>(now % 60)];
}

int64_t HubMetrics::HourCounter::total(int64_t now) const {
  int64_t sum = 0;
  // Minute 0 is the clock's epoch (often the boot): nothing was counted before it.
  for (int64_t m = std::max({minute - 59, now - 59, int64_t{0}}); m <= minute; ++m) {
    sum += per_minute[static_cast<size_t>(m % 60)];
  }
  return sum;
}

void HubMetrics::count_request(const std::string& deployment, int replica, int status) {
  std::lock_guard lock(mu_);
  DeploymentSeries& d = deployments_[deployment];
  ReplicaSeries& r = d.replicas[replica];
  ++r.requests[status];
  if (status >= 200 && status < 300) {
    const int64_t now = now_minute();
    d.completed.add(now);
    r.completed.add(now);
  }
}

void HubMetrics::count_batch_line(const std::string& deployment, const std::string& device, bool answered) {
  std::lock_guard lock(mu_);
  BatchSeries& b = deployments_[deployment].batch[device.substr(0, 16)];
  if (answered) {
    ++b.answered;
    b.answered_hour.add(now_minute());
  } else {
    ++b.failed;
  }
}

void HubMetrics::count_retry(const std::string& deployment) {
  std::lock_guard lock(mu_);
  ++deployments_[deployment].retries;
}

void HubMetrics::count_hedge(const std::string& deployment) {
  std::lock_guard lock(mu_);
  ++deployments_[deployment].hedges;
}

void HubMetrics::count_ejection(const std::string& deployment, int replica) {
  std::lock_guard lock(mu_);
  ++deployments_[deployment].replicas[replica].ejections;
}

void HubMetrics::count_scaling(const std::string& deployment, const std::string& action) {
  std::lock_guard lock(mu_);
  ++deployments_[deployment].scaling[action];
}

void HubMetrics::count_spot_check(const std::string& deployment, const std::string& result) {
  std::lock_guard lock(mu_);
  ++deployments_[deployment].spot_checks[result];
}

void HubMetrics::count_refusal(const std::string& deployment, int replica, int status) {
  std::lock_guard lock(mu_);
  ++deployments_[deployment].replicas[replica].refusals[status];
}

int64_t HubMetrics::refusals(const std::string& deployment, int replica, int status) const {
  std::lock_guard lock(mu_);
  const auto d = deployments_.find(deployment);
  if (d == deployments_.end()) return 0;
  const auto r = d->second.replicas.find(replica);
  if (r == d->second.replicas.end()) return 0;
  const auto n = r->second.refusals.find(status);
  return n == r->second.refusals.end() ? 0 : n->second;
}

void HubMetrics::count_failure(const std::string& deployment, int replica) {
  std::lock_guard lock(mu_);
  ++deployments_[deployment].replicas[replica].failures;
}

void HubMetrics::observe_queue_wait(const std::string& deployment, double seconds) {
  std::lock_guard lock(mu_);
  deployments_[deployment].queue_wait.observe(seconds);
}

void HubMetrics::observe_latency(const std::string& deployment, double seconds) {
  std::lock_guard lock(mu_);
  deployments_[deployment].latency.observe(seconds);
}

void HubMetrics::observe_first_byte(const std::string& deployment, double seconds) {
  std::lock_guard lock(mu_);
  deployments_[deployment].first_byte.observe(seconds);
}

void HubMetrics::add_completion_tokens(const std::string& deployment, int64_t n) {
  std::lock_guard lock(mu_);
  deployments_[deployment].completion_tokens += n;
}

int64_t HubMetrics::completed_last_hour(const std::string& deployment) const {
  std::lock_guard lock(mu_);
  const auto d = deployments_.find(deployment);
  return d == deployments_.end() ? 0 : d->second.completed.total(now_minute());
}

int64_t HubMetrics::completed_last_hour(const std::string& deployment, int replica) const {
  std::lock_guard lock(mu_);
  const auto d = deployments_.find(deployment);
  if (d == deployments_.end()) return 0;
  const auto r = d->second.replicas.find(replica);
  return r == d->second.replicas.end() ? 0 : r->second.completed.total(now_minute());
}

int64_t HubMetrics::failures(const std::string& deployment, int replica) const {
  std::lock_guard lock(mu_);
  const auto d = deployments_.find(deployment);
  if (d == deployments_.end()) return 0;
  const auto r = d->second.replicas.find(replica);
  return r == d->second.replicas.end() ? 0 : r->second.failures;
}

namespace {

// Each replica's speeds, claimed beside measured, and its inflated-claim flag.
void write_speeds(std::ostringstream& out, const std::vector<ReplicaView>& replicas) {
  out << "# HELP cellserve_hub_replica_speed_tps A replica's speed in tokens/s: claimed by its device, measured by "
         "the hub from its answers, and routed on (at most the measurement).\n"
         "# TYPE cellserve_hub_replica_speed_tps gauge\n"
         "# HELP cellserve_hub_replica_speed_claim_inflated 1 when the device's claimed speeds predict its answers "
         "far faster than they came.\n"
         "# TYPE cellserve_hub_replica_speed_claim_inflated gauge\n";
  for (const ReplicaView& r : replicas) {
    const std::string labels =
        "deployment=\"" + net::prometheus_label(r.deployment) + "\",replica=\"" + std::to_string(r.index) + "\"";
    const std::pair<const char*, double> figures[] = {{"prefill\",source=\"claimed", r.claimed.prefill_tps},
                                                      {"decode\",source=\"claimed", r.claimed.decode_tps},
                                                      {"prefill\",source=\"measured", r.measured.prefill().value},
                                                      {"decode\",source=\"measured", r.measured.decode().value},
                                                      {"prefill\",source=\"routed", r.prefill_tps},
                                                      {"decode\",source=\"routed", r.decode_tps}};
    for (const auto& [phase, tps] : figures) {
      out << "cellserve_hub_replica_speed_tps{" << labels << ",phase=\"" << phase << "\"} " << tps << '\n';
    }
    out << "cellserve_hub_replica_speed_claim_inflated{" << labels << "} " << r.speed_claim_inflated << '\n';
  }
}

}  // namespace

std::string HubMetrics::prometheus_text(const ReplicaRegistry& registry,
                                        const std::map<std::string, size_t>& queue_lengths) {
  const std::vector<ReplicaView> replicas = registry.replicas("");
  std::set<std::string> live;
  for (const ReplicaView& r : replicas) live.insert(r.deployment);
  std::lock_guard lock(mu_);
  std::erase_if(deployments_,
                [&](const auto& kv) { return !live.contains(kv.first) || !valid_deployment_name(kv.first); });
  const int64_t now = now_minute();
  std::ostringstream out;
  out.precision(6);
  const auto header = [&](const char* name, const char* type, const char* help) {
    out << "# HELP cellserve_hub_" << name << ' ' << help << "\n# TYPE cellserve_hub_" << name << ' ' << type << '\n';
  };
  const auto dep_label = [](const std::string& d) { return "deployment=\"" + net::prometheus_label(d) + "\""; };
  const auto replica_label = [&](const std::string& d, int r) {
    return dep_label(d) + ",replica=\"" + (r < 0 ? std::string("none") : std::to_string(r)) + "\"";
  };

  header("requests_total", "counter", "Requests to a deployment endpoint, by the replica that answered and status.");
  for (const auto& [name, d] : deployments_) {
    for (const auto& [index, r] : d.replicas) {
      for (const auto& [status, n] : r.requests) {
        out << "cellserve_hub_requests_total{" << replica_label(name, index) << ",status=\"" << status << "\"} " << n
            << '\n';
      }
    }
  }
  header("retries_total", "counter", "Requests sent to another replica after one failed before answering.");
  for (const auto& [name, d] : deployments_)
    out << "cellserve_hub_retries_total{" << dep_label(name) << "} " << d.retries << '\n';
  header("hedges_total", "counter", "Short requests also sent to a second replica after the hedge delay.");
  for (const auto& [name, d] : deployments_) {
    out << "cellserve_hub_hedges_total{" << dep_label(name) << "} " << d.hedges << '\n';
  }
  header("replica_failures_total", "counter", "Forwards to a replica that failed or were refused.");
  header("ejections_total", "counter", "Times a replica was ejected after consecutive failures or a high error rate.");
  for (const auto& [name, d] : deployments_) {
    for (const auto& [index, r] : d.replicas) {
      if (index < 0) continue;
      out << "cellserve_hub_replica_failures_total{" << replica_label(name, index) << "} " << r.failures << '\n';
      out << "cellserve_hub_ejections_total{" << replica_label(name, index) << "} " << r.ejections << '\n';
    }
  }
  header("replica_refusals_total", "counter",
         "Answers of a replica that said it failed (429 or a 5xx but 501), by status; failed over when another "
         "replica could take the request.");
  for (const auto& [name, d] : deployments_) {
    for (const auto& [index, r] : d.replicas) {
      if (index < 0) continue;
      for (const auto& [status, n] : r.refusals) {
        out << "cellserve_hub_replica_refusals_total{" << replica_label(name, index) << ",status=\"" << status << "\"} "
            << n << '\n';
      }
    }
  }
  header("completion_tokens_total", "counter", "Completion tokens reported in answers' usage.");
  header("completed_last_hour", "gauge", "Requests answered 2xx in the last hour.");
  for (const auto& [name, d] : deployments_) {
    out << "cellserve_hub_completion_tokens_total{" << dep_label(name) << "} " << d.completion_tokens << '\n';
    out << "cellserve_hub_completed_last_hour{" << dep_label(name) << "} " << d.completed.total(now) << '\n';
  }
  header("batch_requests_total", "counter", "Batch lines that ended, by the device that ran them and outcome.");
  header("batch_answered_last_hour", "gauge", "Batch lines answered in the last hour, by device.");
  for (const auto& [name, d] : deployments_) {
    for (const auto& [device, b] : d.batch) {
      const std::string labels = dep_label(name) + ",device=\"" + net::prometheus_label(device) + "\"";
      out << "cellserve_hub_batch_requests_total{" << labels << ",outcome=\"answered\"} " << b.answered << '\n';
      out << "cellserve_hub_batch_requests_total{" << labels << ",outcome=\"failed\"} " << b.failed << '\n';
      out << "cellserve_hub_batch_answered_last_hour{" << labels << "} " << b.answered_hour.total(now) << '\n';
    }
  }
  header("spot_checks_total", "counter", "Spot checks and canaries that ended, by result.");
  for (const auto& [name, d] : deployments_) {
    for (const auto& [result, n] : d.spot_checks) {
      out << "cellserve_hub_spot_checks_total{" << dep_label(name) << ",result=\"" << net::prometheus_label(result)
          << "\"} " << n << '\n';
    }
  }
  header("scaling_events_total", "counter", "Autoscaling decisions this hub made, by action.");
  for (const auto& [name, d] : deployments_) {
    for (const auto& [action, n] : d.scaling) {
      out << "cellserve_hub_scaling_events_total{" << dep_label(name) << ",action=\"" << net::prometheus_label(action)
          << "\"} " << n << '\n';
    }
  }
  header("queue_length", "gauge", "Requests waiting at the hub for a free replica.");
  for (const std::string& name : live) {
    const auto q = queue_lengths.find(name);
    out << "cellserve_hub_queue_length{" << dep_label(name) << "} " << (q == queue_lengths.end() ? 0 : q->second)
        << '\n';
  }
  write_speeds(out, replicas);
  header("replica_in_flight", "gauge", "Requests the hub is forwarding to the replica now.");
  header("replica_slots", "gauge", "The replica's generation slots.");
  header("replica_ready", "gauge", "1 when the replica is ready and not ejected.");
  for (const ReplicaView& r : replicas) {
    const std::string labels = replica_label(r.deployment, r.index);
    out << "cellserve_hub_replica_in_flight{" << labels << "} " << r.in_flight << '\n';
    out << "cellserve_hub_replica_slots{" << labels << "} " << r.slots << '\n';
    out << "cellserve_hub_replica_ready{" << labels << "} " << (r.state == ReplicaState::Ready && !r.ejected) << '\n';
  }
  header("queue_wait_seconds", "histogram", "Time requests waited in the hub's queue.");
  for (const auto& [name, d] : deployments_)
    d.queue_wait.write(out, "cellserve_hub_queue_wait_seconds", dep_label(name));
  header("request_duration_seconds", "histogram", "End-to-end time of requests at the deployment endpoint.");
  for (const auto& [name, d] : deployments_)
    d.latency.write(out, "cellserve_hub_request_duration_seconds", dep_label(name));
  header("time_to_first_byte_seconds", "histogram",
         "Time to the first byte of the answer (the first token of a stream).");
  for (const auto& [name, d] : deployments_) {
    d.first_byte.write(out, "cellserve_hub_time_to_first_byte_seconds", dep_label(name));
  }
  return out.str();
}

}  // namespace cellserve::fleet
