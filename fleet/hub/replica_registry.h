// The hub's in-memory view of every deployment and its replicas: state, processor, measured
// speeds, generation slots, and the requests in flight to each. Kept in step with the store
// (refresh() after every change the hub makes) and with agents' status reports (report_load()),
// so that the request path reads no database. Thread-safe.
#pragma once

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/clock.h"
#include "fleet/hub/replica_speed.h"
#include "fleet/store/records.h"

namespace cellserve::fleet {

// The slots a replica serves when neither its spec nor its agent says (the agent's default).
inline constexpr int kDefaultReplicaSlots = 2;

struct DeploymentView {
  std::string name;
  int replicas = 0;
  int spares = 0;
  int parallel = 0;  // engine.parallel in the spec; 0: the agent's default
  GatewaySettings gateway;
  int64_t created_ms = 0;
  int64_t secrets_version = 1;  // the version a replica must have acknowledged to get traffic
  // The key the deployment's replicas require (the hub sends it as the bearer token); in memory
  // only, derived from the hub's secrets key.
  std::string replica_key;
  int64_t ctx_size = 0;  // engine.ctx_size in the spec; 0: the agent's default (an API key's holds)
  // Whether a request's `model` names this deployment: none, its name, or its alias.
  bool serves(std::string_view model) const {
    return model.empty() || model == name || (!gateway.alias.empty() && model == gateway.alias);
  }
};

// Prompt tokens a replica's device is reading now: `done` of `total` (0 of 0: none, or unknown).
struct PrefillProgress {
  int done = 0;
  int total = 0;
  int pending() const { return total > done ? total - done : 0; }
  bool operator==(const PrefillProgress&) const = default;
};

struct ReplicaView {
  std::string deployment;
  int index = 0;
  bool spare = false;
  ReplicaState state = ReplicaState::Unmatched;
  double progress = 0;
  std::string processor_id;
  // The speeds routing uses (replica_speed.h): the hub's measurements, which the device's claim
  // may only lower; before kTrustedSamples of them, at most the prior.
  double prefill_tps = 0;
  double decode_tps = 0;
  SpeedFigures claimed;               // the device's report (its status poll)
  SpeedMeter measured;                // what the hub measured of its answers
  bool speed_claim_inflated = false;  // its claim predicts answers kInflatedClaimFactor times faster
  int in_flight = 0;                  // requests the hub is forwarding to it now (exact, counted here)
  // Generation slots: the agent's report, at most the spec's parallel (else kDefaultReplicaSlots):
  // a device cannot draw more requests by claiming more slots than it was asked to run.
  int slots = 0;
  int reported_busy = 0;  // slots busy at the agent's last report, less the hub's requests ended since
  int busy = 0;           // max(in_flight, reported_busy): what routing counts as taken
  // The prompts its device was reading at its last report (ReplicaReport::prefill_done/_total):
  // work ahead of a new request, which routing counts (estimated_seconds in route_choice.h).
  PrefillProgress prefill;
  int consecutive_failures = 0;
  bool ejected = false;   // failed too often; gets traffic again after the ejection time (one probe)
  bool draining = false;  // takes no new requests at the deployment endpoint (draining or reloading)
  // Its device acknowledged opening the deployment's current secrets: until then it gets no
  // traffic (it could not use a new HF_TOKEN, nor check the replica key).
  bool secrets_current = false;
  // From its device's last status poll (report_device): >= 1 when the device is throttled or
  // hot, dividing its measured speeds (device_slowdown in route_choice.h); paused: the agent
  // takes no new requests (a low battery), so the endpoint sends it none.
  double slowdown = 1;
  bool device_paused = false;
};

class ReplicaRegistry {
 public:
  // Ejections are timed on `clock`.
  explicit ReplicaRegistry(const Clock& clock = Clock::system()) : clock_(clock) {}

