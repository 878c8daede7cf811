// The hub's start, stop and wiring: one HubState, the four services over it (Gateway,
// BatchService, Supervisor, AdminApi; hub.h's map), the ReplicaForwarder they send through, and
// the one route table they add their routes to.
#include "fleet/hub/hub.h"

#include <algorithm>
#include <chrono>
#include <filesystem>

#include <boost/asio/ip/address.hpp>

#include "fleet/crypto/identity.h"
#include "fleet/download/file_server.h"
#include "fleet/hub/admin_api.h"
#include "fleet/hub/batch_service.h"
#include "fleet/hub/cluster_directory.h"
#include "fleet/hub/cluster_load.h"
#include "fleet/hub/gateway.h"
#include "fleet/hub/hub_origin.h"
#include "fleet/hub/hub_peers.h"
#include "fleet/hub/hub_state.h"
#include "fleet/hub/replica_forwarder.h"
#include "fleet/hub/supervisor.h"
#include "fleet/hub/user_access.h"
#include "fleet/spec/replica_address.h"
#include "fleet/store/open_store.h"
#include "fleet/tls/tls.h"
#include "net/host_check.h"
#include "net/http_server.h"

namespace cellserve::fleet {
namespace {

namespace fs = std::filesystem;

// 127.0.0.0/8, ::1 and "localhost": only this machine can reach the hub.
bool loopback_host(const std::string& host) {
  if (host == "localhost") return true;
  boost::system::error_code ec;
  const boost::asio::ip::address a = boost::asio::ip::make_address(host, ec);
  return !ec && a.is_loopback();
}

// The transport to a connected agent's replicas (null when it has no tunnel); with
// `routable_only`, only while its tunnel is open and its heartbeat answered: a closed tunnel
// stays in `links` until the next reconcile and would fail every request sent to it in
// microseconds, so it is passed over from the moment it closes.
std::shared_ptr<ReplicaTransport> local_transport(HubState& state, const std::string& processor_id,
                                                  bool routable_only) {
  std::shared_ptr<AgentLink> link = state.links.find(processor_id);
  if (!link) return nullptr;
  if (routable_only && (link->tunnel->closed() || link->silent_for(state.heartbeat_limit()))) return nullptr;
  ReplicaTransport* tunnel = link->tunnel.get();
  return std::shared_ptr<ReplicaTransport>(std::move(link), tunnel);  // the link keeps its tunnel alive
}

// The agent's own link when it dialed this hub, else the link of the hub that holds its tunnel
// (hub_peers.h). `peers` is made in Hub::start, before the hub listens.
ReplicaForwarder::TransportOf agent_transports(HubState& state, const std::unique_ptr<HubPeers>& peers) {
  return [&state, &peers](const std::string& processor_id, bool routable_only) -> std::shared_ptr<ReplicaTransport> {
    if (auto local = local_transport(state, processor_id, routable_only)) return local;
    return peers ? peers->transport_to(processor_id) : nullptr;
  };
}

// The links to the other hubs of the cluster, keyed by the cluster key, named by this hub's member
// id, with the live hubs and the tunnels' owners read from the store (cluster_directory.h). A
// relayed request is only ever delivered to a routable local link, so it never travels on to a
// third hub. Without a cluster key (a hub on its own) it dials no hub and accepts none.
std::unique_ptr<HubPeers> make_peers(HubState& state, ClusterDirectory& directory, ReplicaForwarder& forwarder) {
  HubPeersOptions o;
  o.poll_interval = state.options.poll_interval;
  o.tunnel.ping_timeout = state.options.ping_timeout;
  o.tunnel.ping_interval = std::max(std::chrono::milliseconds(200), state.options.ping_timeout / 3);
  o.log = [&state](const std::string& line) { state.log(line); };
  o.upgraded = [&state](int backend_port) { state.tunnel_opened(backend_port); };
  if (!state.options.peer_ca.empty() || !state.options.tls_cert.empty()) {
    // Hubs serving TLS are dialed over TLS (their peer URLs are https).
    auto client = TlsContext::client(state.options.peer_ca);
    if (client.ok()) {
      o.tls = std::move(client).value();
    } else {
      state.log("https peer hubs cannot be dialed: " + client.status().message());
    }
  }
  // Requests relayed here count on their replica, and this hub's replicas' loads go to the peers
  // (cluster_load.h), so every hub routes with what all of them have in flight.
  auto local = [&state](const std::string& processor_id) {
    return counted_relay_transport(state, local_transport(state, processor_id, true));
  };
  o.local_loads = [&state] { return own_replica_loads(state); };
  o.apply_loads = [&state](const std::vector<ReplicaLoad>& loads) { apply_peer_loads(state, loads); };
  // And the queues, so that the leader's autoscaler sees requests waiting at every hub.
  o.local_queues = [&forwarder] { return own_queue_loads(forwarder); };
  o.apply_queues = [&state](const std::string& peer, const std::vector<QueueLoad>& queues) {
    state.peer_queues.put(peer, queues);
  };
  return std::make_unique<HubPeers>(state.cluster_key(), state.member->id(), directory.directory(), directory.locator(),
                                    std::move(local), std::move(o));
}

// Where the other hubs dial this one: --peer-url, else the first --public-url, else the listener.
std::string peer_url_of(const HubOptions& options, bool tls, int port) {
  if (!options.peer_url.empty()) return options.peer_url;
  if (!options.public_urls.empty()) return options.public_urls.front();
  const bool v6 = options.host.find(':') != std::string::npos;
  return std::string(tls ? "https://" : "http://") + (v6 ? "[" + options.host + "]" : options.host) + ":" +
         std::to_string(port);
}

// The secrets key: the cluster key (--cluster-key-file), which a PostgreSQL store requires (every
// hub must open what any hub sealed), else DATA_DIR/secrets.key (one SQLite hub).
Status open_secrets(HubState& state) {
  const HubOptions& options = state.options;
  if (!options.cluster_key_file.empty()) {
    CS_ASSIGN_OR_RETURN(state.secrets, SecretBox::open_existing(options.cluster_key_file));
    return {};
  }
  if (is_postgres_url(options.store)) {
    return Status::invalid_argument(
        "a PostgreSQL store needs --cluster-key-file (or $CELLSERVE_CLUSTER_KEY_FILE): the key every hub seals "
        "secrets with; make one with `cellserve hub cluster-key FILE`");
  }
  CS_ASSIGN_OR_RETURN(state.secrets, SecretBox::open_or_create((fs::path(options.data_dir) / "secrets.key").string()));
  return {};
}

// A hub whose cluster key differs from the one the others sealed the stored secrets with would
// seal new secrets no other hub opens: it is refused at start.
Status check_cluster_key(const HubState& state, const std::vector<Deployment>& deployments) {
  if (state.options.cluster_key_file.empty()) return {};
  for (const Deployment& d : deployments) {
    for (const auto& [name, value] : d.spec.env) {
      if (SecretBox::is_sealed(value) && !state.secrets.open(value).ok()) {
        return Status(StatusCode::PermissionDenied, "--cluster-key-file " + state.options.cluster_key_file +
                                                        ": not the key the other hubs sealed secret " + name +
                                                        " of deployment " + d.spec.name +
                                                        " with; every hub of a fleet needs the same key file");
      }
    }
  }
  return {};
}

// This hub as a member of the hubs sharing the store (cluster_member.h). A SQLite file holds one
// hub: the rows an earlier run left are removed, so its agents are not thought held by it.
Status join_cluster(HubState& state) {
  ClusterStore& cluster = state.store->cluster();
  state.member = std::make_unique<ClusterMember>(cluster, state.clock, state.options.poll_interval,
                                                 [&state](const std::string& line) { state.log(line); });
  if (is_postgres_url(state.options.store)) return {};
  CS_ASSIGN_OR_RETURN(ClusterStore::Hubs earlier, cluster.hubs());
  for (const HubRecord& h : earlier.hubs) CS_RETURN_IF_ERROR(cluster.remove_hub(h.id));
  return {};
}

// The API keys from the store, counted there (quota_store.h).
Status load_keys(HubState& state) {
  CS_ASSIGN_OR_RETURN(std::vector<ApiKey> stored_keys, state.store->api_keys());
  state.keys.load(std::move(stored_keys));
  // Quotas are counted in the store (fleet/hub/key_book.h), this run's holds under its member id,
  // so that the leader's remove_hub of a dead hub releases what its requests held.
  state.keys.count_in(state.store->quotas(), state.member->id());
  // A key created on another hub a moment ago opens this hub's endpoint at once, not only after
  // the next round's reload (flush_key_usage).
  state.keys.reload_on_miss([&state] { return state.store->api_keys(); }, std::chrono::milliseconds(250));
  // Keys stored before they carried their deployment's creation time are bound to the
  // deployment of their name now; those of a name with no deployment open nothing.
  CS_ASSIGN_OR_RETURN(std::vector<Deployment> deployments, state.store->deployments());
  for (const Deployment& d : deployments) state.keys.bind_unbound(d.spec.name, d.created_ms);
  state.flush_key_usage();
  return {};
}

}  // namespace

struct Hub::Impl {
  explicit Impl(HubOptions o)
      : state(std::move(o), Clock::system()),
        forwarder(state, agent_transports(state, peers)),
        checks(state, forwarder),
        gateway(state, forwarder, &checks),
        batches(state, forwarder),
        autoscaler(state, forwarder, [this] { return batches.batches_in_progress(); }),
        supervisor(state),
        admin(state, forwarder, batches,
              make_file_handler((fs::path(state.options.data_dir) / "files").string(), "/files/")) {}
  // Tunnels close first: a link's heartbeat calls into the Supervisor.
  ~Impl() { state.links.close_all(); }

