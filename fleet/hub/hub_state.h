// The state the hub's services share: the store, the in-memory replica registry, the connected
// agents, the API keys, the metrics and the secrets, with each lock's contract stated here once.
// The services (hub.h lists them) own behaviour, not state; each takes a HubState& and a part of
// what it holds only where the part is its own (the Gateway's waiting lines, the BatchService's
// batch store, the Supervisor's sealed secrets).
//
// Locks, in the order they may nest (never the other way):
//   state_mu   serializes every change to processor and replica rows (registration, heartbeats,
//              matching, the REST API) with the registry refresh that follows it, and guards the
//              maps below it. Never held across network I/O or while waiting for a request.
//   Inside the parts: ReplicaRegistry, KeyBook, AgentLinks, HubMetrics, TrafficSeries and the Store are each
//   thread-safe on their own and take only their own lock, so they may be called with state_mu
//   held or not.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <unistd.h>

#include "base/clock.h"
#include "base/log_sink.h"
#include "base/wakeup.h"
#include "fleet/crypto/secret_box.h"
#include "fleet/hub/agent_links.h"
#include "fleet/hub/agreement_book.h"
#include "fleet/hub/canary_book.h"
#include "fleet/hub/cluster_member.h"
#include "fleet/hub/device_attestation.h"
#include "fleet/hub/files_token.h"
#include "fleet/hub/hub.h"
#include "fleet/hub/hub_metrics.h"
#include "fleet/hub/key_book.h"
#include "fleet/hub/peer_queues.h"
#include "fleet/hub/replica_registry.h"
#include "fleet/hub/traffic_series.h"
#include "fleet/matcher/matcher.h"
#include "fleet/spec/agent_protocol.h"
#include "fleet/store/device_state.h"
#include "fleet/store/store.h"
#include "net/bearer.h"
#include "net/http_types.h"
#include "net/json_error.h"

namespace cellserve::fleet {

class TlsTerminator;

// Calendar milliseconds on the system clock (for code outside the hub's services).
int64_t now_ms();

// How long the hub may route from its in-memory registry after its last successful read of the
// store, beyond the one poll interval between two reads: past it, user routes answer 503 until the
// store answers again (docs/cluster.md). The registry is read once a round, so with a poll as long
// as this a live store looked lost at the end of every round.
inline constexpr std::chrono::milliseconds kMaxStaleRouting{5000};

struct HubState {
  HubState(HubOptions options, const Clock& clock)
      : stderr_log(options.log ? nullptr : std::make_unique<LogSink>(STDERR_FILENO)),
        options(std::move(options)),
        clock(clock),
        registry(clock) {}

  // Where log() writes when options.log is unset: stderr, never blocking the caller, who may hold
  // state_mu (base/log_sink.h). Declared first, so destroyed last: every member may log.
  std::unique_ptr<LogSink> stderr_log;
  const HubOptions options;
  const Clock& clock;  // every timer, queue, lease and heartbeat of the services reads this
  std::unique_ptr<Store> store;
  ReplicaRegistry registry;  // what the request paths read; refreshed from the store under state_mu
  HubMetrics metrics;
  TrafficSeries traffic{clock};   // each deployment's last hour, for the dashboard (api_traffic.cpp)
  PeerQueues peer_queues{clock};  // the other hubs' queues, for the autoscaler (peer_queues.h)
  KeyBook keys;                   // API keys, their quotas and usage (flushed to the store)
  // [env] values at rest: the cluster key (--cluster-key-file), else DATA_DIR/secrets.key.
  SecretBox secrets;
  // This hub among the hubs sharing the store: its id, heartbeat, the reconcile lease. Set by
  // Hub::start before anything can call into the services.
  std::unique_ptr<ClusterMember> member;
  std::unique_ptr<DeviceAttestation> attestation;  // checked at every registration
  FilesTokens files_tokens;                        // agents' download tokens for /files/ on a closed hub
  AgreementBook agreement;  // each device's spot checks; a quarantined device gets no traffic (spot_checks.h)
  CanaryBook canaries;      // each deployment's canaries

  std::mutex state_mu;
  // Guarded by state_mu: processors on which a deployment failed for good (never matched to it
  // again while the hub runs), and how many devices each replica has failed on.
  RefusedHomes refused_homes;
  std::map<std::pair<std::string, int>, int> failed_homes;
  // Guarded by state_mu: each connected device's state at its last status poll (live, never
  // stored); dropped when its tunnel closes.
  std::map<std::string, DeviceState> device_states;
  // Guarded by state_mu: the settings each replica's device reported it runs with (autotune's
  // choice), by (deployment, index), with the device that reported them; live, never stored.
  // Dropped when the device stops reporting them or its tunnel closes.
  struct ReportedTuning {
    std::string processor_id;
    TunedSettings settings;
  };
  std::map<std::pair<std::string, int>, ReportedTuning> tuned_settings;