  // Consecutive failed forwards that eject a replica, and for how long.
  static constexpr int kEjectAfterFailures = 3;
  static constexpr std::chrono::milliseconds kEjectionTime{5000};
  // A replica is ejected too when, over its last kErrorRateWindow outcomes (at least
  // kErrorRateMinOutcomes of them), this share or more failed.
  static constexpr int kErrorRateWindow = 20;
  static constexpr int kErrorRateMinOutcomes = 10;
  static constexpr int kEjectAtErrorRatePercent = 50;

  // Replaces the view with the store's deployments and replica rows. In-flight counts, reported
  // load and failure counts carry over for the (deployment, index) pairs that keep their
  // processor, and follow a processor that moved to another index of the same deployment.
  // `replica_keys`: each deployment's replica key by name (DeploymentView::replica_key).
  void refresh(const std::vector<Deployment>& deployments, const std::vector<Replica>& rows,
               const std::map<std::string, std::string>& replica_keys = {});

  // The agent of `processor_id` reported a replica's slots and how many were free (its status
  // poll). Ignored unless that processor serves the replica now. Slots beyond the deployment's
  // parallel count as parallel (snapshot).
  void report_load(const std::string& deployment, int index, const std::string& processor_id, int slots, int free_slots,
                   PrefillProgress prefill = {});

  // The device of `processor_id` reported its state (its status poll): every replica it serves
  // is routed with `slowdown` and, when `paused`, gets no new requests. Kept until forget_device.
  void report_device(const std::string& processor_id, double slowdown, bool paused);
  void forget_device(const std::string& processor_id);

  // What the request path needs to reach replica `index` of `deployment`.
  struct Lookup {
    enum class Kind { NoDeployment, NoSuchReplica, Found } kind = Kind::NoDeployment;
    int replicas = 0;     // the deployment's replica count (NoSuchReplica's message)
    ReplicaView replica;  // Found
  };
  Lookup find(const std::string& deployment, int index) const;

  std::optional<DeploymentView> deployment(const std::string& name) const;

  // Every replica and spare of `deployment` ("" : all), ordered by deployment then index.
  std::vector<ReplicaView> replicas(const std::string& deployment) const;

  // Counts one forwarded request to (deployment, index) while alive.
  class InFlight {
   public:
    struct Counters;
    InFlight() = default;
    explicit InFlight(std::shared_ptr<Counters> counters);
    InFlight(InFlight&&) = default;
    // Ends the request this guard counted (if any), then takes over `other`'s.
    InFlight& operator=(InFlight&& other) noexcept;
    ~InFlight();
    explicit operator bool() const { return counters_ != nullptr; }

   private:
    std::shared_ptr<Counters> counters_;
  };
  InFlight begin_request(const std::string& deployment, int index);

  // The hub measured one answer of replica `index` served by `processor_id` (SpeedMeter::add).
  // Ignored unless that processor serves the replica now. Kept per (deployment, device) while the
  // device serves the deployment. True when this answer made its claim count as inflated (it was
  // not before): the caller logs the event once.
  bool record_speed(const std::string& deployment, int index, const std::string& processor_id,
                    const AnswerSample& sample);

  // The outcome of a forward: a failure (before any response, or a replica failure answered:
  // replica_failure.h) counts towards ejection; a success clears the count of failures in a row
  // (and an ejection). True when this failure ejected the replica.
  bool record_result(const std::string& deployment, int index, bool ok);

 private:
  int64_t steady_ms() const;  // clock_'s time, in milliseconds
  const Clock& clock_;
  using Key = std::pair<std::string, int>;
  struct Entry {
    ReplicaView view;
    std::shared_ptr<InFlight::Counters> counters;
  };
  ReplicaView snapshot(const Entry& e, int64_t now_ms) const;

  mutable std::mutex mu_;
  std::map<std::string, DeploymentView> deployments_;
  std::map<Key, Entry> replicas_;
  struct DeviceLoad {
    double slowdown = 1;
    bool paused = false;
  };
  std::map<std::string, DeviceLoad> devices_;                         // by processor id
  std::map<std::pair<std::string, std::string>, SpeedMeter> speeds_;  // by (deployment, processor id)
};

}  // namespace cellserve::fleet