  HubState state;
  // Made in Hub::start once the store and the cluster key are open (null before).
  std::unique_ptr<ClusterDirectory> directory;
  std::unique_ptr<HubPeers> peers;
  ReplicaForwarder forwarder;
  SpotChecks checks;
  Gateway gateway;
  BatchService batches;
  Autoscaler autoscaler;
  Supervisor supervisor;
  AdminApi admin;
  net::RouteTable routes;
  std::unique_ptr<net::HttpServer> http;
  std::unique_ptr<TlsTerminator> tls;  // in front of `http` (on loopback) when TLS is on

  // Every route, in the order they are matched: the other hubs', the agents', the operator's, the Files and
  // Batches API, then the deployment endpoint and replica addresses that take the rest of /d/.
  void add_routes() {
    peers->add_routes(routes);
    supervisor.add_routes(routes);
    admin.add_routes(routes);
    batches.add_routes(routes);
    gateway.add_routes(routes);
  }
  // DNS rebinding: a hub without an admin key answers only Hosts that are an address literal,
  // localhost, under --domain or a --public-url's (net/host_check.h).
  bool host_allowed(const std::string& host_header) const;
  void handle(const net::HttpRequest& req, net::ResponseWriter& w);
  // The route table's dispatch, with user routes refused while routing is stale.
  void dispatch(const net::HttpRequest& req, net::ResponseWriter& w);
};

bool Hub::Impl::host_allowed(const std::string& host_header) const {
  const HubOptions& options = state.options;
  if (!options.api_key.empty() || net::literal_or_localhost_host(host_header)) return true;
  // The names the operator gave the hub (--domain, --public-url) are its own, not a rebinding
  // page's.
  const std::string name = net::host_name_of(host_header);
  if (!options.domain.empty() && (name == options.domain || name.ends_with("." + options.domain))) return true;
  return std::any_of(options.public_urls.begin(), options.public_urls.end(),
                     [&](const std::string& url) { return public_url_host(url) == name; });
}

void Hub::Impl::dispatch(const net::HttpRequest& req, net::ResponseWriter& w) {
  // A hub that cannot read the store routes from memory for kMaxStaleRouting at most: after it,
  // the deployments' endpoints and the batch API (all under /d/) wait for the store to answer.
  if (req.path.starts_with("/d/") && !state.routing_fresh()) {
    return send_error(w, 503, "the hub cannot reach its store; try again shortly or another hub",
                      {{"Retry-After", "2"}});
  }
  routes.dispatch(req, w);
}

void Hub::Impl::handle(const net::HttpRequest& req, net::ResponseWriter& w) {
  if (!host_allowed(req.header("host"))) {
    return send_error(w, 403,
                      "this hub has no admin key and answers only requests to an address, localhost, its --domain "
                      "or its --public-url names "
                      "(Host was '" +
                          net::host_name_of(req.header("host")).substr(0, 64) +
                          "'); set --api-key-file to serve "
                          "other names");
  }
  // A deployment or one replica addressed by host name: <deployment>.<domain>, or
  // <deployment>-<n>.<domain> when no deployment has the whole label as its name. Each is the
  // same request as at its /d/ path, routed by the same table.
  const std::string& domain = state.options.domain;
  if (!domain.empty()) {
    std::string host = req.header("host");
    if (const size_t colon = host.rfind(':'); colon != std::string::npos) host.resize(colon);
    const std::string suffix = "." + domain;
    if (host.size() > suffix.size() && host.ends_with(suffix)) {
      const std::string label = host.substr(0, host.size() - suffix.size());
      if (valid_deployment_name(label) && state.registry.deployment(label)) {
        if (!req.path.starts_with("/v1/")) {
          std::string key_id;
          if (!user_allowed(state, req, w, label, &key_id)) return;
          return send_error(w, 404, "a deployment's API is under /v1/");
        }
        net::HttpRequest rewritten = req;
        rewritten.path = "/d/" + label + req.path;
        dispatch(rewritten, w);
        return;
      }
      if (auto address = replica_address_from_host_label(label)) {
        net::HttpRequest rewritten = req;
        rewritten.path = replica_path(address->deployment, address->index, req.path);
        dispatch(rewritten, w);
        return;
      }
    }
  }
  dispatch(req, w);
}

Hub::Hub(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Hub::~Hub() { stop(); }

int Hub::port() const { return impl_->tls ? impl_->tls->port() : impl_->http->port(); }

Status Hub::reload_tls() {
  if (!impl_ || !impl_->tls) return Status::invalid_argument("the hub does not serve HTTPS");
  CS_ASSIGN_OR_RETURN(std::shared_ptr<TlsContext> ctx,
                      TlsContext::server(impl_->state.options.tls_cert, impl_->state.options.tls_key));
  impl_->tls->set_context(std::move(ctx));
  impl_->state.log("TLS certificate reloaded from " + impl_->state.options.tls_cert);
  return {};
}

void Hub::stop() {
  if (!impl_ || !impl_->http) return;
  impl_->state.reconcile.stop();
  impl_->supervisor.join();
  impl_->batches.stop();
  if (impl_->tls) impl_->tls->stop();
  if (impl_->peers) impl_->peers->stop();  // relays from other hubs end, and requests relayed through them fail
  impl_->state.links.close_all();          // forwarded requests end first, so the HTTP server's handlers return
  impl_->checks.stop();
  // Batch lines in flight fail with their tunnels and are pending again for the next start.
  impl_->batches.join();
  impl_->http->stop();
  impl_->state.links.close_all();  // and any tunnel opened meanwhile
  impl_->http.reset();
  impl_->state.flush_key_usage();  // the last requests' usage
  // Gives the reconcile lease up and removes this hub's row and tunnel records: another hub leads
  // at once, and takes this hub's agents as they re-dial it.
  if (impl_->state.member) impl_->state.member->leave();
  impl_->state.store.reset();
}

Result<std::unique_ptr<Hub>> Hub::start(HubOptions options) {
  if (options.data_dir.empty()) return Status::invalid_argument("--data-dir is required");
  if (!options.peer_url.empty() && normalized_origin(options.peer_url).empty()) {
    return Status::invalid_argument("--peer-url " + options.peer_url.substr(0, 200) +
                                    ": expected http(s)://HOST[:PORT]");
  }
  for (const std::string& url : options.public_urls) {
    if (normalized_origin(url).empty()) {
      return Status::invalid_argument("--public-url " + url.substr(0, 200) + ": expected http(s)://HOST[:PORT]");
    }
  }
  std::error_code ec;
  fs::create_directories(fs::path(options.data_dir) / "files", ec);
  if (ec) return Status::internal(options.data_dir + ": cannot create: " + ec.message());
  if (!sodium_ready()) return Status::internal("libsodium could not be initialised");
  if (options.api_key.empty() && !options.insecure && !loopback_host(options.host)) {
    return Status::invalid_argument("refusing to listen on " + options.host +
                                    " without an admin key (--api-key-file or $CELLSERVE_HUB_KEY): anyone who "
                                    "reaches it could read the models and use the replicas; pass --insecure to "
                                    "run an open hub anyway");
  }
  auto impl = std::make_unique<Impl>(options);
  HubState& state = impl->state;
  const AttestationConfig attestation{options.attestation_roots, options.attestation_status,
                                      (fs::path(options.data_dir) / "attestation-status.download").string(),
                                      options.attestation_min_patch, options.attestation_apps};
  CS_ASSIGN_OR_RETURN(state.attestation, DeviceAttestation::create(attestation, state.now_ms()));
  CS_ASSIGN_OR_RETURN(state.store, open_store(options.store.empty() ? (fs::path(options.data_dir) / "hub.db").string()
                                                                    : options.store));
  CS_RETURN_IF_ERROR(open_secrets(state));
  // Hubs sharing a cluster key accept each other's download tokens (an agent may fetch a model
  // from a hub other than the one holding its tunnel).
  if (!state.cluster_key().empty()) state.files_tokens = FilesTokens::for_cluster(state.cluster_key());
  CS_RETURN_IF_ERROR(join_cluster(state));
  {
    // [env] values stored in plain text by an older hub are sealed now.
    CS_ASSIGN_OR_RETURN(std::vector<Deployment> deployments, state.store->deployments());
    CS_RETURN_IF_ERROR(check_cluster_key(state, deployments));
    for (Deployment& d : deployments) {
      DeploymentSpec sealed = d.spec;
      state.seal_env(sealed);
      if (sealed.env != d.spec.env) CS_RETURN_IF_ERROR(state.store->update_deployment_spec(sealed));
    }
    for (const Deployment& d : deployments) {
      if (d.spec.requirements.attested_only && state.attestation->status_feed() == nullptr) {
        state.log("warning: deployment " + d.spec.name +
                  " is attested_only but no --attestation-status is configured: a revoked or suspended attestation "
                  "chain is never noticed");
      }
    }
  }
  CS_RETURN_IF_ERROR(impl->batches.open(options.data_dir, options.store));
  CS_RETURN_IF_ERROR(load_keys(state));
  CS_ASSIGN_OR_RETURN(std::vector<DeviceAgreement> agreements, state.store->agreements());
  state.agreement.load(agreements);
  CS_ASSIGN_OR_RETURN(std::vector<CanarySet> canaries, state.store->canaries());
  if (const std::string skipped = state.canaries.load(canaries); !skipped.empty()) {
    state.log("canaries of " + skipped + " no longer read and are not sent; upload them again");
  }
  ClusterDirectoryOptions directory_options;
  directory_options.live_within = hub_dead_after(options.poll_interval);
  impl->directory = std::make_unique<ClusterDirectory>(state.store->cluster(), state.clock, directory_options);
  impl->peers = make_peers(state, *impl->directory, impl->forwarder);
  impl->add_routes();
  {
    std::lock_guard lock(state.state_mu);
    state.refresh_registry();
  }
  const bool tls = !options.tls_cert.empty() || !options.tls_key.empty();
  std::shared_ptr<TlsContext> tls_context;
  if (tls) {
    if (options.tls_cert.empty() || options.tls_key.empty()) {
      return Status::invalid_argument("--tls-cert and --tls-key go together");
    }
    CS_ASSIGN_OR_RETURN(tls_context, TlsContext::server(options.tls_cert, options.tls_key));
  }
  net::HttpServerOptions ho;
  // With TLS the HTTP server listens on loopback only, behind the terminator.
  ho.host = tls ? "127.0.0.1" : options.host;
  ho.port = tls ? 0 : options.port;
  if (options.max_connections < 1 || options.max_connections > kMaxHubConnections ||
      options.max_connections_per_address < 0 || options.max_agents < 1 || options.max_agents > kMaxHubConnections) {
    return Status::invalid_argument("--max-connections and --max-agents must be in [1, " +
                                    std::to_string(kMaxHubConnections) +
                                    "] and --max-connections-per-ip 0 or positive");
  }
  ho.max_connections = options.max_connections;
  ho.max_connections_per_address = options.max_connections_per_address;
  ho.cors.origins = options.cors_origins;
  // Behind the terminator every connection comes from 127.0.0.1: the terminator caps them by the
  // real client address instead (TlsTerminatorOptions), so the server must not count them as one,
  // and it names each client in a PROXY header, so per-address limits (challenges) still see them.
  if (tls) {
    ho.max_connections_per_address = 0;
    ho.proxy_protocol = true;
  }
  ho.idle_timeout = std::chrono::seconds(120);
  // Batch uploads (POST /d/<deployment>/v1/files) go to disk, not memory, and only for a caller
  // the route would admit: anyone else's body stays within the in-memory limit and gets its 401.
  ho.spool_dir = impl->batches.files_dir();
  ho.max_spooled_body_bytes = BatchService::kMaxFileBytes + (1 << 20);  // the form's own bytes
  {
    BatchService* batches = &impl->batches;
    ho.spool_body = [batches](const net::HttpRequest& head) { return batches->spools_upload(head); };
  }
  Impl* raw = impl.get();
  CS_ASSIGN_OR_RETURN(impl->http, net::HttpServer::start(ho, [raw](const net::HttpRequest& req,
                                                                   net::ResponseWriter& w) { raw->handle(req, w); }));
  if (tls) {
    TlsTerminatorOptions to;
    to.send_proxy_header = true;
    to.max_connections = options.max_connections;
    to.max_connections_per_address = options.max_connections_per_address;
    auto terminator = TlsTerminator::start(
        options.host, options.port, tls_context, impl->http->port(),
        [raw](const std::string& line) { raw->state.log(line); }, to);
    if (!terminator.ok()) {
      impl->http->stop();
      return terminator.status();
    }
    impl->tls = std::move(terminator).value();
    state.tls_front.store(impl->tls.get());
  }
  const int port_bound = impl->tls ? impl->tls->port() : impl->http->port();
  HubOrigins origins{tls, options.host, port_bound, options.public_urls};
  if (options.public_urls.empty() && (options.host == "0.0.0.0" || options.host == "::")) {
    state.log(
        "listening on a wildcard address without --public-url: agents' tunnel signatures are bound to the port "
        "only; name the URLs agents dial with --public-url to bind them to this hub");
  }
  state.member->set_peer_url(peer_url_of(options, tls, port_bound));
  impl->supervisor.set_autoscaler(&impl->autoscaler);
  impl->supervisor.start(std::move(origins));
  impl->peers->start();
  impl->batches.start();
  impl->checks.start();
  state.log(std::string("listening on ") + (tls ? "https://" : "http://") + options.host + ":" +
            std::to_string(port_bound) + ", data in " + options.data_dir +
            (options.store.empty() ? std::string() : ", store " + store_display_name(options.store)));
  return std::unique_ptr<Hub>(new Hub(std::move(impl)));
}

}  // namespace cellserve::fleet
