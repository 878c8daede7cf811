// Scripted agents for the end-to-end tests of hostile devices (tests/fleet/e2e/hostile.test.mjs,
// intruders.test.mjs). Each joins a hub with a fresh identity the way a real agent does
// (challenge, signed upgrade, HTTP/2 tunnel), then misbehaves as --mode says:
//
//   endless      (default) answers the hub's registration call, GET /agent/info, with a body that
//                never ends. A hub that bounds what it reads gives up and closes the tunnel.
//                Prints "sent N bytes before the hub closed the tunnel" and exits 0 once the hub
//                has closed it; 2 when the hub was still reading after --limit-seconds.
//   slow-info    prints "id <hex>", waits --delay-seconds before joining (time for the test to
//                approve the id), prints "info requested" when the hub asks for /agent/info and
//                answers it validly only after another --delay-seconds (time for the test to revoke
//                it). Exits 0 once the hub closes the tunnel ("tunnel closed: ..."), 3 when it is
//                still connected after --limit-seconds.
//   fake-ack     registers as a simulated device, takes its assignments and reports every replica
//                ready with its secrets "acknowledged" without opening them: the SHA-256 of the
//                sealed box as its proof (what a device relaying the box could compute). Prints
//                "joined as <id>"; runs until --limit-seconds, then exits 0.
//   mute         registers as a simulated device, opens its secrets and proves it (as a real
//                agent does), reports every replica ready with a free slot, and then never
//                answers a request: it holds each one until the hub gives up on it. Runs until
//                --limit-seconds, then exits 0; prints "held N requests".
//   pending      tries to join --count times, each with a fresh identity and no enrolment, as a
//                flood of keys would; prints "refused K of N" and exits 0.
//
//   hostile_agent --hub http://127.0.0.1:PORT [--mode M] [--limit-seconds 30] [--delay-seconds 2]
//                 [--count 20] [--enroll TOKEN]
// Exits 1 when it could not join (endless, slow-info).
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <boost/json.hpp>

#include "fleet/agent/hub_dial.h"
#include "fleet/crypto/identity.h"
#include "fleet/crypto/sha256.h"
#include "fleet/spec/agent_protocol.h"
#include "fleet/tunnel/tunnel_server.h"
#include "net/json_error.h"

