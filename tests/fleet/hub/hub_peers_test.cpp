// HubPeers (fleet/hub/hub_peers.h): hubs in one process, each on its own HTTP server on loopback,
// linked by real sockets, HTTP/1.1 upgrades and HTTP/2 tunnels. The agents are FakeReplicas
// (the agent's answers, scripted); everything between the hubs is the product. Also the attacks
// on the link's authentication: a wrong key, a replayed handshake, a listener without the key,
// and relays attempted through ordinary requests.
#include "fleet/hub/hub_peers.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>
#include <boost/json.hpp>

#include "fleet/crypto/identity.h"
#include "fleet/tunnel/tunnel_client.h"
#include "net/fd_stream.h"
#include "net/http_server.h"
#include "tests/fleet/hub/fake_replica.h"
#include "tests/support/fake_response_writer.h"

namespace cellserve::fleet {
namespace {

using namespace std::chrono_literals;
using testing::FakeResponseWriter;
namespace http = boost::beast::http;

const std::string kKey = "the cluster key: 32 random bytes in production";

// Waits (bounded, in real time) for `done`.
bool eventually(const std::function<bool()>& done) {
  const auto give_up = std::chrono::steady_clock::now() + 10s;
  while (!done()) {
    if (std::chrono::steady_clock::now() > give_up) return false;
    std::this_thread::sleep_for(5ms);
  }
  return true;
}

// The live hubs, as ClusterStore::hubs() would list them; and which hub holds each tunnel.
struct Directory {
  std::mutex mu;
  std::vector<PeerHub> hubs;
  std::map<std::string, std::string> tunnels;  // processor → hub

  void set_hubs(std::vector<PeerHub> h) {
    std::lock_guard lock(mu);
    hubs = std::move(h);
  }
  HubPeers::Directory list() {
    return [this] {
      std::lock_guard lock(mu);
      return hubs;
    };
  }
  HubPeers::Locator locate() {
    return [this](const std::string& processor) -> std::optional<std::string> {
      std::lock_guard lock(mu);
      const auto it = tunnels.find(processor);
      return it == tunnels.end() ? std::nullopt : std::optional(it->second);
    };
  }
};

// A thread-safe log of what a hub's links did.
struct LogLines {
  std::mutex mu;
  std::vector<std::string> lines;
  bool contains(const std::string& text) {
    std::lock_guard lock(mu);
    return std::any_of(lines.begin(), lines.end(), [&](const std::string& l) { return l.find(text) != l.npos; });
  }
};

// One hub: its HubPeers behind an HTTP server with the peer routes, and its own agents.
class TestHub {
 public:
  TestHub(std::string id, std::string key, Directory& dir) : id_(std::move(id)) {
    HubPeersOptions o;
    o.poll_interval = 20ms;
    o.min_backoff = 20ms;
    o.max_backoff = 200ms;
    o.dial_timeout = 2s;
    o.tunnel.ping_interval = 200ms;
    o.tunnel.ping_timeout = 3s;
    o.log = [this](const std::string& line) {
      std::lock_guard lock(log.mu);
      log.lines.push_back(line);
    };
    o.load_interval = 20ms;
    o.local_loads = [this] {
      std::lock_guard lock(mu_);
      return own_loads_;
    };
    o.apply_loads = [this](const std::vector<ReplicaLoad>& loads) {
      std::lock_guard lock(mu_);
      received_.insert(received_.end(), loads.begin(), loads.end());
    };
    o.local_queues = [this] {
      std::lock_guard lock(mu_);
      return own_queues_;
    };
    o.apply_queues = [this](const std::string& peer, const std::vector<QueueLoad>& queues) {
      std::lock_guard lock(mu_);
      queues_from_[peer] = queues;
    };
    peers = std::make_unique<HubPeers>(
        key, id_, dir.list(), dir.locate(),
        [this](const std::string& processor) -> std::shared_ptr<ReplicaTransport> {
          std::lock_guard lock(mu_);
          const auto it = agents_.find(processor);
          return it == agents_.end() ? nullptr : it->second;
        },
        o);
    peers->add_routes(routes_);
    net::HttpServerOptions ho;
    ho.port = 0;
    server_ = net::HttpServer::start(ho, [this](const net::HttpRequest& req, net::ResponseWriter& w) {
                routes_.dispatch(req, w);
              }).value();
  }
  ~TestHub() { stop(); }
  void stop() {
    if (!server_) return;
    peers->stop();
    server_->stop();
    server_.reset();
  }

