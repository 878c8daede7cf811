// The one way a request reaches a replica, for all three paths that send one: the deployment
// endpoint (gateway.h), a replica's own address (replica_proxy.cpp) and the batch runner
// (batch_service.h). It owns the deployments' waiting lines, the choice and reservation of a
// replica's slot (route_choice.h), addressing (replica_path, the replica key), the hub's
// first-byte deadline, the result each attempt records against its replica, and the API key's
// tokens held for a request and settled to what it used.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "fleet/hub/hub_state.h"
#include "fleet/hub/metered_writer.h"
#include "fleet/hub/route_choice.h"
#include "fleet/hub/waiting_line.h"
#include "fleet/tunnel/replica_transport.h"

namespace cellserve::fleet {

// The replica a granted request goes to, and its place in the in-flight counts. The slot is free
// again when the reservation is reset or destroyed.
struct Reservation {
  int index = -1;
  std::string processor_id;  // the device: what a failed attempt excludes (an index may change hands)
  std::shared_ptr<ReplicaTransport> transport;
  ReplicaRegistry::InFlight in_flight;
  double estimate_s = 0;  // route_choice's estimate for the request on this replica
};

// How one attempt on a replica ended.
struct Attempt {
  int index = -1;
  std::string processor_id;
  Status status;           // the transport's: OK once the whole response was relayed
  bool responded = false;  // something reached the writer
  bool expired = false;    // no first byte within the hub's deadline (the replica is to blame)
};

class ReplicaForwarder {
 public:
  // The transport to the device `processor_id`: null when it is not connected, and with
  // `routable_only` also while it cannot take new requests (its tunnel closing, its heartbeat
  // unanswered). The hub's reads its agent links; tests pass fakes.
  using TransportOf =
      std::function<std::shared_ptr<ReplicaTransport>(const std::string& processor_id, bool routable_only)>;

  ReplicaForwarder(HubState& state, TransportOf transport_of) : state_(state), transport_of_(std::move(transport_of)) {}

  // The deployment's queue of requests waiting for a free replica (created on first use).
  WaitingLine& line(const std::string& deployment);
  std::map<std::string, size_t> queue_lengths();
  // Each deployment's queue now: how many wait, and the longest wait (the autoscaler's signal).
  struct QueueWait {
    size_t waiting = 0;
    double longest_s = 0;
  };
  std::map<std::string, QueueWait> queue_waits();

  // The deployment's ready, reachable, non-ejected replicas and spares whose device can take
  // requests and is not quarantined (agreement_book.h), less those on `excluded` devices.
  std::vector<ReplicaView> routable(const std::string& deployment, const std::set<std::string>& excluded);
  // Whether a replica of `deployment` (on a device not in `excluded`) would be routable but for
  // its transport: its agent's tunnel is moving to another hub, or the link to the hub holding it
  // is being dialed again. Worth a short wait, unlike a replica refused by policy (secrets, pause,
  // quarantine, ejection, drain).
  bool only_transports_missing(const std::string& deployment, const std::set<std::string>& excluded);
  // Reserves the best routable replica for `work` on a device outside `excluded` into `out`.
  // Failed attempts exclude devices, not indexes: a spare promoted into a failed replica's index
  // is a fresh candidate.
  bool reserve(const std::string& deployment, const RequestWork& work, const std::set<std::string>& excluded,
               Reservation& out);
  // Reserves replica `replica` itself (a replica's own address); false when its device is not
  // connected.
  bool reserve_replica(const std::string& deployment, const ReplicaView& replica, Reservation& out);
  // Frees the slot and wakes the deployment's waiting line.
  void release(Reservation& r, const std::string& deployment);

  // Sends `request` to the reserved replica at replica_path(deployment, index, rest), with the
  // replica key in place of the user's credentials, and relays the answer into `out`. Until its
  // first byte the replica has `first_byte`; then the user's own pace rules. The caller frees the
  // reservation (release()) when the slot should count as free again.
  // Every whole 200 answer is measured (speed_probe.h) into the registry's speeds of the replica's
  // device (replica_speed.h); the event of a claim found inflated is logged once.
  Attempt send(Reservation& r, const DeploymentView& deployment, net::HttpRequest request, std::string_view rest,
               net::ResponseWriter& out, std::chrono::milliseconds first_byte);
  // Records how an attempt on replica `index` ended: a failure counts towards its ejection, and
  // unless Uncounted (a batch line's) in the replica's failure and ejection metrics.
  enum class Metrics { Counted, Uncounted };
  void record(const std::string& deployment, int index, bool ok, Metrics metrics = Metrics::Counted);
  // Replica `index` answered with `status`, a replica failure (replica_failure.h): counted per
  // replica and status in the hub's metrics.
  void count_refusal(const std::string& deployment, int index, int status) {
    state_.metrics.count_refusal(deployment, index, status);
  }

  // Holds `tokens` of the API key's daily quota for one request (KeyBook::hold); false, with the
  // 429 (or 401: revoked meanwhile) sent, when they do not fit. settle() ends the hold.
  bool hold_tokens(const std::string& key_id, int64_t tokens, net::ResponseWriter& w);
  // Ends a hold: the tokens the answer in `metered` used count when it was `answered`, else none.
  void settle(const std::string& key_id, int64_t held, bool answered, const MeteredWriter& metered,
              size_t request_bytes);

  const Clock& clock() const { return state_.clock; }

 private:
  // Ready and allowed traffic by every rule but the transport's.
  bool eligible(const ReplicaView& r, const std::set<std::string>& excluded) const;
  void measure(const std::string& deployment, const Reservation& r, const std::optional<AnswerSample>& sample);

  HubState& state_;
  TransportOf transport_of_;
  std::mutex lines_mu_;
  std::map<std::string, std::unique_ptr<WaitingLine>> lines_;  // guarded by lines_mu_
};

}  // namespace cellserve::fleet
