// Hub-to-hub links: how a request that reaches this hub gets to an agent whose tunnel another hub
// holds (docs/cluster.md, "Hub to hub").
//
// Every hub dials every other live hub once (kHubLinkPath, an HTTP/1.1 Upgrade authenticated both
// ways with the cluster key: peer_link_auth.h) and then runs, on that socket, a TunnelServer whose
// handler relays each request to one of its *own* agents. The hub it dialed holds the socket's
// TunnelClient and sends requests for those agents through it. So hub 1 reaches an agent on hub 2
// through the link hub 2 dialed into hub 1, and each pair of hubs has two links, one each way.
//
// Relayed requests name their processor in kRelayProcessorHeader, which the receiving hub strips;
// it delivers them only to a local agent link (never to another peer: no loops) and answers a
// marked 503 when that agent is not connected there, which the sending side turns into a failed
// attempt with nothing sent, so the ReplicaForwarder tries another replica.
//
// Load: every load_interval, each hub sends every peer it can send to (PUT kHubLoadPath on the
// link) the load of the replicas whose tunnels it holds (replica_loads.h) when it changed, and at
// least once per poll interval. The receiving hub keeps only the entries for processors its
// locator places on that peer.
//
// Bounds: one link each way per peer (a newer one replaces the older), the tunnel's windows and
// max_concurrent_streams per link, a deadline on every dial step and load message, challenges
// few and single use, load messages of kMaxReplicaLoads entries.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "fleet/hub/peer_link_auth.h"
#include "fleet/hub/peer_link_dial.h"
#include "fleet/hub/replica_loads.h"
#include "fleet/tunnel/replica_transport.h"
#include "fleet/tunnel/tunnel_client.h"
#include "fleet/tunnel/tunnel_options.h"
#include "net/route_table.h"

namespace cellserve::fleet {

// The processor a relayed request is for (set by the sending hub, stripped by the receiving one).
inline constexpr std::string_view kRelayProcessorHeader = "x-cellserve-relay-processor";
// Where a hub sends its replicas' load to a peer (over the link, never on a listener's routes).
inline constexpr std::string_view kHubLoadPath = "/internal/v1/hub-load";
// Marks the receiving hub's own 503 "that agent is not connected here" (never an agent's answer:
// the receiving hub strips it from what agents send).
inline constexpr std::string_view kRelayRefusedHeader = "x-cellserve-relay-refused";

// A live hub as the directory lists it.
struct PeerHub {
  std::string id;
  std::string peer_url;  // http(s)://host:port where it accepts hub links
};

struct HubPeersOptions {
  std::chrono::milliseconds poll_interval{1000};  // how often the directory is read
  std::chrono::milliseconds dial_timeout{5000};   // each step of a dial (connect, challenge, upgrade)
  std::chrono::milliseconds min_backoff{250};     // between failed dials of one peer, doubling ...
  std::chrono::milliseconds max_backoff{10000};   // ... up to this
  // An accepted link from a hub missing from the directory is kept this long (the directory may
  // not list a hub that has just started and dialed at once).
  std::chrono::milliseconds unlisted_grace{5000};
  TunnelOptions tunnel;                         // both ends of every link; max_concurrent_streams caps relays per link
  std::shared_ptr<TlsContext> tls;              // to dial https peers
  std::function<void(const std::string&)> log;  // what happened to links (no secrets)
  // Called with net::peer_port() of each link's connection this hub accepted, once upgraded and
  // authenticated (the TLS front stops counting it as a client: HubState::tunnel_opened). May be
  // unset.
  std::function<void(int backend_port)> upgraded;
  // Load sharing (none when either is unset): this hub's replicas' loads, sent to the peers at
  // most every load_interval; and what to do with the entries a peer sent for its own replicas.
  std::chrono::milliseconds load_interval{250};
  std::function<std::vector<ReplicaLoad>()> local_loads;
  std::function<void(const std::vector<ReplicaLoad>&)> apply_loads;
  // Queue sharing, in the same messages: this hub's queues that have requests waiting, and what
  // to do with a peer's (`peer_id`: the authenticated hub that sent them; empty: none waiting).
  std::function<std::vector<QueueLoad>()> local_queues;
  std::function<void(const std::string& peer_id, const std::vector<QueueLoad>&)> apply_queues;
};

class HubPeers {
 public:
  // The live hubs other than this one may be listed or not: this hub is skipped.
  using Directory = std::function<std::vector<PeerHub>()>;
  // The hub id holding processor `processor_id`'s tunnel, nullopt when none.
  using Locator = std::function<std::optional<std::string>(const std::string& processor_id)>;
  // This hub's own, routable link to `processor_id`'s agent (null when it has none): the only
  // place a relayed request is delivered.
  using LocalTransport = std::function<std::shared_ptr<ReplicaTransport>(const std::string& processor_id)>;