namespace {

using namespace cellserve;
using namespace std::chrono_literals;

struct Args {
  std::string hub_url;
  std::string mode = "endless";
  std::string enroll;
  int limit_seconds = 30;
  int delay_seconds = 2;
  int count = 20;
};

int usage() {
  std::fprintf(stderr,
               "usage: hostile_agent --hub URL [--mode endless|slow-info|pending|fake-ack|mute] [--limit-seconds N] "
               "[--delay-seconds N] [--count N] [--enroll TOKEN]\n");
  return 1;
}

void say(const std::string& line) {
  std::printf("%s\n", line.c_str());
  std::fflush(stdout);
}

// The watchdog: a hub that never gives up (or never cuts the device off) is the failure these
// programs exist to show.
void exit_after(int seconds, int code, std::string why) {
  std::thread([seconds, code, why] {
    std::this_thread::sleep_for(std::chrono::seconds(seconds));
    std::fprintf(stderr, "hostile_agent: %s after %d s\n", why.c_str(), seconds);
    std::fflush(stderr);
    ::_exit(code);
  }).detach();
}

int endless(const fleet::HubAddress& hub, const Args& a) {
  const fleet::Identity identity = fleet::Identity::generate();
  auto dialed = fleet::dial_hub(hub, identity, 10s, a.enroll);
  if (!dialed.ok()) {
    std::fprintf(stderr, "hostile_agent: cannot join: %s\n", dialed.status().message().c_str());
    return 1;
  }
  std::atomic<uint64_t> sent{0};
  const int limit_seconds = a.limit_seconds;
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
  exit_after(limit_seconds + 5, 2, "the hub was still reading");
  (*tunnel)->wait();
  const std::string reason = (*tunnel)->close_reason();
  (*tunnel)->close();
  std::printf("sent %llu bytes before the hub closed the tunnel (%s)\n", static_cast<unsigned long long>(sent.load()),
              reason.c_str());
  return 0;
}

// `fast`: claims a speed far above any real device's, so the gateway routes to it first.
fleet::AgentInfo simulated_device(const std::string& name, bool fast = false) {
  fleet::AgentInfo info;
  info.name = name;
  info.price_per_day = 0.5;
  info.specs.ram_bytes = 8ull << 30;
  info.specs.cores = 4;
  info.specs.big_cores = 4;
  info.specs.arch = "x86_64";
  info.specs.os = "linux";
  info.benchmark.decode_tps = fast ? 100000 : 10;
  info.benchmark.prefill_tps = fast ? 1000000 : 100;
  info.simulated = true;
  return info;
}

int slow_info(const fleet::HubAddress& hub, const Args& a) {
  const fleet::Identity identity = fleet::Identity::generate();
  say("id " + identity.id());
  std::this_thread::sleep_for(std::chrono::seconds(a.delay_seconds));
  auto dialed = fleet::dial_hub(hub, identity, 10s, a.enroll);
  if (!dialed.ok()) {
    std::fprintf(stderr, "hostile_agent: cannot join: %s\n", dialed.status().message().c_str());
    return 1;
  }
  const int delay_seconds = a.delay_seconds;
  auto handler = [delay_seconds](const net::HttpRequest& req, net::ResponseWriter& w) {
    if (req.path != fleet::kAgentInfoPath) return net::send_error(w, 404, "nothing here");
    say("info requested");
    std::this_thread::sleep_for(std::chrono::seconds(delay_seconds));
    w.send(200, "application/json", boost::json::serialize(fleet::to_json(simulated_device("slow"))));
  };
  auto tunnel = fleet::TunnelServer::start(dialed->fd, handler, {}, std::move(dialed->initial_bytes));
  if (!tunnel.ok()) {
    std::fprintf(stderr, "hostile_agent: tunnel: %s\n", tunnel.status().message().c_str());
    return 1;
  }
  exit_after(a.limit_seconds, 3, "the hub still keeps the tunnel open");
  (*tunnel)->wait();
  say("tunnel closed: " + (*tunnel)->close_reason());
  (*tunnel)->close();
  return 0;
}

// A simulated device that takes assignments and reports them ready. `honest_secrets`: it opens
// its sealed secrets and proves it; else it reports a hash of the sealed box (fake-ack). Requests
// to its replicas are held, never answered (mute).
int scripted_device(const fleet::HubAddress& hub, const Args& a, bool honest_secrets) {
  const fleet::Identity identity = fleet::Identity::generate();
  auto dialed = fleet::dial_hub(hub, identity, 10s, a.enroll);
  if (!dialed.ok()) {
    std::fprintf(stderr, "hostile_agent: cannot join: %s\n", dialed.status().message().c_str());
    return 1;
  }
  std::mutex mu;
  std::vector<fleet::AssignmentMessage> assigned;
  std::atomic<int> held{0};
  auto proof_for = [&](const fleet::AssignmentMessage& m) -> std::string {
    if (!honest_secrets) return fleet::sha256_hex(m.sealed_secrets);  // never opened
    auto opened = identity.open_sealed(m.sealed_secrets);
    if (!opened.ok()) return "";
    auto secrets = fleet::secrets_from_payload(*opened);
    if (!secrets.ok()) return "";
    return fleet::secrets_ack_proof(secrets->ack_key, m.deployment, m.secrets_version, m.secrets_challenge);
  };
  auto handler = [&](const net::HttpRequest& req, net::ResponseWriter& w) {
    if (req.path == fleet::kAgentInfoPath) {
      return w.send(200, "application/json",
                    boost::json::serialize(
                        fleet::to_json(simulated_device(honest_secrets ? "mute" : "fake-ack", honest_secrets))));
    }
    if (req.path == fleet::kAgentAssignmentsPath) {
      auto v = fleet::parse_json(req.body, "assignments");
      if (!v.ok()) return net::send_error(w, 400, v.status().message());
      auto wanted = fleet::assignments_from_json(*v);
      if (!wanted.ok()) return net::send_error(w, 400, wanted.status().message());
      std::lock_guard lock(mu);
      assigned = std::move(wanted).value();
      return w.send(200, "application/json", R"({"ok":true})");
    }
    if (req.path == fleet::kAgentStatusPath) {
      std::vector<fleet::ReplicaReport> reports;
      std::lock_guard lock(mu);
      for (const fleet::AssignmentMessage& m : assigned) {
        fleet::ReplicaReport r;
        r.deployment = m.deployment;
        r.index = m.index;
        r.state = fleet::ReplicaState::Ready;
        r.progress = 1;
        r.slots = r.free_slots = 1;
        if (honest_secrets) {  // mute: claims to be far faster than anything, so it is tried first
          r.prefill_tps = 1e6;
          r.decode_tps = 1e5;
        }
        r.model_sha256 = m.model_sha256;
        r.secrets_version = m.secrets_version;
        r.secrets_proof = proof_for(m);
        reports.push_back(std::move(r));
      }
      return w.send(200, "application/json", boost::json::serialize(fleet::to_json(reports)));
    }
    if (req.path.starts_with("/d/")) {
      ++held;
      while (!w.client_gone()) std::this_thread::sleep_for(20ms);
      return;
    }
    net::send_error(w, 404, "nothing here");
  };
  auto tunnel = fleet::TunnelServer::start(dialed->fd, handler, {}, std::move(dialed->initial_bytes));
  if (!tunnel.ok()) {
    std::fprintf(stderr, "hostile_agent: tunnel: %s\n", tunnel.status().message().c_str());
    return 1;
  }
  say("joined as " + identity.id());
  std::thread([&held, limit = a.limit_seconds] {
    std::this_thread::sleep_for(std::chrono::seconds(limit));
    say("held " + std::to_string(held.load()) + " requests");
    ::_exit(0);
  }).detach();
  (*tunnel)->wait();
  say("tunnel closed: " + (*tunnel)->close_reason());
  say("held " + std::to_string(held.load()) + " requests");
  return 0;
}

int pending(const fleet::HubAddress& hub, const Args& a) {
  int refused = 0;
  for (int i = 0; i < a.count; ++i) {
    auto dialed = fleet::dial_hub(hub, fleet::Identity::generate(), 10s, a.enroll);
    if (dialed.ok()) {
      ::close(dialed->fd);
    } else {
      refused += dialed.status().code() == StatusCode::PermissionDenied;
    }
  }
  say("refused " + std::to_string(refused) + " of " + std::to_string(a.count));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Args a;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    const char* value = argv[i + 1];
    if (flag == "--hub") {
      a.hub_url = value;
    } else if (flag == "--mode") {
      a.mode = value;
    } else if (flag == "--enroll") {
      a.enroll = value;
    } else if (flag == "--limit-seconds") {
      a.limit_seconds = std::atoi(value);
    } else if (flag == "--delay-seconds") {
      a.delay_seconds = std::atoi(value);
    } else if (flag == "--count") {
      a.count = std::atoi(value);
    } else {
      return usage();
    }
  }
  if (a.hub_url.empty() || a.limit_seconds <= 0 || a.delay_seconds < 0 || a.count < 1) return usage();
  auto hub = fleet::parse_hub_url(a.hub_url);
  if (!hub.ok()) {
    std::fprintf(stderr, "hostile_agent: %s\n", hub.status().message().c_str());
    return 1;
  }
  if (a.mode == "endless") return endless(*hub, a);
  if (a.mode == "slow-info") return slow_info(*hub, a);
  if (a.mode == "pending") return pending(*hub, a);
  if (a.mode == "fake-ack") return scripted_device(*hub, a, /*honest_secrets=*/false);
  if (a.mode == "mute") return scripted_device(*hub, a, /*honest_secrets=*/true);
  return usage();
}
