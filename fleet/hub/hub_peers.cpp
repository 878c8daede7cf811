#include "fleet/hub/hub_peers.h"

#include <algorithm>
#include <set>

#include <boost/json.hpp>

#include "fleet/crypto/identity.h"
#include "fleet/tunnel/tunnel_server.h"
#include "net/json_error.h"
#include "net/socket_address.h"

namespace cellserve::fleet {
namespace {

using SteadyClock = std::chrono::steady_clock;

bool has_header(const net::HeaderList& headers, std::string_view name) {
  return std::any_of(headers.begin(), headers.end(), [&](const auto& h) { return h.first == name; });
}

net::HeaderList without_header(const net::HeaderList& headers, std::string_view name) {
  net::HeaderList out;
  for (const auto& h : headers) {
    if (h.first != name) out.push_back(h);
  }
  return out;
}

// The sending side's writer: the receiving hub's marked 503 ("that agent is not connected here")
// is held back, so the attempt counts as failed with nothing sent and the caller fails over.
class RefusalFilter final : public net::ResponseWriter {
 public:
  explicit RefusalFilter(net::ResponseWriter& out) : out_(out) {}
  void send(int status, std::string_view content_type, std::string body, const net::HeaderList& headers) override {
    if (status == 503 && has_header(headers, kRelayRefusedHeader)) {
      refused_ = true;
      reason_ = body.substr(0, 300);
      return;
    }
    out_.send(status, content_type, std::move(body), headers);
  }
  bool begin_stream(int status, std::string_view content_type, const net::HeaderList& headers) override {
    return out_.begin_stream(status, content_type, headers);
  }
  bool write(std::string_view data) override { return out_.write(data); }
  void end_stream() override { out_.end_stream(); }
  void abort_stream() override { out_.abort_stream(); }
  bool client_gone() override { return out_.client_gone(); }
  bool refused() const { return refused_; }
  const std::string& reason() const { return reason_; }

 private:
  net::ResponseWriter& out_;
  bool refused_ = false;
  std::string reason_;
};

// The receiving side's writer: an agent's answer never carries the refusal mark (an agent could
// otherwise pass its own failure off as the hub's).
class MarkStripper final : public net::ResponseWriter {
 public:
  explicit MarkStripper(net::ResponseWriter& out) : out_(out) {}
  void send(int status, std::string_view content_type, std::string body, const net::HeaderList& headers) override {
    out_.send(status, content_type, std::move(body), without_header(headers, kRelayRefusedHeader));
  }
  bool begin_stream(int status, std::string_view content_type, const net::HeaderList& headers) override {
    return out_.begin_stream(status, content_type, without_header(headers, kRelayRefusedHeader));
  }
  bool write(std::string_view data) override { return out_.write(data); }
  void end_stream() override { out_.end_stream(); }
  void abort_stream() override { out_.abort_stream(); }
  bool client_gone() override { return out_.client_gone(); }

 private:
  net::ResponseWriter& out_;
};

// A replica on another hub: the request exactly as the forwarder built it, plus the processor.
class PeerTransport final : public ReplicaTransport {
 public:
  PeerTransport(std::shared_ptr<TunnelClient> link, std::string processor_id, std::string hub_id)
      : link_(std::move(link)), processor_id_(std::move(processor_id)), hub_id_(std::move(hub_id)) {}

  Status forward(const net::HttpRequest& request, net::ResponseWriter& out, bool* responded) override {
    net::HttpRequest relayed = request;
    relayed.headers[std::string(kRelayProcessorHeader)] = processor_id_;
    RefusalFilter filter(out);
    bool any = false;
    Status s = link_->forward(relayed, filter, &any);
    if (filter.refused()) {
      if (responded != nullptr) *responded = false;
      return Status::unavailable("hub " + hub_id_ + " cannot reach the agent: " + filter.reason());
    }
    if (responded != nullptr) *responded = any;
    return s;
  }

 private:
  std::shared_ptr<TunnelClient> link_;
  std::string processor_id_;
  std::string hub_id_;
};

void refuse_relay(net::ResponseWriter& w, const std::string& why) {
  net::send_error(w, 503, why, {{std::string(kRelayRefusedHeader), "1"}});
}

}  // namespace

// One peer this hub dials: a thread that dials, serves the link until it closes, and dials again
// after a backoff, until stopped.
struct HubPeers::Outbound {
  std::string id;
  std::string url;
  std::mutex mu;
  std::condition_variable wake;
  bool stopping = false;                 // guarded by mu
  std::shared_ptr<TunnelServer> server;  // guarded by mu; the open link, if any
  std::thread thread;

