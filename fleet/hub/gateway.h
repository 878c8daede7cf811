// The data path of every deployment: its own endpoint /d/<deployment>/v1/... (or Host
// <deployment>.<domain>), which chooses a replica for each request (route_choice.h), queues it
// at the hub while every replica is busy (waiting_line.h), hedges short requests and fails over
// to another replica when one fails before its first byte or answers with a failure such as 500
// or 429 (failover_writer.h); and each
// replica's own address /d/<deployment>/r/<n>/... Both send through the ReplicaForwarder and
// read only the registry, never the store.
#pragma once

#include <chrono>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "fleet/hub/failover_writer.h"
#include "fleet/hub/gateway_request.h"
#include "fleet/hub/hub_state.h"
#include "fleet/hub/replica_forwarder.h"
#include "fleet/hub/spot_checks.h"
#include "fleet/spec/replica_address.h"
#include "net/route_table.h"

namespace cellserve::fleet {

class Gateway {
 public:
  // What the attempts on one request have left so far.
  struct Attempts {
    std::set<std::string> failed;    // devices that failed this request
    std::string last_failure;        // why the last one did
    int refused_status = 0;          // the last replica failure's status (replica_failure.h), 0: none
    std::optional<HeldAnswer> held;  // and its answer, held back
    std::vector<int> unconfirmed;    // replicas that refused it, counted once another answers it
    bool timed_out = false;          // the last replica tried sent no first byte within the hub's deadline
  };

  // `checks`: where answers go to be cross-checked (spot_checks.h); null: never.
  Gateway(HubState& state, ReplicaForwarder& forwarder, SpotChecks* checks = nullptr)
      : state_(state), forwarder_(forwarder), checks_(checks) {}

  // The deployment endpoint and the replica addresses; added after every other /d/ route (the
  // BatchService's), whose paths they would otherwise take.
  void add_routes(net::RouteTable& routes);

  // A request to the deployment endpoint, its caller admitted (user_access.h): `rest` is the path
  // after "/v1" ("/chat/completions"); `key_id` the API key used ("" : none).
  void serve_deployment(const net::HttpRequest& req, net::ResponseWriter& w, const std::string& deployment,
                        const std::string& key_id, const std::string& rest);
  // A request to one replica's address, its caller admitted; the tokens it used count against
  // `key_id`'s daily quota.
  void proxy_replica(const net::HttpRequest& req, net::ResponseWriter& w, const ReplicaAddress& address,
                     const std::string& key_id);

  // Replicas one request may be sent to before its failure is the answer.
  static constexpr int kMaxAttempts = 3;
  // How long a request waits when the deployment has ready replicas but none can be reached now
  // (their agents are re-dialing another hub, or a hub link is being dialed again): a hub's
  // failover takes about a second; past this the request gets 504 as any queued one.
  static constexpr std::chrono::milliseconds kUnreachableReadyWait{10000};

 private:
  // How long a request may wait in `name`'s line: `wait_limit` when a replica is routable, less
  // when ready replicas only lack their transport this moment (kUnreachableReadyWait); nullopt
  // once it answered 503 on `w` (nothing can take the request).
  std::optional<std::chrono::milliseconds> line_limit_for(const std::string& name, std::chrono::milliseconds wait_limit,
                                                          net::ResponseWriter& w);
  // `body`: the request's body as parse_request_body() read it (an empty object for a GET).
  void route_request(const net::HttpRequest& req, const Result<boost::json::object>& body, net::ResponseWriter& w,
                     const DeploymentView& deployment, const std::string& rest);
  // A short request on `first`, and after the hedge delay also on a second free replica; the
  // first whole answer goes to `w` (true). False when no leg answered: their devices join
  // `tries.failed` and `tries.last_failure` says why, and `tries.held` keeps the last replica
  // failure answered (replica_failure.h), for the user when no replica is left to try. A leg's
  // failure answer counts against its replica when another leg answered; else its index joins
  // `tries.unconfirmed` (counted once another replica answers the request).
  bool forward_hedged(const net::HttpRequest& forwarded, Reservation first, const DeploymentView& dep,
                      const RequestWork& work, const std::string& rest, Attempts& tries, net::ResponseWriter& w);
  // The answer once no replica can take the request again: the last replica's own refusal as it
  // sent it (a 429 with its Retry-After, a 500 with its message), else the hub's own error.
  void answer_exhausted(const std::string& deployment, Attempts& tries, net::ResponseWriter& w);

  HubState& state_;
  ReplicaForwarder& forwarder_;
  SpotChecks* checks_;
};

}  // namespace cellserve::fleet
