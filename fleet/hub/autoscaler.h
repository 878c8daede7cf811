// The hub's autoscaler (docs/autoscale.md): once per leader round, for every deployment with
// min_replicas/max_replicas, it gathers what the hub sees (the queue's wait, the batches in
// progress and their rate, idle replicas, prices and free devices, [[schedule]] windows), asks
// decide_scaling() (fleet/matcher/autoscale.h) and applies the answer with the store's
// scale_deployment, which drains the rows a fall removes. Every decision is a ScalingEvent in the
// store (with its reason), a log line and a metric.
//
// What it remembers (when each replica was last busy, the batch rate's samples, the last rise)
// lives on the leading hub only, and only for one lease: a new leader, or this hub leading again
// under a new fencing token, starts measuring again, which can only delay a fall, never cause one.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "fleet/batch/batch_records.h"
#include "fleet/hub/hub_state.h"
#include "fleet/hub/replica_forwarder.h"
#include "fleet/matcher/autoscale.h"

namespace cellserve::fleet {

class Autoscaler {
 public:
  // The batches in progress of every deployment (BatchService::batches_in_progress).
  using BatchesInProgress = std::function<Result<std::vector<Batch>>()>;
  Autoscaler(HubState& state, ReplicaForwarder& forwarder, BatchesInProgress batches)
      : state_(state), forwarder_(forwarder), batches_(std::move(batches)) {}

  // One round over `deployments` at `now` (the leader's, under state_mu); whether it changed a
  // deployment's replica count (the caller reads the deployments again).
  bool round(const std::vector<Deployment>& deployments, const std::vector<Processor>& processors, int64_t now);
  // A reconcile round in which this hub did not lead (under state_mu): it forgets what it measured.
  void forget() { tracked_.clear(); }

  // Another hub's queues count while its last report is this recent (hubs send theirs at least
  // once per poll interval, and at once when they change).
  static constexpr std::chrono::milliseconds kPeerQueueMaxAge{5000};
  // The lines one replica ends per second are measured over this window, once it spans it whole
  // with the same replicas ready: a replica just ready ends its first line only a line's time
  // later, and counting it sooner would take the fleet for slower than it is.
  static constexpr int64_t kRateWindowMs = 60'000;

 private:
  struct Tracked {
    int64_t created_ms = 0;               // the deployment's: one created again under the name starts afresh
    std::map<int, int64_t> last_busy_ms;  // by replica index: when last seen with work (or first seen)
    int64_t last_scale_up_ms = 0;
    struct Sample {
      int64_t at_ms;
      int64_t lines_ended;
      int ready;
    };
    std::deque<Sample> samples;  // the batches' ended lines over the last kRateWindowMs
    std::string held_limit;      // the limit of the held event last recorded ("" : none since)
    int64_t last_held_ms = 0;    // the last round that decided "held", recorded or not
  };

  ScalingSignals signals(const Deployment& d, const std::vector<Replica>& rows,
                         const std::vector<Processor>& processors, const std::vector<Batch>& batches, int64_t now);
  // The replicas idle for cooldown_s (Ready, taking requests, nothing in flight), of `views` (the
  // deployment's in the registry).
  int idle_replicas(const Deployment& d, const std::vector<ReplicaView>& views, Tracked& t, int64_t now);
  // Fills the batch fields of `s` from the deployment's batches in progress.
  void batch_signals(const Deployment& d, const std::vector<ReplicaView>& views, const std::vector<Batch>& batches,
                     Tracked& t, ScalingSignals& s);
  // The highest replicas of the [[schedule]] windows open at `now`, and the window in words.
  static void schedule_signals(const AutoscaleSettings& a, int64_t now, ScalingSignals& s);
  // Applies and records `decision`; whether the count changed.
  bool apply(const Deployment& d, const ScalingDecision& decision, const ScalingSignals& s, Tracked& t, int64_t now);

  HubState& state_;
  ReplicaForwarder& forwarder_;
  BatchesInProgress batches_;
  std::map<std::string, Tracked> tracked_;  // by deployment; guarded by state_mu
  int64_t lease_token_ = 0;                 // the reconcile lease's fencing token at the last round
  // Every hub's queue by deployment (this one's and the fresh reports of the others), this round's.
  std::map<std::string, PeerQueues::Total> waits_;
};

}  // namespace cellserve::fleet