  void connect_agent(const std::string& processor, std::shared_ptr<FakeReplica> agent) {
    std::lock_guard lock(mu_);
    agents_[processor] = std::move(agent);
  }
  void disconnect_agent(const std::string& processor) {
    std::lock_guard lock(mu_);
    agents_.erase(processor);
  }
  void set_loads(std::vector<ReplicaLoad> loads) {
    std::lock_guard lock(mu_);
    own_loads_ = std::move(loads);
  }
  void set_queues(std::vector<QueueLoad> queues) {
    std::lock_guard lock(mu_);
    own_queues_ = std::move(queues);
  }
  // The last queues each peer reported, by the peer's authenticated id.
  std::map<std::string, std::vector<QueueLoad>> queues_from() {
    std::lock_guard lock(mu_);
    return queues_from_;
  }
  // Every entry a peer sent that this hub took, in order.
  std::vector<ReplicaLoad> received() {
    std::lock_guard lock(mu_);
    return received_;
  }
  PeerHub entry() const { return {id_, url()}; }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(server_->port()); }
  int port() const { return server_->port(); }
  bool reaches(const std::string& hub) const {
    const auto ids = peers->reachable_hubs();
    return std::find(ids.begin(), ids.end(), hub) != ids.end();
  }

  std::unique_ptr<HubPeers> peers;
  LogLines log;

 private:
  std::string id_;
  std::mutex mu_;
  std::map<std::string, std::shared_ptr<FakeReplica>> agents_;
  std::vector<ReplicaLoad> own_loads_;
  std::vector<ReplicaLoad> received_;
  std::vector<QueueLoad> own_queues_;
  std::map<std::string, std::vector<QueueLoad>> queues_from_;
  net::RouteTable routes_;
  std::unique_ptr<net::HttpServer> server_;
};

// Two hubs of one cluster, linked both ways, with agent "p1" on hub b.
class HubPeersTest : public ::testing::Test {
 protected:
  void link(const std::string& key_a = kKey, const std::string& key_b = kKey) {
    a = std::make_unique<TestHub>("hub-a", key_a, dir);
    b = std::make_unique<TestHub>("hub-b", key_b, dir);
    dir.set_hubs({a->entry(), b->entry()});
    dir.tunnels["p1"] = "hub-b";
    a->peers->start();
    b->peers->start();
  }

