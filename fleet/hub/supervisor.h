// Keeps the fleet as the deployments ask: admits agents (challenges, tunnels, registration;
// agent_admission.cpp), beats with each connected agent (pushing its assignments, polling its
// status; agent_heartbeat.cpp), and once per poll interval, or sooner when asked, reconciles
// (offline agents, matching, promotions, rolling updates; reconcile.cpp).
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <boost/json/value.hpp>

#include "base/wakeup.h"
#include "fleet/hub/autoscaler.h"
#include "fleet/hub/hub_origin.h"
#include "fleet/hub/hub_state.h"
#include "fleet/matcher/rollout.h"
#include "net/route_table.h"

namespace cellserve::fleet {

class Supervisor {
 public:
  explicit Supervisor(HubState& state) : state_(state), status_wakeup_(state.clock) {}

  // The agents' routes: a challenge, and the tunnel it opens.
  void add_routes(net::RouteTable& routes);
  // Starts the reconcile loop; `origins` are what an agent's tunnel signature may name (known
  // once the port is bound).
  void start(HubOrigins origins);
  // Joins the loop, once HubState::reconcile was stopped.
  void join();
  // The autoscaler the leader's rounds run (before start(); null: none).
  void set_autoscaler(Autoscaler* autoscaler) { autoscaler_ = autoscaler; }

  // Whether the agent `id` may open a tunnel (a revoked device never; on a closed hub only an
  // enrolled one, or one presenting a valid enrolment token, which it spends). PermissionDenied
  // names the reason and what the operator can do. Enrolment is written here (token, open hub)
  // and by approve/revoke, never by registration. `address`: where the join came from (pending
  // devices are bounded per address).
  Status admit(const std::string& id, const std::string& enroll_token, const std::string& address);

  // One reconcile round (the loop runs it every poll interval).
  void reconcile_once();

  // Unenrolled devices recorded for approval at most (each new key is free to make).
  static constexpr size_t kMaxPendingProcessors = 1000;
  static constexpr size_t kMaxPendingPerAddress = 16;
  // A pending device unseen this long is forgotten (it can ask again, or be approved by id).
  static constexpr int64_t kPendingLifetimeMs = 24LL * 3600 * 1000;
  // A replica that failed for good on this many devices stays failed.
  static constexpr int kMaxHomesPerReplica = 3;

 private:
  // agent_admission.cpp
  void issue_challenge(const net::HttpRequest& req, net::ResponseWriter& w);
  void open_tunnel(const net::HttpRequest& req, net::ResponseWriter& w);
  // Whether device `id` may hold a tunnel now (HubOptions::max_agents); else answers 503 on `w`.
  bool room_for_tunnel(const std::string& id, net::ResponseWriter& w);
  // A device that registered without a valid attestation loses the replicas of attested_only
  // deployments at once (they are matched again). REQUIRES state_mu.
  void evict_unattested(const std::string& processor_id, const std::string& why, int64_t now);

  // attestation_pinning.cpp (docs/attestation.md, "Pinning" and "Live revocation")
  // OK unless `id` is pinned to an attested key (and no key change was approved) and
  // `attested_signature` (base64 DER, X-Cellserve-Attested-Signature) is not that key's signature
  // of attested_tunnel_digest(origin, challenge, id): then Unauthenticated with the reason, which
  // is logged and kept on the pin for the operator.
  Status check_attested_handshake(const std::string& id, const std::string& origin, const std::string& challenge,
                                  const std::string& attested_signature);
  // After a registration's verdict: pins a newly attested device (or one whose key change was
  // approved) to its key, and records a key change held for approval. REQUIRES state_mu.
  void record_pin(const std::string& id, const attest::AttestationVerdict& verdict, const boost::json::value& evidence,
                  const std::optional<AttestationPin>& pin, int64_t now);
  // Judges every connected attested device again by the policy now; one that fails is recorded
  // not attested and loses its attested_only replicas at once, without reconnecting.
  void rejudge_attested(const std::string& why);
  // Fetches the status list every --attestation-status-refresh; re-judges when it changed.
  void status_loop();