  bool open() {
    std::lock_guard lock(mu);
    return server && !server->closed();
  }
  // Ends the thread: closes the link (its relays see client_gone()) and joins.
  void stop() {
    std::shared_ptr<TunnelServer> s;
    {
      std::lock_guard lock(mu);
      stopping = true;
      s = server;
      wake.notify_all();
    }
    if (s) s->close();
    if (thread.joinable()) thread.join();
  }
};

HubPeers::HubPeers(std::string_view cluster_key, std::string hub_id, Directory directory, Locator locator,
                   LocalTransport local, HubPeersOptions options)
    : link_key_(cluster_key.empty() ? std::string() : hub_link_key(cluster_key)),
      hub_id_(std::move(hub_id)),
      directory_(std::move(directory)),
      locator_(std::move(locator)),
      local_(std::move(local)),
      options_(std::move(options)),
      dialer_{options_.dial_timeout, options_.tls} {}

HubPeers::~HubPeers() { stop(); }

void HubPeers::log(const std::string& line) const {
  if (options_.log) options_.log("hub link: " + line);
}

void HubPeers::add_routes(net::RouteTable& routes) {
  routes.add("GET", kHubLinkChallengePath,
             [this](const net::HttpRequest&, const net::PathParams&, net::ResponseWriter& w) { issue_challenge(w); });
  routes.add("GET", kHubLinkPath, [this](const net::HttpRequest& req, const net::PathParams&, net::ResponseWriter& w) {
    accept_link(req, w);
  });
}

void HubPeers::issue_challenge(net::ResponseWriter& w) {
  if (link_key_.empty()) return net::send_error(w, 403, "this hub has no cluster key: it accepts no hub links");
  const std::optional<std::string> challenge = challenges_.issue();
  if (!challenge) return net::send_error(w, 429, "too many hub links are being opened at once; retry shortly");
  w.send(200, "application/json", boost::json::serialize(boost::json::object{{"challenge", *challenge}}));
}

void HubPeers::accept_link(const net::HttpRequest& req, net::ResponseWriter& w) {
  if (link_key_.empty()) return net::send_error(w, 403, "this hub has no cluster key: it accepts no hub links");
  if (req.header("upgrade") != kHubLinkProtocol) {
    return net::send_error(w, 400, "expected Upgrade: " + std::string(kHubLinkProtocol));
  }
  const LinkHandshake h{req.header(std::string(kHubIdHeader)), req.header(std::string(kPeerIdHeader)),
                        req.header(std::string(kLinkChallengeHeader)), req.header(std::string(kLinkNonceHeader))};
  if (!valid_hub_id(h.dialer_id) || !valid_hub_id(h.listener_id) || !valid_link_token(h.nonce) ||
      h.dialer_id == hub_id_) {
    return net::send_error(w, 400, "a hub link names two distinct hub ids and a nonce of 64 hex digits");
  }
  // A dialer whose directory still lists an earlier hub at this address: not an attack, and no
  // challenge is spent on it.
  if (h.listener_id != hub_id_) return net::send_error(w, 421, "this is hub " + hub_id_ + ", not " + h.listener_id);
  if (!challenges_.redeem(h.challenge)) {
    return net::send_error(w, 401, "unknown, used or expired challenge: GET " + std::string(kHubLinkChallengePath));
  }
  if (!dialer_proof_valid(link_key_, h, req.header(std::string(kLinkProofHeader)))) {
    log("refused a link claiming to be hub " + h.dialer_id + " from " + req.remote_address + ": wrong proof");
    return net::send_error(w, 401, "the link proof does not verify with this cluster's key");
  }
  std::optional<net::UpgradedConnection> up = w.upgrade(
      {{"Upgrade", std::string(kHubLinkProtocol)}, {std::string(kLinkProofHeader), listener_proof(link_key_, h)}});
  if (!up) return;
  if (options_.upgraded) options_.upgraded(net::peer_port(up->fd));
  auto client = TunnelClient::start(up->fd, options_.tunnel, std::move(up->buffered));
  if (!client.ok()) return log("link from hub " + h.dialer_id + " failed: " + client.status().message());
  install_inbound(h.dialer_id, std::shared_ptr<TunnelClient>(std::move(client).value()));
  log("hub " + h.dialer_id + " linked in");
}

void HubPeers::install_inbound(const std::string& peer_id, std::shared_ptr<TunnelClient> client) {
  std::shared_ptr<TunnelClient> old;
  {
    std::lock_guard lock(mu_);
    if (stopping_) {
      old = std::move(client);  // closed below
    } else {
      Inbound& slot = inbound_[peer_id];
      old = std::move(slot.client);
      slot = Inbound{std::move(client), SteadyClock::now()};
    }
  }
  if (old) old->close();
}

void HubPeers::relay(const net::HttpRequest& req, net::ResponseWriter& w, const std::string& peer_id) const {
  if (req.path == kHubLoadPath) return accept_loads(req, w, peer_id);
  const std::string processor_id = req.header(std::string(kRelayProcessorHeader));
  if (processor_id.empty() || processor_id.size() > 128) {
    return net::send_error(w, 400, "a relayed request names its processor in " + std::string(kRelayProcessorHeader));
  }
  std::shared_ptr<ReplicaTransport> local = local_ ? local_(processor_id) : nullptr;
  if (!local) return refuse_relay(w, "processor " + processor_id.substr(0, 16) + " has no open tunnel on this hub");
  net::HttpRequest forwarded = req;
  forwarded.headers.erase(std::string(kRelayProcessorHeader));
  MarkStripper out(w);
  bool responded = false;
  const Status s = local->forward(forwarded, out, &responded);
  if (s.ok()) return;
  if (!responded) return refuse_relay(w, s.message());
  // Part of the answer went out: the sending hub must see it broken, not complete.
  w.abort_stream();
}

void HubPeers::accept_loads(const net::HttpRequest& req, net::ResponseWriter& w, const std::string& peer_id) const {
  if (req.method != "PUT") return net::send_error(w, 405, "a load message is a PUT");
  Result<HubLoadMessage> message = hub_load_from_json(req.body);
  if (!message.ok()) return net::send_error(w, 400, message.status().message());
  if (options_.apply_queues) options_.apply_queues(peer_id, message->queues);
  // A hub speaks only for the replicas whose tunnels it holds.
  std::vector<ReplicaLoad>& loads = message->loads;
  std::erase_if(loads, [&](const ReplicaLoad& l) { return !locator_ || locator_(l.processor_id) != peer_id; });
  if (options_.apply_loads && !loads.empty()) options_.apply_loads(loads);
  w.send(204, "", "");
}

void HubPeers::start() {
  if (link_key_.empty() || !directory_) return;
  std::lock_guard lock(mu_);
  if (maintainer_.joinable() || stopping_) return;
  maintainer_ = std::thread([this] { maintain_loop(); });
  if (options_.local_loads) loads_sender_ = std::thread([this] { loads_loop(); });
}

void HubPeers::loads_loop() {
  std::set<std::string> failing;  // peers whose last load message failed (logged once)
  std::vector<ReplicaLoad> last;
  std::vector<QueueLoad> last_queues;
  auto sent_at = SteadyClock::now() - options_.poll_interval;
  std::unique_lock lock(mu_);
  while (!wake_.wait_for(lock, options_.load_interval, [&] { return stopping_; })) {
    lock.unlock();
    std::vector<ReplicaLoad> loads = options_.local_loads();
    std::vector<QueueLoad> queues = options_.local_queues ? options_.local_queues() : std::vector<QueueLoad>{};
    // Unchanged loads are sent again once per poll interval, for a peer linked since.
    if (loads != last || queues != last_queues || SteadyClock::now() - sent_at >= options_.poll_interval) {
      send_loads(replica_loads_json(loads, queues), failing);
      last = std::move(loads);
      last_queues = std::move(queues);
      sent_at = SteadyClock::now();
    }
    lock.lock();
  }
}

void HubPeers::send_loads(const std::string& body, std::set<std::string>& failing) {
  std::vector<std::pair<std::string, std::shared_ptr<TunnelClient>>> links;
  {
    std::lock_guard lock(mu_);
    for (const auto& [id, in] : inbound_) {
      if (!in.client->closed()) links.emplace_back(id, in.client);
    }
  }
  for (const auto& [id, link] : links) {
    // A short deadline: a stale load is worth little, and one slow peer must not hold up the rest
    // for long.
    auto reply = link->call("PUT", std::string(kHubLoadPath), body, std::chrono::seconds(1),
                            {{"content-type", "application/json"}});
    if (reply.ok() && reply->status == 204) {
      failing.erase(id);
    } else if (failing.insert(id).second) {
      log("hub " + id +
          " did not take this hub's load: " + (reply.ok() ? std::to_string(reply->status) : reply.status().message()));
    }
  }
}

void HubPeers::stop() {
  std::map<std::string, Inbound> inbound;
  std::map<std::string, std::shared_ptr<Outbound>> outbound;
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
    wake_.notify_all();
  }
  if (maintainer_.joinable()) maintainer_.join();
  if (loads_sender_.joinable()) loads_sender_.join();
  {
    std::lock_guard lock(mu_);
    inbound.swap(inbound_);
    outbound.swap(outbound_);
  }
  for (auto& kv : outbound) kv.second->stop();
  for (auto& kv : inbound) kv.second.client->close();
}