  // `cluster_key`: the raw key bytes; empty disables links (none dialed, every one refused).
  HubPeers(std::string_view cluster_key, std::string hub_id, Directory directory, Locator locator, LocalTransport local,
           HubPeersOptions options = {});
  // stop().
  ~HubPeers();
  HubPeers(const HubPeers&) = delete;
  HubPeers& operator=(const HubPeers&) = delete;

  // GET kHubLinkChallengePath and GET kHubLinkPath (the upgrade).
  void add_routes(net::RouteTable& routes);
  // Starts reading the directory and dialing peers (nothing without a cluster key).
  void start();
  // Closes every link and joins the threads (a dial in progress ends within its deadline).
  void stop();

  // A transport to processor `processor_id`'s agent through the hub that holds its tunnel; null
  // when the locator names no other hub or that hub has no open link into this one.
  std::shared_ptr<ReplicaTransport> transport_to(const std::string& processor_id) const;

  // The hubs this hub can send through (their links into it are open), and those it serves (its
  // links into them are open). Sorted.
  std::vector<std::string> reachable_hubs() const;
  std::vector<std::string> serving_hubs() const;

  const std::string& hub_id() const { return hub_id_; }

 private:
  struct Outbound;  // one dialed link and its thread (hub_peers.cpp)
  struct Inbound {
    std::shared_ptr<TunnelClient> client;
    std::chrono::steady_clock::time_point accepted;
  };

  void issue_challenge(net::ResponseWriter& w);
  void accept_link(const net::HttpRequest& req, net::ResponseWriter& w);
  void install_inbound(const std::string& peer_id, std::shared_ptr<TunnelClient> client);
  // The dialer's TunnelServer handler: one relayed request to a local agent, or `peer_id`'s load
  // message.
  void relay(const net::HttpRequest& req, net::ResponseWriter& w, const std::string& peer_id) const;
  void accept_loads(const net::HttpRequest& req, net::ResponseWriter& w, const std::string& peer_id) const;
  void loads_loop();
  void send_loads(const std::string& body, std::set<std::string>& failing);
  void maintain_loop();
  void maintain(const std::vector<PeerHub>& live);
  void run_outbound(Outbound& out);
  void log(const std::string& line) const;

  const std::string link_key_;  // hub_link_key(cluster key); "" when links are disabled
  const std::string hub_id_;
  const Directory directory_;
  const Locator locator_;
  const LocalTransport local_;
  const HubPeersOptions options_;
  const PeerDialer dialer_;
  LinkChallenges challenges_;

  mutable std::mutex mu_;
  std::condition_variable wake_;
  bool stopping_ = false;                                      // guarded by mu_
  std::map<std::string, Inbound> inbound_;                     // peer id → its link into this hub
  std::map<std::string, std::shared_ptr<Outbound>> outbound_;  // peer id → this hub's link into it
  std::thread maintainer_;
  std::thread loads_sender_;
};

}  // namespace cellserve::fleet
