// The latency a hub-to-hub hop adds to a small request (docs/cluster.md, "Hub to hub"): the same
// request sent N times to an agent's tunnel directly (hub → agent, as when the agent dialed this
// hub) and through a peer link (hub 1 → hub 2 → agent), all on loopback in one process, the
// agent answering at once. Prints p50 and p99 of each and of the difference.
//
//   build/bench/hub_hop_bench [requests=1000]
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "fleet/crypto/identity.h"
#include "fleet/hub/hub_peers.h"
#include "fleet/tunnel/tunnel_client.h"
#include "fleet/tunnel/tunnel_server.h"
#include "net/http_server.h"

namespace cellserve::fleet {
namespace {

using SteadyClock = std::chrono::steady_clock;

// Keeps the answer, as a user's connection would take it.
class Sink final : public net::ResponseWriter {
 public:
  void send(int s, std::string_view, std::string b, const net::HeaderList&) override {
    status = s;
    body = std::move(b);
  }
  bool begin_stream(int s, std::string_view, const net::HeaderList&) override {
    status = s;
    return true;
  }
  bool write(std::string_view d) override {
    body.append(d);
    return true;
  }
  void end_stream() override {}
  bool client_gone() override { return false; }
  int status = 0;
  std::string body;
};

// A hub's end of an agent's tunnel; the agent answers a small completion at once.
struct Agent {
  std::unique_ptr<TunnelServer> server;
  std::shared_ptr<TunnelClient> client;
};

Agent start_agent() {
  int fds[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM, 0, fds) != 0) std::abort();
  Agent a;
  a.server = TunnelServer::start(fds[0], [](const net::HttpRequest&, net::ResponseWriter& w) {
               w.send(200, "application/json", R"({"choices":[{"message":{"content":"ok"}}]})");
             }).value();
  a.client = TunnelClient::start(fds[1]).value();
  return a;
}

net::HttpRequest small_request() {
  net::HttpRequest r;
  r.method = "POST";
  r.path = "/d/chat/0/v1/chat/completions";
  r.headers = {{"host", "hub"}, {"content-type", "application/json"}, {"authorization", "Bearer k"}};
  r.body = R"({"messages":[{"role":"user","content":"hi"}],"max_tokens":1})";
  return r;
}

std::vector<double> measure(ReplicaTransport& t, int n) {
  std::vector<double> us;
  const net::HttpRequest req = small_request();
  for (int i = 0; i < n + n / 10; ++i) {  // the first tenth warms up
    Sink out;
    const auto t0 = SteadyClock::now();
    const Status s = t.forward(req, out, nullptr);
    const auto t1 = SteadyClock::now();
    if (!s.ok() || out.status != 200) {
      std::fprintf(stderr, "request failed: %s\n", s.message().c_str());
      std::exit(1);
    }
    if (i >= n / 10) us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
  }
  std::sort(us.begin(), us.end());
  return us;
}

double pct(const std::vector<double>& sorted, double p) {
  return sorted[std::min(sorted.size() - 1, static_cast<size_t>(p * static_cast<double>(sorted.size())))];
}

// One hub: its HubPeers behind an HTTP server, `local` its own agents' links.
struct Hub {
  net::RouteTable routes;
  std::unique_ptr<HubPeers> peers;
  std::unique_ptr<net::HttpServer> http;
};

std::unique_ptr<Hub> start_hub(const std::string& id, const std::vector<PeerHub>* directory,
                               HubPeers::LocalTransport local) {
  auto hub = std::make_unique<Hub>();
  HubPeersOptions o;
  o.poll_interval = std::chrono::milliseconds(20);
  hub->peers = std::make_unique<HubPeers>(
      "bench cluster key", id, [directory] { return *directory; },
      [](const std::string&) { return std::optional<std::string>("hub-2"); }, std::move(local), o);
  hub->peers->add_routes(hub->routes);
  net::HttpServerOptions ho;
  ho.port = 0;
  Hub* raw = hub.get();
  hub->http = net::HttpServer::start(ho, [raw](const net::HttpRequest& req, net::ResponseWriter& w) {
                raw->routes.dispatch(req, w);
              }).value();
  return hub;
}

int run(int n) {
  if (!sodium_ready()) return 1;
  Agent agent = start_agent();
  std::vector<PeerHub> directory;
  auto hub1 = start_hub("hub-1", &directory, [](const std::string&) { return nullptr; });
  std::shared_ptr<ReplicaTransport> tunnel = agent.client;
  auto hub2 = start_hub("hub-2", &directory, [tunnel](const std::string&) { return tunnel; });
  directory = {{"hub-1", "http://127.0.0.1:" + std::to_string(hub1->http->port())},
               {"hub-2", "http://127.0.0.1:" + std::to_string(hub2->http->port())}};
  hub1->peers->start();
  hub2->peers->start();
  std::shared_ptr<ReplicaTransport> hop;
  for (int i = 0; i < 500 && !hop; ++i) {
    hop = hub1->peers->transport_to("p1");
    if (!hop) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  if (!hop) {
    std::fprintf(stderr, "the hubs did not link\n");
    return 1;
  }
  const std::vector<double> direct = measure(*agent.client, n);
  const std::vector<double> relayed = measure(*hop, n);
  std::printf("%d small requests each, loopback, one process\n", n);
  std::printf("direct  hub -> agent         p50 %8.1f us   p99 %8.1f us\n", pct(direct, 0.5), pct(direct, 0.99));
  std::printf("relayed hub -> hub -> agent  p50 %8.1f us   p99 %8.1f us\n", pct(relayed, 0.5), pct(relayed, 0.99));
  std::printf("added by the hop             p50 %8.1f us   p99 %8.1f us\n", pct(relayed, 0.5) - pct(direct, 0.5),
              pct(relayed, 0.99) - pct(direct, 0.99));
  hub1->peers->stop();
  hub2->peers->stop();
  hub1->http->stop();
  hub2->http->stop();
  return 0;
}

}  // namespace
}  // namespace cellserve::fleet

int main(int argc, char** argv) {
  const int n = argc > 1 ? std::max(10, std::atoi(argv[1])) : 1000;
  return cellserve::fleet::run(n);
}
