// The hub's internals. One concept a file:
//   hub.cpp              lifecycle and the route table
//   agent_admission.cpp  challenges, tunnels and registration of agents
//   agent_heartbeat.cpp  each agent's heartbeat: pushing assignments, polling its status
//   reconcile.cpp        the reconcile loop: offline agents, matching, promotions
//   api_processors.cpp, api_deployments.cpp, api_market.cpp   the REST API, per resource
//   replica_proxy.cpp    forwarding a user's request to a replica
//   deployment_endpoint.cpp  a deployment's own endpoint: routing, its queue, failover
//   replica_registry.h   the in-memory view of replicas that the request path reads
#pragma once

#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "fleet/batch/batch_store.h"
#include "fleet/crypto/secret_box.h"
#include "fleet/hub/agent_links.h"
#include "fleet/hub/batch_workers.h"
#include "fleet/hub/device_attestation.h"
#include "fleet/hub/files_token.h"
#include "fleet/hub/hub.h"
#include "fleet/hub/hub_metrics.h"
#include "fleet/hub/hub_origin.h"
#include "fleet/hub/key_book.h"
#include "fleet/hub/replica_registry.h"
#include "fleet/hub/route_choice.h"
#include "fleet/hub/waiting_line.h"
#include "fleet/matcher/matcher.h"
#include "fleet/spec/replica_address.h"
#include "fleet/store/store.h"
#include "fleet/tls/tls.h"
#include "net/bearer.h"
#include "net/http_server.h"
#include "net/http_types.h"
#include "net/json_error.h"
#include "net/route_table.h"

namespace cellserve::fleet {

int64_t now_ms();

// The replica a granted request goes to, and its place in the in-flight counts.
struct Reservation {
  int index = -1;
  std::string processor_id;  // the device: what a failed attempt excludes (an index may change hands)
  std::shared_ptr<AgentLink> link;
  ReplicaRegistry::InFlight in_flight;
  double estimate_s = 0;  // route_choice's estimate for the request on this replica
};

struct Hub::Impl {
  HubOptions options;
  std::unique_ptr<Store> store;
  ReplicaRegistry registry;
  HubMetrics metrics;
  net::Handler files;
  FilesTokens files_tokens;                        // agents' download tokens for /files/ on a closed hub
  SecretBox secrets;                               // [env] values at rest (DATA_DIR/secrets.key)
  std::unique_ptr<DeviceAttestation> attestation;  // checked at every registration
  // Replaces each [env] value of `spec` with its sealed form, before it reaches the store. A
  // value equal to `old`'s keeps its stored seal, so re-applying a spec raises no secrets version.
  void seal_env(DeploymentSpec& spec, const DeploymentSpec* old = nullptr) const;
  // The key deployment `deployment`'s replicas require of every request (DeploymentSecrets).
  std::string replica_key(const std::string& deployment, int64_t created_ms) const;
  // The secrets each device gets for each deployment, sealed to it: one seal per device,
  // deployment and secrets version, so an unchanged assignment is not pushed again. Guarded by
  // state_mu; entries of removed deployments and devices are dropped each reconcile round.
  struct SealedSecrets {
    int64_t created_ms = 0;
    int64_t version = 0;
    std::string sealed;
    std::string challenge;  // sent beside the seal (AssignmentMessage::secrets_challenge)
    std::string proof;      // the acknowledgement only a device that opened `sealed` can compute
  };
  std::map<std::pair<std::string, std::string>, SealedSecrets> sealed_secrets;  // (processor, deployment)
  // The sealed secrets of deployment `d` for `processor` (from the cache, or sealed now); "" when
  // a stored secret does not open (logged) or the processor id is not a key.
  const std::string& sealed_for(const std::string& processor, const Deployment& d);
  HubOrigins origins;  // what an agent's tunnel signature may name (set once the port is bound)
  net::RouteTable routes;
  std::unique_ptr<net::HttpServer> http;
  std::unique_ptr<TlsTerminator> tls;  // in front of `http` (on loopback) when TLS is on

