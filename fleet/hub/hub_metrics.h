// The hub's metrics for its deployment endpoints, on GET /metrics in Prometheus' text format:
// per deployment and replica, requests by status, retries, hedges, ejections, queue length, queue wait,
// end-to-end latency and time to first byte, completion tokens, and requests completed in the
// last hour. Labels are deployment names (validated, and only of deployments that exist) and
// replica indexes: never a value taken from a request. Thread-safe.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "fleet/hub/replica_registry.h"
#include "net/prometheus.h"

namespace cellserve::fleet {

class HubMetrics {
 public:
  // One request to `deployment`'s endpoint answered with `status` (499: the client left first)
  // by replica `replica` (-1: none, e.g. 429 from the queue).
  void count_request(const std::string& deployment, int replica, int status);
  void count_retry(const std::string& deployment);
  void count_hedge(const std::string& deployment);
  void count_ejection(const std::string& deployment, int replica);
  void observe_queue_wait(const std::string& deployment, double seconds);
  void observe_latency(const std::string& deployment, double seconds);
  void observe_first_byte(const std::string& deployment, double seconds);
  void add_completion_tokens(const std::string& deployment, int64_t n);
  // One batch line ended on `device` (a processor id, from the hub's own records): answered, or
  // failed for good.
  void count_batch_line(const std::string& deployment, const std::string& device, bool answered);
  // One spot check or canary ended with `result` (fleet/hub/spot_checks.h: a fixed word).
  void count_spot_check(const std::string& deployment, const std::string& result);
  // One autoscaling decision of `deployment` (fleet/hub/autoscaler.h): `action` is a fixed word
  // (scale_up, scale_down, held).
  void count_scaling(const std::string& deployment, const std::string& action);

  // Requests answered 2xx in the last hour (one-minute resolution).
  int64_t completed_last_hour(const std::string& deployment) const;
  int64_t completed_last_hour(const std::string& deployment, int replica) const;
  // Requests to that replica that failed (a failover attempt or a broken answer), ever.
  int64_t failures(const std::string& deployment, int replica) const;
  void count_failure(const std::string& deployment, int replica);
  // Replica `replica` answered with `status`, a failure (replica_failure.h), whether or not the
  // request went on to another replica.
  void count_refusal(const std::string& deployment, int replica, int status);
  int64_t refusals(const std::string& deployment, int replica, int status) const;

  // The exposition text; `queue_lengths` by deployment. Series of deployments no longer in
  // `registry` are left out (and dropped).
  std::string prometheus_text(const ReplicaRegistry& registry, const std::map<std::string, size_t>& queue_lengths);

 private:
  // Completions per minute over the last 60 minutes, as a ring.
  struct HourCounter {
    std::array<int64_t, 60> per_minute{};
    int64_t minute = 0;  // the minute (since the epoch of steady_clock) of per_minute[minute % 60]
    void add(int64_t now_minute);
    int64_t total(int64_t now_minute) const;
  };
  struct ReplicaSeries {
    std::map<int, int64_t> requests;  // by status
    int64_t ejections = 0;
    int64_t failures = 0;
    std::map<int, int64_t> refusals;  // by status
    HourCounter completed;
  };
  struct BatchSeries {
    int64_t answered = 0;
    int64_t failed = 0;
    HourCounter answered_hour;
  };
  struct DeploymentSeries {
    std::map<int, ReplicaSeries> replicas;       // -1: answered without a replica
    std::map<std::string, BatchSeries> batch;    // by device (its id's first 16 hex digits)
    std::map<std::string, int64_t> spot_checks;  // by result
    std::map<std::string, int64_t> scaling;      // autoscaling decisions, by action
    int64_t retries = 0;
    int64_t hedges = 0;
    int64_t completion_tokens = 0;
    HourCounter completed;
    net::Histogram queue_wait{{0.001, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}};
    net::Histogram latency{{0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300}};
    net::Histogram first_byte{{0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}};
  };
  static int64_t now_minute();

  mutable std::mutex mu_;
  std::map<std::string, DeploymentSeries> deployments_;
};

}  // namespace cellserve::fleet