  Directory dir;
  std::unique_ptr<TestHub> a, b;
};

// What the agent saw of each request.
struct Seen {
  std::mutex mu;
  std::vector<net::HttpRequest> requests;
  void add(const net::HttpRequest& r) {
    std::lock_guard lock(mu);
    requests.push_back(r);
  }
};

net::HttpRequest chat_request() {
  net::HttpRequest r;
  r.method = "POST";
  r.path = "/d/chat/0/v1/chat/completions";
  r.query = "x=1";
  r.headers = {{"host", "hub"}, {"authorization", "Bearer replica-key"}, {"content-type", "application/json"}};
  r.body = R"({"messages":[{"role":"user","content":"hi"}],"stream":true})";
  return r;
}

// Sends one HTTP/1.1 request to 127.0.0.1:`port` and returns its status (0 when it failed).
int http_status(int port, http::verb method, const std::string& path, const net::HeaderList& headers) {
  const Result<int> fd = connect_tcp("127.0.0.1", port, 2s);
  if (!fd.ok()) return 0;
  net::FdStream stream(*fd);
  stream.set_read_deadline(std::chrono::steady_clock::now() + 5s);
  http::request<http::string_body> req{method, path, 11};
  req.set(http::field::host, "127.0.0.1");
  for (const auto& [k, v] : headers) req.set(k, v);
  boost::beast::error_code ec;
  http::write(stream, req, ec);
  boost::beast::flat_buffer buffer;
  http::response<http::string_body> res;
  if (!ec) http::read(stream, buffer, res, ec);
  ::close(*fd);
  return ec ? 0 : res.result_int();
}

TEST_F(HubPeersTest, StreamedResponseIsRelayedWholeInOrderAndTheRequestUnchanged) {
  link();
  Seen seen;
  auto agent = std::make_shared<FakeReplica>([&](const net::HttpRequest& req, net::ResponseWriter& out, bool* r) {
    seen.add(req);
    out.begin_stream(200, "text/event-stream", {{"x-agent", "yes"}});
    for (int i = 0; i < 200; ++i) out.write("data: " + std::to_string(i) + "\n\n");
    out.end_stream();
    if (r) *r = true;
    return Status();
  });
  b->connect_agent("p1", agent);
  ASSERT_TRUE(eventually([&] { return a->reaches("hub-b") && b->reaches("hub-a"); }));
  std::shared_ptr<ReplicaTransport> t = a->peers->transport_to("p1");
  ASSERT_NE(t, nullptr);

  FakeResponseWriter out;
  bool responded = false;
  ASSERT_TRUE(t->forward(chat_request(), out, &responded).ok());
  EXPECT_TRUE(responded);
  EXPECT_TRUE(out.streamed);
  EXPECT_TRUE(out.ended);
  EXPECT_EQ(out.status, 200);
  EXPECT_EQ(out.header("x-agent"), "yes");
  std::string expected;
  for (int i = 0; i < 200; ++i) expected += "data: " + std::to_string(i) + "\n\n";
  EXPECT_EQ(out.body, expected);

  // The agent got the request exactly as the forwarder built it, without the relay's header.
  std::lock_guard lock(seen.mu);
  ASSERT_EQ(seen.requests.size(), 1u);
  const net::HttpRequest& got = seen.requests[0];
  const net::HttpRequest sent = chat_request();
  EXPECT_EQ(got.method, sent.method);
  EXPECT_EQ(got.path, sent.path);
  EXPECT_EQ(got.query, sent.query);
  EXPECT_EQ(got.body, sent.body);
  EXPECT_EQ(got.header("authorization"), "Bearer replica-key");
  EXPECT_EQ(got.header("content-type"), "application/json");
  EXPECT_EQ(got.header(std::string(kRelayProcessorHeader)), "");
}

TEST_F(HubPeersTest, WholeResponseRelayedAndAnAgentCannotForgeTheRefusalMark) {
  link();
  auto agent = std::make_shared<FakeReplica>([](const net::HttpRequest&, net::ResponseWriter& out, bool* r) {
    out.send(503, "application/json", R"({"error":"busy"})", {{std::string(kRelayRefusedHeader), "1"}});
    if (r) *r = true;
    return Status();
  });
  b->connect_agent("p1", agent);
  ASSERT_TRUE(eventually([&] { return a->peers->transport_to("p1") != nullptr; }));
  FakeResponseWriter out;
  bool responded = false;
  EXPECT_TRUE(a->peers->transport_to("p1")->forward(chat_request(), out, &responded).ok());
  // The agent's own 503 reaches the caller as the agent's answer, not as "not connected here".
  EXPECT_TRUE(responded);
  EXPECT_EQ(out.status, 503);
  EXPECT_EQ(out.body, R"({"error":"busy"})");
  EXPECT_EQ(out.header(std::string(kRelayRefusedHeader)), "");
}

TEST_F(HubPeersTest, ClientThatGoesAwayCancelsTheFarStream) {
  link();
  std::atomic<bool> cancelled{false};
  auto agent = std::make_shared<FakeReplica>([&](const net::HttpRequest&, net::ResponseWriter& out, bool* r) {
    out.begin_stream(200, "text/event-stream", {});
    out.write("data: first\n\n");
    if (r) *r = true;
    const auto give_up = std::chrono::steady_clock::now() + 10s;
    while (!out.client_gone()) {
      if (std::chrono::steady_clock::now() > give_up) return Status::internal("never cancelled");
      std::this_thread::sleep_for(1ms);
    }
    cancelled = true;
    return Status::unavailable("client gone");
  });
  b->connect_agent("p1", agent);
  ASSERT_TRUE(eventually([&] { return a->peers->transport_to("p1") != nullptr; }));
  FakeResponseWriter out;
  bool responded = false;
  auto forwarded = std::async(std::launch::async,
                              [&] { return a->peers->transport_to("p1")->forward(chat_request(), out, &responded); });
  ASSERT_TRUE(eventually([&] { return out.delivered.load() > 0; }));
  out.gone = true;  // the user closes the connection
  const Status s = forwarded.get();
  EXPECT_FALSE(s.ok());
  EXPECT_TRUE(responded);
  // Both hops were reset: the agent's handler saw its client leave.
  EXPECT_TRUE(eventually([&] { return cancelled.load(); }));
}

TEST_F(HubPeersTest, AgentNotConnectedThereFailsWithNothingSentSoTheCallerFailsOver) {
  link();
  dir.tunnels["p2"] = "hub-b";  // recorded, but hub b no longer holds its tunnel
  ASSERT_TRUE(eventually([&] { return a->peers->transport_to("p2") != nullptr; }));
  FakeResponseWriter out;
  bool responded = true;
  const Status s = a->peers->transport_to("p2")->forward(chat_request(), out, &responded);
  EXPECT_EQ(s.code(), StatusCode::Unavailable);
  EXPECT_FALSE(responded);
  EXPECT_EQ(out.sends + out.begins, 0);
  EXPECT_NE(s.message().find("hub-b"), std::string::npos) << s.message();

  // Unknown processors and those on this hub itself get no peer transport.
  dir.tunnels["p3"] = "hub-a";
  EXPECT_EQ(a->peers->transport_to("p3"), nullptr);
  EXPECT_EQ(a->peers->transport_to("nobody"), nullptr);
}

TEST_F(HubPeersTest, ClosedLinkGivesNoTransportAndARestartedPeerIsLinkedAgain) {
  link();
  auto agent = std::make_shared<FakeReplica>(FakeReplica::replies(200, "{}"));
  b->connect_agent("p1", agent);
  ASSERT_TRUE(eventually([&] { return a->peers->transport_to("p1") != nullptr; }));
  b->stop();  // hub b dies: its link into hub a closes
  EXPECT_TRUE(eventually([&] { return a->peers->transport_to("p1") == nullptr; }));

  // A new hub b (a new member: a new id) at another address; the directory moves p1's tunnel.
  TestHub b2("hub-b2", kKey, dir);
  b2.connect_agent("p1", agent);
  dir.set_hubs({a->entry(), b2.entry()});
  {
    std::lock_guard lock(dir.mu);
    dir.tunnels["p1"] = "hub-b2";
  }
  b2.peers->start();
  ASSERT_TRUE(eventually([&] { return a->peers->transport_to("p1") != nullptr; }));
  FakeResponseWriter out;
  EXPECT_TRUE(a->peers->transport_to("p1")->forward(chat_request(), out, nullptr).ok());
  EXPECT_EQ(out.status, 200);
  // Hub a's link into the dead hub b is gone; it serves only the live one.
  EXPECT_TRUE(eventually([&] { return a->peers->serving_hubs() == std::vector<std::string>{"hub-b2"}; }));
}

TEST_F(HubPeersTest, HubNoLongerLiveIsUnlinked) {
  link();
  ASSERT_TRUE(eventually([&] { return a->reaches("hub-b") && b->reaches("hub-a"); }));
  dir.set_hubs({a->entry()});  // hub b's heartbeat went stale
  EXPECT_TRUE(eventually([&] { return a->peers->serving_hubs().empty(); }));
  EXPECT_TRUE(eventually([&] { return !b->reaches("hub-a"); }));
}

// Attack: a hub holding another key dials in. Refused both ways; nothing can be relayed.
TEST_F(HubPeersTest, DialerWithTheWrongKeyIsRefusedAndRelaysNothing) {
  link(kKey, "not the cluster key");
  auto agent = std::make_shared<FakeReplica>(FakeReplica::replies(200, "{}"));
  b->connect_agent("p1", agent);
  a->connect_agent("p0", agent);
  dir.tunnels["p0"] = "hub-a";
  ASSERT_TRUE(eventually([&] { return b->log.contains("refused the link: HTTP 401"); }));
  ASSERT_TRUE(eventually([&] { return a->log.contains("wrong proof"); }));
  ASSERT_TRUE(eventually([&] { return a->log.contains("cannot link into hub hub-b"); }));
  EXPECT_TRUE(a->peers->reachable_hubs().empty());
  EXPECT_TRUE(b->peers->reachable_hubs().empty());
  EXPECT_EQ(a->peers->transport_to("p1"), nullptr);
  EXPECT_EQ(b->peers->transport_to("p0"), nullptr);
  EXPECT_EQ(agent->calls(), 0);

  // The same refusal, by hand: a proof made with the wrong key.
  const PeerAddress address = parse_peer_url(a->url()).value();
  LinkHandshake h{"hub-x", "hub-a", fetch_link_challenge(address, {}).value(), random_hex(32)};
  const std::string wrong_key = hub_link_key("not the cluster key");
  const Result<DialedLink> dialed = request_link(address, {}, wrong_key, h, dialer_proof(wrong_key, h));
  EXPECT_EQ(dialed.status().code(), StatusCode::Unauthenticated);
}

// Attack: a handshake seen on the wire is sent again. The challenge is single use.
TEST_F(HubPeersTest, ReplayedHandshakeIsRefused) {
  a = std::make_unique<TestHub>("hub-a", kKey, dir);
  const PeerAddress address = parse_peer_url(a->url()).value();
  const std::string key = hub_link_key(kKey);
  LinkHandshake h{"hub-t", "hub-a", fetch_link_challenge(address, {}).value(), random_hex(32)};
  const std::string proof = dialer_proof(key, h);
  Result<DialedLink> first = request_link(address, {}, key, h, proof);
  ASSERT_TRUE(first.ok()) << first.status().message();
  ::close(first->fd);
  const Result<DialedLink> again = request_link(address, {}, key, h, proof);
  EXPECT_EQ(again.status().code(), StatusCode::Unauthenticated);
  // A made-up challenge is refused the same way.
  h.challenge = random_hex(32);
  EXPECT_EQ(request_link(address, {}, key, h, dialer_proof(key, h)).status().code(), StatusCode::Unauthenticated);
}

// Attack: a "hub" in the directory that does not know the key accepts the link anyway, hoping to
// send requests to the dialer's agents. The dialer checks its proof and closes the socket.
TEST_F(HubPeersTest, ListenerWithoutTheKeyIsDetectedAndNeverServed) {
  std::promise<Status> attacker_result;
  net::RouteTable routes;
  routes.add("GET", kHubLinkChallengePath, [](const net::HttpRequest&, const net::PathParams&, net::ResponseWriter& w) {
    w.send(200, "application/json", R"({"challenge":")" + random_hex(32) + R"("})");
  });
  std::atomic<bool> answered{false};
  routes.add("GET", kHubLinkPath, [&](const net::HttpRequest&, const net::PathParams&, net::ResponseWriter& w) {
    std::optional<net::UpgradedConnection> up =
        w.upgrade({{"Upgrade", std::string(kHubLinkProtocol)}, {std::string(kLinkProofHeader), std::string(64, '0')}});
    if (!up) return;
    if (answered.exchange(true)) return (void)::close(up->fd);
    auto client = TunnelClient::start(up->fd, {}, std::move(up->buffered));
    if (!client.ok()) return attacker_result.set_value(client.status());
    auto reply = (*client)->call("GET", "/v1/models", "", 3s, {{std::string(kRelayProcessorHeader), "p1"}});
    attacker_result.set_value(reply.ok() ? Status() : reply.status());
  });
  net::HttpServerOptions ho;
  ho.port = 0;
  auto fake = net::HttpServer::start(ho, [&](const net::HttpRequest& req, net::ResponseWriter& w) {
                routes.dispatch(req, w);
              }).value();

  b = std::make_unique<TestHub>("hub-b", kKey, dir);
  auto agent = std::make_shared<FakeReplica>(FakeReplica::replies(200, "{}"));
  b->connect_agent("p1", agent);
  dir.set_hubs({b->entry(), {"hub-x", "http://127.0.0.1:" + std::to_string(fake->port())}});
  b->peers->start();
  ASSERT_TRUE(eventually([&] { return b->log.contains("without proving the cluster key"); }));
  auto result = attacker_result.get_future();
  ASSERT_EQ(result.wait_for(10s), std::future_status::ready);
  EXPECT_FALSE(result.get().ok());
  EXPECT_EQ(agent->calls(), 0);
  EXPECT_TRUE(b->peers->serving_hubs().empty());
  b->stop();
  fake->stop();
}

// Attack: relays asked for by ordinary HTTP requests, not over a link: none reaches an agent.
TEST_F(HubPeersTest, RelayThroughOrdinaryRequestsReachesNoAgent) {
  link();
  auto agent = std::make_shared<FakeReplica>(FakeReplica::replies(200, "{}"));
  b->connect_agent("p1", agent);
  const net::HeaderList relay{{std::string(kRelayProcessorHeader), "p1"}};
  EXPECT_EQ(http_status(b->port(), http::verb::get, std::string(kHubLinkPath), relay), 400);
  EXPECT_EQ(http_status(b->port(), http::verb::post, std::string(kHubLinkPath), relay), 405);
  EXPECT_EQ(http_status(b->port(), http::verb::post, "/d/chat/0/v1/chat/completions", relay), 404);
  net::HeaderList upgrade = relay;
  upgrade.emplace_back("Upgrade", std::string(kHubLinkProtocol));
  upgrade.emplace_back("Connection", "Upgrade");
  upgrade.emplace_back(std::string(kHubIdHeader), "hub-x");
  upgrade.emplace_back(std::string(kPeerIdHeader), "hub-b");
  upgrade.emplace_back(std::string(kLinkChallengeHeader), random_hex(32));
  upgrade.emplace_back(std::string(kLinkNonceHeader), random_hex(32));
  upgrade.emplace_back(std::string(kLinkProofHeader), std::string(64, 'a'));
  EXPECT_EQ(http_status(b->port(), http::verb::get, std::string(kHubLinkPath), upgrade), 401);
  EXPECT_EQ(agent->calls(), 0);
}

// Each hub tells the others the load of the replicas whose tunnels it holds. A hub speaks only
// for its own: hub a's entries for p1 (held by b) and for p2 (held by no hub) are dropped by b,
// until the directory places p2 on a.
TEST_F(HubPeersTest, LoadOfAHubsOwnReplicasReachesItsPeersAndNothingElse) {
  link();
  b->set_loads({{"chat", 0, "p1", 2, 1}});
  a->set_loads({{"chat", 1, "p1", 2, 2}, {"chat", 2, "p2", 4, 3}});
  ASSERT_TRUE(eventually([&] { return !a->received().empty(); }));
  const ReplicaLoad from_b = a->received().front();
  EXPECT_EQ(from_b.deployment, "chat");
  EXPECT_EQ(from_b.index, 0);
  EXPECT_EQ(from_b.processor_id, "p1");
  EXPECT_EQ(from_b.slots, 2);
  EXPECT_EQ(from_b.busy, 1);
  // Several rounds of a's messages have reached b by now (each 20 ms): none was taken.
  std::this_thread::sleep_for(200ms);
  EXPECT_TRUE(b->received().empty());
  {
    std::lock_guard lock(dir.mu);
    dir.tunnels["p2"] = "hub-a";
  }
  ASSERT_TRUE(eventually([&] { return !b->received().empty(); }));
  for (const ReplicaLoad& l : b->received()) {
    EXPECT_EQ(l.processor_id, "p2");
    EXPECT_EQ(l.busy, 3);
  }
}

// Each hub's queues reach the others under its authenticated id, and an emptied queue is reported
// as such (the leader's autoscaler stops counting it).
TEST_F(HubPeersTest, QueuesReachThePeersUnderTheSendersId) {
  link();
  a->set_queues({{"chat", 7, 12500}});
  ASSERT_TRUE(eventually([&] { return b->queues_from()["hub-a"] == std::vector<QueueLoad>{{"chat", 7, 12500}}; }));
  EXPECT_TRUE(a->queues_from()["hub-b"].empty());
  a->set_queues({});
  ASSERT_TRUE(eventually([&] { return b->queues_from()["hub-a"].empty(); }));
}

// The load path is served only on a hub link (authenticated both ways): the listener's ordinary
// routes do not know it, so no client or agent can feed a hub false loads.
TEST_F(HubPeersTest, LoadMessagesAreTakenOnlyOverAuthenticatedLinks) {
  link();
  ASSERT_TRUE(eventually([&] { return a->reaches("hub-b") && b->reaches("hub-a"); }));
  EXPECT_EQ(http_status(b->port(), http::verb::put, std::string(kHubLoadPath), {}), 404);
}

TEST(HubPeersNoKey, AHubWithoutAClusterKeyAcceptsNoLinkAndDialsNone) {
  Directory dir;
  TestHub open("hub-a", "", dir);
  TestHub other("hub-b", kKey, dir);
  dir.set_hubs({open.entry(), other.entry()});
  open.peers->start();
  other.peers->start();
  EXPECT_EQ(http_status(open.port(), http::verb::get, std::string(kHubLinkChallengePath), {}), 403);
  ASSERT_TRUE(eventually([&] { return other.log.contains("HTTP 403"); }));
  EXPECT_TRUE(open.peers->serving_hubs().empty());
  EXPECT_TRUE(open.peers->reachable_hubs().empty());
}

TEST(PeerLinkAuth, ProofsBindEveryFieldAndTheRole) {
  const std::string key = hub_link_key(kKey);
  EXPECT_EQ(key.size(), 64u);
  EXPECT_EQ(key.find(kKey), std::string::npos);
  const LinkHandshake h{"hub-a", "hub-b", std::string(64, '1'), std::string(64, '2')};
  const std::string proof = dialer_proof(key, h);
  EXPECT_TRUE(dialer_proof_valid(key, h, proof));
  EXPECT_FALSE(listener_proof_valid(key, h, proof));  // a dialer's proof is no listener's
  for (int field = 0; field < 4; ++field) {
    LinkHandshake changed = h;
    std::string* f[] = {&changed.dialer_id, &changed.listener_id, &changed.challenge, &changed.nonce};
    (*f[field])[0] ^= 1;
    EXPECT_FALSE(dialer_proof_valid(key, changed, proof)) << field;
  }
  EXPECT_FALSE(dialer_proof_valid(hub_link_key("other"), h, proof));
  EXPECT_TRUE(valid_hub_id("3f2a-hub.1"));
  EXPECT_FALSE(valid_hub_id("a\nb"));
  EXPECT_FALSE(valid_hub_id(std::string(65, 'a')));
  EXPECT_FALSE(valid_link_token(std::string(64, 'G')));
}

TEST(PeerLinkAuth, ChallengesAreSingleUseAndBounded) {
  LinkChallenges challenges;
  const std::string c = challenges.issue().value();
  EXPECT_TRUE(challenges.redeem(c));
  EXPECT_FALSE(challenges.redeem(c));
  for (size_t i = 0; i < LinkChallenges::kMaxOutstanding; ++i) ASSERT_TRUE(challenges.issue());
  EXPECT_FALSE(challenges.issue());
}

TEST(PeerLinkAuth, PeerUrls) {
  const PeerAddress a = parse_peer_url("http://10.0.0.2:8080/x").value();
  EXPECT_EQ(a.host, "10.0.0.2");
  EXPECT_EQ(a.port, 8080);
  EXPECT_FALSE(a.tls);
  const PeerAddress b = parse_peer_url("https://[::1]").value();
  EXPECT_EQ(b.host, "::1");
  EXPECT_EQ(b.port, 443);
  EXPECT_FALSE(parse_peer_url("ftp://x").ok());
  EXPECT_FALSE(parse_peer_url("http://x:99999").ok());
  EXPECT_FALSE(parse_peer_url("http://:80").ok());
}

}  // namespace
}  // namespace cellserve::fleet