void HubPeers::maintain_loop() {
  std::unique_lock lock(mu_);
  while (!stopping_) {
    lock.unlock();
    maintain(directory_());
    lock.lock();
    wake_.wait_for(lock, options_.poll_interval, [&] { return stopping_; });
  }
}

// Starts a dialing thread for each live peer without one (or whose URL changed), and ends the
// links to hubs no longer live.
void HubPeers::maintain(const std::vector<PeerHub>& live) {
  std::map<std::string, std::string> wanted;  // id → url
  for (const PeerHub& p : live) {
    if (p.id != hub_id_ && valid_hub_id(p.id)) wanted[p.id] = p.peer_url;
  }
  std::vector<std::shared_ptr<Outbound>> ended;
  std::vector<std::shared_ptr<TunnelClient>> dropped;
  {
    std::lock_guard lock(mu_);
    if (stopping_) return;
    for (auto it = outbound_.begin(); it != outbound_.end();) {
      const auto w = wanted.find(it->first);
      if (w == wanted.end() || w->second != it->second->url) {
        ended.push_back(std::move(it->second));
        it = outbound_.erase(it);
      } else {
        ++it;
      }
    }
    for (const auto& [id, url] : wanted) {
      if (outbound_.count(id) != 0) continue;
      auto out = std::make_shared<Outbound>();
      out->id = id;
      out->url = url;
      Outbound* raw = out.get();
      out->thread = std::thread([this, raw] { run_outbound(*raw); });
      outbound_[id] = std::move(out);
    }
    const auto now = SteadyClock::now();
    for (auto it = inbound_.begin(); it != inbound_.end();) {
      const bool unlisted = wanted.count(it->first) == 0 && now - it->second.accepted > options_.unlisted_grace;
      if (unlisted || it->second.client->closed()) {
        dropped.push_back(std::move(it->second.client));
        it = inbound_.erase(it);
      } else {
        ++it;
      }
    }
  }
  for (auto& out : ended) {
    log("hub " + out->id + " is no longer live (or moved): link closed");
    out->stop();
  }
  for (auto& client : dropped) client->close();
}