  std::thread reconcile_thread;
  std::mutex mu;  // guards stopping and wake_requested
  std::condition_variable wake;
  bool stopping = false;
  bool wake_requested = false;

  // Serializes every change to processor and replica rows (heartbeats, matching, the REST API)
  // with the registry refresh that follows it. Never held across network I/O.
  std::mutex state_mu;
  // Guarded by state_mu: processors on which a deployment failed for good (never matched to it
  // again while the hub runs), and how many devices each replica has failed on.
  RefusedHomes refused_homes;
  std::map<std::pair<std::string, int>, int> failed_homes;
  // Guarded by state_mu: each connected device's state at its last status poll (live, never
  // stored); dropped when its tunnel closes.
  std::map<std::string, DeviceState> device_states;
  // Fills each processor's `device` from device_states. REQUIRES state_mu.
  void attach_device_states(std::vector<Processor>& processors) const;
  // A replica that failed for good on this many devices stays failed.
  static constexpr int kMaxHomesPerReplica = 3;

  // Each deployment's queue of requests waiting for a free replica (created on first use).
  std::mutex lines_mu;
  std::map<std::string, std::unique_ptr<WaitingLine>> lines;

  // The Files and Batches API (api_batches.cpp) and the batch runner (batch_runner.cpp).
  std::unique_ptr<BatchStore> batch_store;
  std::string batch_files_dir;   // DATA_DIR/batch/files
  net::RouteTable batch_routes;  // matched against the path after /d/<deployment>/v1
  // Batch uploads: the largest file a client may upload (OpenAI's limit is 200 MB).
  static constexpr uint64_t kMaxBatchFileBytes = 256ull << 20;
  std::string batch_file_path(const std::string& id) const;
  void add_batch_routes();
  // Whether the HTTP server spools this request's body to disk: an upload to /d/<dep>/v1/files
  // by a caller that route admits.
  bool spools_upload(const net::HttpRequest& head) const;
  // The data path is open while no admin key is set and no API key was ever created.
  bool open_data_path() const { return options.api_key.empty() && !keys.any(); }
  bool is_admin_key(const std::string& presented) const {
    return !options.api_key.empty() && net::constant_time_equal(presented, options.api_key);
  }
  // Answers `req` when `rest` is a Files or Batches path (true); false for a model request.
  bool serve_batch_api(const net::HttpRequest& req, net::ResponseWriter& w, const std::string& deployment,
                       const std::string& key_id, const std::string& rest);
  // What a caller of the deployment's Files and Batches API sees: the deployment as created now,
  // and of its files and batches only those of the caller's API key ("": the admin, all).
  BatchStore::Scope batch_scope(const std::string& deployment, const std::string& key_id);
  std::optional<BatchFile> deployment_file(const BatchStore::Scope& scope, const std::string& id);
  std::optional<Batch> deployment_batch(const BatchStore::Scope& scope, const std::string& id);
  void upload_file(const net::HttpRequest& req, const BatchStore::Scope& scope, net::ResponseWriter& w);
  void create_batch(const net::HttpRequest& req, const BatchStore::Scope& scope, net::ResponseWriter& w);
  void cancel_batch(const BatchStore::Scope& scope, const std::string& id, net::ResponseWriter& w);
  void batch_throughput(const BatchStore::Scope& scope, const std::string& id, net::ResponseWriter& w);
  // Removes a file's record and bytes (deleted by its owner, expired, or its deployment deleted).
  void remove_batch_file(const std::string& id);
  BatchWorkers batch_workers;
  std::thread batch_thread;
  void batch_loop();
  void batch_round();
  void validate_batch(Batch& b, int64_t now);
  void dispatch_batch_lines(const Batch& b);
  void run_batch_line(const Batch& b, const DeploymentView& dep, const BatchLine& l, Reservation r);
  void finalize_batch(Batch& b, BatchStatus terminal, int64_t now);

