// `cellserve hub`: the fleet's control plane and front door. It keeps the processor registry,
// the deployments and their replicas in a Store (SQLite under --data-dir), accepts agents'
// outbound tunnels (fleet/spec/agent_protocol.h), matches replicas to processors
// (fleet/matcher), pushes assignments, polls every agent's status, and forwards each replica's
// OpenAI API at /d/<deployment>/r/<n>/v1/... (or <deployment>-<n>.<domain>) through the tunnel
// of the processor serving it. docs/fleet.md describes the whole.
//
// Four services over one state, each adding its routes to the one route table (hub.cpp):
//   hub.cpp               start, stop, the wiring and the route table; Host-addressed requests
//   hub_state.h           HubState: store, registry, links, keys, metrics, secrets; the locks' contracts
//   replica_forwarder.h   the one way a request reaches a replica: waiting lines, reservation,
//                         replica_path() addressing, first-byte deadline, results, token holds
//   gateway.h             Gateway: the deployment endpoint (gateway.cpp), hedging (hedge.cpp),
//                         a replica's own address (replica_proxy.cpp); user_access.h admits users
//   batch_service.h       BatchService: the Files and Batches API (batch_api.cpp) and the
//                         runner (batch_runner.cpp) on batch.db (batch_service.cpp)
//   supervisor.h          Supervisor: agent admission (agent_admission.cpp), heartbeats
//                         (agent_heartbeat.cpp), the reconcile loop and rollouts (reconcile.cpp)
//   admin_api.h           AdminApi: /api/v1, one file per resource (api_*.cpp), /metrics, /files
// The parts they use: route_choice, waiting_line, replica_registry, key_book, hub_metrics,
// gateway_request, token_reservation, the writers (failover, relay, metered, buffered,
// first_byte_deadline), device_headers, device_attestation, files_token, files_access,
// hub_origin, agent_links, batch_workers.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"

namespace cellserve::fleet {

// The most client connections --max-connections allows: each holds a thread (two behind TLS,
// the terminator's and the server's), and evicted ones wind down beside new ones.
inline constexpr int kMaxHubConnections = 8192;

struct HubOptions {
  std::string host = "127.0.0.1";
  int port = 8090;       // 0: any free port (tests); see Hub::port()
  std::string data_dir;  // hub.db (the store) and files/ (served at /files/)
  // The store: a PostgreSQL URL (postgresql://...) or a SQLite file path; "": DATA_DIR/hub.db.
  // fleet/store/open_store.h.
  std::string store;
  // The key file that seals secrets at rest and authenticates hubs to each other
  // (--cluster-key-file; `cellserve hub cluster-key FILE` makes one). Required on a PostgreSQL
  // store; "": DATA_DIR/secrets.key (one SQLite hub).
  std::string cluster_key_file;
  // Where the other hubs dial this one (--peer-url); "": the first public URL, else the
  // listener's http(s)://host:port.
  std::string peer_url;
  // The PEM CA that signed the other hubs' certificates, to dial https peers (--peer-ca); "": the
  // system's store. Used when this hub serves TLS or the flag is given.
  std::string peer_ca;
  std::string domain;  // when set, Host "<deployment>-<n>.<domain>" reaches that replica
  // The URLs agents dial this hub at (--public-url), e.g. "https://hub.example:8443". An agent's
  // tunnel signature names the origin it dialed: these and the listen address are accepted
  // (fleet/hub/hub_origin.h); on a wildcard address only these, or any name when none is given.
  // An open hub also answers these hosts (DNS rebinding, host_allowed).
  std::vector<std::string> public_urls;
  // When set, the hub is closed: /api/v1/*, /metrics and every deployment and replica address
  // need "Authorization: Bearer <key>", and /files/ serves only that key or an agent's download
  // token (fleet/hub/files_token.h).
  std::string api_key;
  // Without an api_key the hub refuses to listen on any address but loopback, unless this is set
  // (`--insecure`): an open hub would give its models and its replicas to anyone who reaches it.
  bool insecure = false;
  std::string tls_cert;  // PEM certificate chain and key: serve HTTPS (users and agents) on host:port
  std::string tls_key;
  std::vector<std::string> cors_origins;  // web origins allowed to call the hub (net/cors.h)
  // Device attestation (docs/attestation.md), checked at every registration: the trusted roots
  // (a PEM file; "" : Google's hardware attestation roots, built in), Google's attestation status
  // list (an http(s) URL or a file, fetched at start and every attestation_status_refresh; a
  // change re-judges every connected attested device at once; "" : none), the lowest OS patch
  // level accepted (YYYYMM; 0: any), and the apps allowed to hold attested keys
  // ("PACKAGE[:SIGNING_DIGEST_HEX]"; empty: any).
  std::string attestation_roots;
  std::string attestation_status;
  std::chrono::milliseconds attestation_status_refresh{std::chrono::hours(1)};
  int attestation_min_patch = 0;
  std::vector<std::string> attestation_apps;
  // Client connections held at once (each has a thread; at the cap an idle one is evicted, else
  // 503), and per client IP address (0: no per-address cap; a backend that opens many
  // connections from one address needs more than the default).
  int max_connections = 1024;
  int max_connections_per_address = 64;
  // Agent tunnels held at once (one per device; each has a thread). Tunnels are authenticated
  // and counted here, not against the client caps above, behind TLS as behind a plain listener.
  int max_agents = kMaxHubConnections;
  std::chrono::milliseconds poll_interval{1000};  // agent status polls and matching
  std::chrono::milliseconds ping_timeout{10000};  // a tunnel silent this long is dead
  std::function<void(const std::string&)> log;    // one line per event; default: stderr
};

class Hub {
 public:
  // Opens the store, listens, and starts the reconcile loop. Errors name the file or address.
  static Result<std::unique_ptr<Hub>> start(HubOptions options);
  ~Hub();
  Hub(const Hub&) = delete;
  Hub& operator=(const Hub&) = delete;

  int port() const;
  // Reads tls_cert and tls_key again (SIGHUP): new connections use them, open ones are kept.
  // On an error the old certificate stays in use; InvalidArgument when not serving HTTPS.
  Status reload_tls();
  // Stops listening, closes every tunnel and the store. Idempotent.
  void stop();

  struct Impl;

 private:
  explicit Hub(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace cellserve::fleet
