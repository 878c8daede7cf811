// A hostile agent for the hostile-input end-to-end test (tests/server/e2e/hostile.test.mjs). It
// joins a hub with a fresh identity the way a real agent does (challenge, signed upgrade, HTTP/2
// tunnel) and answers the hub's registration call, GET /agent/info, with a body that never ends.
// A hub that bounds what it reads from an agent gives up on the call and closes the tunnel.
//
//   hostile_agent --hub http://127.0.0.1:PORT [--limit-seconds 30]
//
// Prints "sent N bytes before the hub closed the tunnel" and exits 0 once the hub has closed it;
// exits 1 when it could not join, 2 when the hub was still reading after --limit-seconds.
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

#include "fleet/agent/hub_dial.h"
#include "fleet/crypto/identity.h"
#include "fleet/spec/agent_protocol.h"
#include "fleet/tunnel/tunnel_server.h"
#include "net/json_error.h"

namespace {

using namespace cellserve;
using namespace std::chrono_literals;

int usage() {
  std::fprintf(stderr, "usage: hostile_agent --hub URL [--limit-seconds N]\n");
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  std::string hub_url;
  int limit_seconds = 30;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--hub") {
      hub_url = argv[i + 1];
    } else if (flag == "--limit-seconds") {
      limit_seconds = std::atoi(argv[i + 1]);
    } else {
      return usage();
    }
  }
  if (hub_url.empty() || limit_seconds <= 0) return usage();
  auto hub = fleet::parse_hub_url(hub_url);
  if (!hub.ok()) {
    std::fprintf(stderr, "hostile_agent: %s\n", hub.status().message().c_str());
    return 1;
  }
  const fleet::Identity identity = fleet::Identity::generate();
  auto dialed = fleet::dial_hub(*hub, identity, 10s);
  if (!dialed.ok()) {
    std::fprintf(stderr, "hostile_agent: cannot join: %s\n", dialed.status().message().c_str());
    return 1;
  }

  std::atomic<uint64_t> sent{0};
  auto handler = [&](const net::HttpRequest& req, net::ResponseWriter& w) {
    if (req.path != fleet::kAgentInfoPath) return net::send_error(w, 404, "nothing here");
    if (!w.begin_stream(200, "application/json")) return;
    if (!w.write(R"({"name":")")) return;
    const std::string chunk(64 << 10, 'x');
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(limit_seconds);
    while (std::chrono::steady_clock::now() < deadline && w.write(chunk)) sent += chunk.size();
    w.abort_stream();
  };
  auto tunnel = fleet::TunnelServer::start(dialed->fd, handler, {}, std::move(dialed->initial_bytes));
  if (!tunnel.ok()) {
    std::fprintf(stderr, "hostile_agent: tunnel: %s\n", tunnel.status().message().c_str());
    return 1;
  }
  // The watchdog: a hub that never gives up is the failure this program exists to show.
  std::thread([limit_seconds] {
    std::this_thread::sleep_for(std::chrono::seconds(limit_seconds) + 5s);
    std::fprintf(stderr, "hostile_agent: the hub was still reading after %d s\n", limit_seconds);
    std::fflush(stderr);
    ::_exit(2);
  }).detach();
  (*tunnel)->wait();
  const std::string reason = (*tunnel)->close_reason();
  (*tunnel)->close();
  std::printf("sent %llu bytes before the hub closed the tunnel (%s)\n", static_cast<unsigned long long>(sent.load()),
              reason.c_str());
  return 0;
}