  // Declared last so that it is destroyed first: a link's destructor joins its heartbeat, which
  // uses the members above.
  AgentLinks links;

  void log(const std::string& line) const;
  void request_reconcile();
  // Reloads the registry from the store. Call with state_mu held.
  void refresh_registry();

  // hub.cpp
  void add_routes();
  // DNS rebinding: a hub without an admin key answers only Hosts that are an address literal,
  // localhost or under --domain (net/host_check.h).
  bool host_allowed(const std::string& host_header) const;
  void handle(const net::HttpRequest& req, net::ResponseWriter& w);

  // agent_admission.cpp
  void issue_challenge(const net::HttpRequest& req, net::ResponseWriter& w);
  void open_tunnel(const net::HttpRequest& req, net::ResponseWriter& w);

  // agent_heartbeat.cpp
  void heartbeat(AgentLink& link);
  void push_assignments(AgentLink& link);
  void poll_agent(AgentLink& link);

  // reconcile.cpp
  void reconcile_loop();
  void reconcile_once();
  // Removes the rows a scale-down left draining once no request is in flight to them. With
  // state_mu held.
  void remove_drained_rows(const std::vector<Deployment>& deployments, int64_t now);
  // One round of every deployment's rolling update (fleet/matcher/rollout.h). REQUIRES state_mu.
  void roll_out(const std::vector<Deployment>& deployments, const std::vector<Processor>& processors, int64_t now);

  // api_*.cpp; each needs the admin key (checked in hub.cpp).
  void list_processors(const net::HttpRequest& req, net::ResponseWriter& w);
  // api_history.cpp: GET /api/v1/processors/{id}/history, what `verify --hub` checks against.
  void processor_history(const net::HttpRequest& req, const std::string& id, net::ResponseWriter& w);
  void list_deployments(const net::HttpRequest& req, net::ResponseWriter& w);
  void create_deployment(const net::HttpRequest& req, net::ResponseWriter& w);
  void show_deployment(const std::string& name, net::ResponseWriter& w);
  void delete_deployment(const std::string& name, net::ResponseWriter& w);
  void scale_deployment(const net::HttpRequest& req, const std::string& name, net::ResponseWriter& w);
  // PUT: creates the deployment, or changes in place what may change (counts, price, endpoint).
  void apply_deployment(const net::HttpRequest& req, const std::string& name, net::ResponseWriter& w);
  void drain_replica(const std::string& name, const std::string& index, bool drain, net::ResponseWriter& w);
  void market(const net::HttpRequest& req, net::ResponseWriter& w);
  // api_secrets.cpp: sets (or removes) one secret of deployment `name`.
  void set_secret(const net::HttpRequest& req, const std::string& name, const std::string& secret, bool remove,
                  net::ResponseWriter& w);
  // api_keys.cpp
  void create_api_key(const net::HttpRequest& req, net::ResponseWriter& w);
  void list_api_keys(const net::HttpRequest& req, net::ResponseWriter& w);
  void revoke_api_key(const std::string& id, net::ResponseWriter& w);
  // Writes the keys' changed usage and revocations to the store (each reconcile round).
  void flush_key_usage();
  // api_enrollment.cpp
  void create_enrollment_token(const net::HttpRequest& req, net::ResponseWriter& w);
  void list_enrollment_tokens(const net::HttpRequest& req, net::ResponseWriter& w);
  void withdraw_enrollment_token(const std::string& id, net::ResponseWriter& w);
  void set_processor_enrollment(const net::HttpRequest& req, const std::string& id, Enrollment e,
                                net::ResponseWriter& w);
  // Whether the agent `id` may open a tunnel (a revoked device never; on a closed hub only an
  // enrolled one, or one presenting a valid enrolment token, which it spends); *enrollment is
  // what to record for it. PermissionDenied names the reason and what the operator can do.
  // Enrolment is written here (token, open hub) and by approve/revoke, never by registration.
  // `address`: where the join came from (pending devices are bounded per address).
  Status admit(const std::string& id, const std::string& enroll_token, const std::string& address);
  // A device that registered without a valid attestation loses the replicas of attested_only
  // deployments at once (they are matched again). With state_mu held.
  void evict_unattested(const std::string& processor_id, const std::string& why, int64_t now);
  // Unenrolled devices recorded for approval at most (each new key is free to make).
  static constexpr size_t kMaxPendingProcessors = 1000;
  static constexpr size_t kMaxPendingPerAddress = 16;
  // A pending device unseen this long is forgotten (it can ask again, or be approved by id).
  static constexpr int64_t kPendingLifetimeMs = 24LL * 3600 * 1000;