  // Guarded by state_mu: the agents that answered a status poll since the last reconcile round,
  // whose liveness the round writes in one statement (Store::touch_processors) rather than one
  // write per poll.
  std::set<std::string> polled;
  // Guarded by state_mu: the deployments and replica rows as the registry last read them, with
  // the rows this hub wrote since. A status poll that reports what its row already says writes
  // nothing and reads nothing (agent_heartbeat.cpp); only a change reads the store.
  struct KnownRows {
    std::vector<Deployment> deployments;
    std::vector<Replica> rows;
    std::map<std::string, std::string> replica_keys;
  } known;

  // The TLS terminator in front of the hub once it listens (null without TLS). A connection
  // upgraded to an authenticated tunnel is named to it (tunnel_opened, with net::peer_port() of
  // the upgraded socket, read while it is surely open), so that agents' tunnels and hub links
  // count against their own bound (HubOptions::max_agents), not the clients' caps.
  std::atomic<TlsTerminator*> tls_front{nullptr};
  void tunnel_opened(int backend_port);

  // The clock's now() at the last successful refresh_registry(), in its ticks.
  std::atomic<Clock::duration::rep> registry_read_at{0};

  // Declared last so that it is destroyed first: a link's destructor joins its heartbeat, which
  // reads the members above.
  AgentLinks links;

  int64_t now_ms() const { return clock.wall_ms(); }

  // The cluster key's bytes (what hub-to-hub authentication derives its key from), "" when the hub
  // runs without --cluster-key-file. Never logged, stored or sent.
  const std::string& cluster_key() const {
    static const std::string none;
    return options.cluster_key_file.empty() ? none : secrets.key_bytes();
  }
  // Whether the registry was read from the store within one poll interval and kMaxStaleRouting:
  // user routes answer 503 otherwise.
  bool routing_fresh() const;
  void log(const std::string& line) const;
  // A store write whose failure a background loop cannot return: logged with its context
  // (base/log_if_failed.h); returns whether it succeeded, so what depended on it can wait.
  bool saved(const Status& s, std::string_view context) const;

  // The Supervisor's reconcile loop waits on it; anyone may ask it for a round now rather than at
  // its next interval.
  Wakeup reconcile{clock};
  void request_reconcile() { reconcile.request(); }

  // Reloads the registry from the store; when it could (true), routing is fresh again. REQUIRES
  // state_mu.
  bool refresh_registry();
  // The row (deployment, index) as last read or written by this hub, or null. REQUIRES state_mu.
  const Replica* known_row(const std::string& deployment, int index) const;
  // Replaces the known rows of `deployment` with `rows` (just read from the store, with this
  // hub's writes applied) and republishes the registry from what is known, without reading the
  // store. REQUIRES state_mu.
  void remember_rows(const std::string& deployment, const std::vector<Replica>& rows);
  // Fills each processor's `device` from device_states. REQUIRES state_mu.
  void attach_device_states(std::vector<Processor>& processors) const;
  // Writes the keys' revocations and bindings to the store, then re-loads every key from it (keys
  // created or revoked on other hubs, and the usage all hubs counted: fleet/hub/key_book.h).
  void flush_key_usage();

  // The key deployment `deployment`'s replicas require of every request (DeploymentSecrets).
  std::string replica_key(const std::string& deployment, int64_t created_ms) const;
  // Replaces each [env] value of `spec` with its sealed form, before it reaches the store. A
  // value equal to `old`'s keeps its stored seal, so re-applying a spec raises no secrets version.
  void seal_env(DeploymentSpec& spec, const DeploymentSpec* old = nullptr) const;

  // The data path is open while no admin key is set and no API key was ever created.
  bool open_data_path() const { return options.api_key.empty() && !keys.any(); }
  bool is_admin_key(const std::string& presented) const {
    return !options.api_key.empty() && net::constant_time_equal(presented, options.api_key);
  }
  // How long an agent may leave its status polls (heartbeats, one per poll interval) unanswered
  // before its replicas get no new requests: three polls, and at least 3 s (a loaded device may
  // be slow to answer one).
  std::chrono::milliseconds heartbeat_limit() const {
    return std::max<std::chrono::milliseconds>(3 * options.poll_interval, std::chrono::seconds(3));
  }
};

// "replica <deployment>/<index>": what a failed write of `r` is logged as.
std::string replica_context(const Replica& r);

void send_json(net::ResponseWriter& w, int status, const std::string& body);
using net::send_error;

}  // namespace cellserve::fleet