void HubPeers::run_outbound(Outbound& out) {
  std::chrono::milliseconds backoff = options_.min_backoff;
  std::string last_failure;
  const Result<PeerAddress> address = parse_peer_url(out.url);
  if (!address.ok()) log("hub " + out.id + ": " + address.status().message());
  std::unique_lock lock(out.mu);
  while (!out.stopping && address.ok()) {
    lock.unlock();
    Result<DialedLink> dialed = dial_peer(*address, dialer_, link_key_, hub_id_, out.id);
    std::shared_ptr<TunnelServer> server;
    if (dialed.ok()) {
      auto started = TunnelServer::start(
          dialed->fd, [this, id = out.id](const net::HttpRequest& req, net::ResponseWriter& w) { relay(req, w, id); },
          options_.tunnel, std::move(dialed->initial_bytes));
      if (started.ok())
        server = std::move(started).value();
      else
        dialed = started.status();
    }
    if (server) {
      lock.lock();
      out.server = server;
      const bool stopping = out.stopping;
      lock.unlock();
      if (!stopping) {
        log("linked into hub " + out.id);
        last_failure.clear();
        backoff = options_.min_backoff;
        server->wait();
        log("link into hub " + out.id + " closed: " + server->close_reason());
      }
      lock.lock();
      out.server.reset();
      lock.unlock();
      server.reset();  // closes it unless stop() holds it, which then closes it
    } else if (dialed.status().message() != last_failure) {
      last_failure = dialed.status().message();
      log("cannot link into hub " + out.id + ": " + last_failure);
    }
    lock.lock();
    out.wake.wait_for(lock, backoff, [&] { return out.stopping; });
    backoff = std::min(backoff * 2, options_.max_backoff);
  }
}

std::shared_ptr<ReplicaTransport> HubPeers::transport_to(const std::string& processor_id) const {
  if (link_key_.empty() || !locator_) return nullptr;
  const std::optional<std::string> hub = locator_(processor_id);
  if (!hub || *hub == hub_id_) return nullptr;
  std::shared_ptr<TunnelClient> link;
  {
    std::lock_guard lock(mu_);
    const auto it = inbound_.find(*hub);
    if (it == inbound_.end() || it->second.client->closed()) return nullptr;
    link = it->second.client;
  }
  return std::make_shared<PeerTransport>(std::move(link), processor_id, *hub);
}

std::vector<std::string> HubPeers::reachable_hubs() const {
  std::lock_guard lock(mu_);
  std::vector<std::string> ids;
  for (const auto& [id, in] : inbound_) {
    if (!in.client->closed()) ids.push_back(id);
  }
  return ids;
}

std::vector<std::string> HubPeers::serving_hubs() const {
  std::vector<std::shared_ptr<Outbound>> all;
  {
    std::lock_guard lock(mu_);
    for (const auto& kv : outbound_) all.push_back(kv.second);
  }
  std::vector<std::string> ids;
  for (const auto& out : all) {
    if (out->open()) ids.push_back(out->id);
  }
  return ids;
}

}  // namespace cellserve::fleet