  // agent_heartbeat.cpp
  void heartbeat(AgentLink& link);
  void push_assignments(AgentLink& link);
  void poll_agent(AgentLink& link);
  // Marks online, last seen `now`, the agents that answered a poll since the last round and are
  // still connected. REQUIRES state_mu.
  void write_polled_online(int64_t now);
  // The secrets version `rep` proves its device opened for `row`'s deployment (0 without a valid
  // proof of the version sealed to `processor`). REQUIRES state_mu.
  int64_t acked_version(const std::string& processor, const Replica& row, const ReplicaReport& rep) const;

  // reconcile.cpp
  void reconcile_loop();
  // Removes the links whose tunnel closed from AgentLinks, to be forgotten under state_mu.
  std::vector<std::shared_ptr<AgentLink>> take_closed_links();
  // Drops the closed links' tunnel records; a processor whose record still named this hub is
  // offline. REQUIRES state_mu.
  void forget_closed_links(const std::vector<std::shared_ptr<AgentLink>>& closed, int64_t now);
  // Drops this hub's tunnel record of `processor_id`; when it still named this hub, the processor
  // is offline (true). A record the store could not drop is tried again next round. REQUIRES
  // state_mu.
  bool drop_tunnel(const std::string& processor_id, int64_t now);
  // The leader's round: pending devices, dead hubs, agents no live hub holds, drained rows,
  // rolling updates, matching. Stops at once when the lease's deadline passes. REQUIRES state_mu.
  void lead_round(const ClusterMember::Members& members, int64_t now);
  // Marks offline every processor online in the store whose tunnel no live hub records. REQUIRES
  // state_mu.
  void mark_untunnelled_offline(const ClusterMember::Members& members, int64_t now);
  // Promotes spares and matches unserved replicas to free processors. REQUIRES state_mu.
  void match(std::vector<Processor>& processors, const std::vector<Deployment>& deployments, int64_t now);
  // Hands each of this hub's links its desired assignments; unlocks `lock` (state_mu) first.
  void push_own_assignments(std::unique_lock<std::mutex>& lock, int64_t now);
  // Removes the rows a scale-down left draining once no request is in flight to them. REQUIRES
  // state_mu.
  void remove_drained_rows(const std::vector<Deployment>& deployments, int64_t now);
  // One round of every deployment's rolling update (fleet/matcher/rollout.h). REQUIRES state_mu.
  void roll_out(const std::vector<Deployment>& deployments, const std::vector<Processor>& processors, int64_t now);
  // One step of deployment `d`'s rolling update on its rows; whether it changed a row.
  bool apply_rollout_step(const Deployment& d, const RolloutStep& step, std::vector<Replica>& rows, int64_t now);
  // The sealed secrets of deployment `d` for `processor` (from the cache, or sealed now); "" when
  // a stored secret does not open (logged) or the processor id is not a key. REQUIRES state_mu.
  const std::string& sealed_for(const std::string& processor, const Deployment& d);
  // The pin whose attested key `processor`'s secrets of `d` are sealed to as well: for an
  // attested_only deployment and a device whose helper offers ecdh; nullopt otherwise.
  std::optional<AttestationPin> attested_seal_key(const std::string& processor, const Deployment& d);

  HubState& state_;
  Autoscaler* autoscaler_ = nullptr;
  HubOrigins origins_;  // set by start(), before any agent can connect
  // The secrets each device gets for each deployment, sealed to it: one seal per device,
  // deployment and secrets version, so an unchanged assignment is not pushed again. Guarded by
  // state_mu; entries of removed deployments and devices are dropped each reconcile round.
  struct SealedSecrets {
    int64_t created_ms = 0;
    int64_t version = 0;
    std::string sealed;
    std::string challenge;     // sent beside the seal (AssignmentMessage::secrets_challenge)
    std::string proof;         // the acknowledgement only a device that opened `sealed` can compute
    std::string attested_key;  // the attested key it is sealed to as well ("" : the identity key only)
  };
  std::map<std::pair<std::string, std::string>, SealedSecrets> sealed_secrets_;  // (processor, deployment)
  // Guarded by state_mu: processors whose closed tunnel's record the store could not drop yet.
  std::set<std::string> undropped_tunnels_;
  std::thread thread_;
  Wakeup status_wakeup_;  // the status list loop's; stopped by join()
  std::thread status_thread_;
};

}  // namespace cellserve::fleet