  // replica_proxy.cpp
  // `key_id`: the API key the request came with ("" : the admin key, or an open hub); the
  // tokens it used count against that key's daily quota.
  void proxy_replica(const net::HttpRequest& req, net::ResponseWriter& w, const ReplicaAddress& address,
                     const std::string& key_id);

  // deployment_endpoint.cpp; `rest` is the path after "/v1" ("/chat/completions").
  void serve_deployment(const net::HttpRequest& req, net::ResponseWriter& w, const std::string& deployment,
                        const std::string& key_id, const std::string& rest);
  void route_request(const net::HttpRequest& req, net::ResponseWriter& w, const DeploymentView& deployment,
                     const std::string& rest);
  // Reserves the best routable replica for `work` on a device outside `excluded` into `out`.
  // Failed attempts exclude devices, not indexes: a spare promoted into a failed replica's index
  // is a fresh candidate.
  bool reserve_replica(const std::string& deployment, const RequestWork& work, const std::set<std::string>& excluded,
                       Reservation& out);
  // A short request on `first`, and after the hedge delay also on a second free replica; the
  // first whole answer goes to `w` (true). False when no leg answered: their devices join
  // `failed` and `last_failure` says why.
  bool forward_hedged(const net::HttpRequest& forwarded, Reservation first, const DeploymentView& dep,
                      const RequestWork& work, const std::string& rest, std::set<std::string>& failed,
                      std::string& last_failure, net::ResponseWriter& w);
  WaitingLine& waiting_line(const std::string& deployment);
  std::map<std::string, size_t> queue_lengths();
  // Whether a user's request to `deployment` may go on. Once an admin key is set or any API key
  // exists, it needs the admin key or an API key for that deployment within its quotas; false
  // after answering 401, 403 or 429 in OpenAI's shape. *key_id: the API key used ("" : none).
  bool user_allowed(const net::HttpRequest& req, net::ResponseWriter& w, const std::string& deployment,
                    std::string* key_id);
  // Holds `tokens` of the key's daily quota for one request (KeyBook::hold); false, with the
  // 429 (or 401: revoked meanwhile) sent, when they do not fit. The caller settles the hold.
  bool hold_tokens(const std::string& key_id, int64_t tokens, net::ResponseWriter& w);
  KeyBook keys;
  // How long an agent may leave its status polls (heartbeats, one per poll interval) unanswered
  // before its replicas get no new requests: three polls, and at least 3 s (a loaded device may
  // be slow to answer one).
  std::chrono::milliseconds heartbeat_limit() const {
    return std::max<std::chrono::milliseconds>(3 * options.poll_interval, std::chrono::seconds(3));
  }
  // The deployment's ready, reachable, non-ejected replicas and spares whose agent answers its
  // heartbeats, less those on `excluded` devices.
  std::vector<ReplicaView> routable_replicas(const std::string& deployment, const std::set<std::string>& excluded);
};

using net::send_error;
void send_json(net::ResponseWriter& w, int status, const std::string& body);

}  // namespace cellserve::fleet
