// A scripted device for the signing end-to-end test (tests/fleet/e2e/signing.test.mjs). It joins
// a hub the way a real agent does (challenge, signed upgrade, HTTP/2 tunnel), registers as a
// simulated device, opens the secrets of each replica it is assigned and reports it ready, and
// answers every request for a replica with a fixed chat completion carrying the response headers
// given with --header and the content type given with --content-type: a device that tries to
// reach users with Set-Cookie, HSTS, CORS, a redirect, a second signature or an HTML page.
//
//   scripted_device --hub URL [--header 'Name: value']... [--content-type TYPE]
//
// Prints "joined ID" once registered, then serves until killed; exits 1 when it cannot join.
#include <cstdio>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include <boost/json.hpp>

#include "fleet/agent/hub_dial.h"
#include "fleet/crypto/identity.h"
#include "fleet/spec/agent_protocol.h"
#include "fleet/tunnel/tunnel_server.h"
#include "net/json_error.h"

namespace {

using namespace cellserve;
using namespace std::chrono_literals;
namespace json = boost::json;

constexpr std::string_view kAnswer =
    R"({"id":"chatcmpl-scripted","object":"chat.completion","created":1,"model":"scripted","choices":[{"index":0,)"
    R"("message":{"role":"assistant","content":"scripted"},"finish_reason":"stop"}],)"
    R"("usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}})";

int usage() {
  std::fprintf(stderr, "usage: scripted_device --hub URL [--header 'Name: value']... [--content-type TYPE]\n");
  return 1;
}

// What the device serves: one report per assigned replica, each ready once its secrets opened.
struct Replicas {
  std::mutex mu;
  std::vector<fleet::ReplicaReport> reports;

  void assign(const fleet::Identity& identity, const std::vector<fleet::AssignmentMessage>& wanted) {
    std::vector<fleet::ReplicaReport> next;
    for (const fleet::AssignmentMessage& a : wanted) {
      fleet::ReplicaReport r;
      r.deployment = a.deployment;
      r.index = a.index;
      r.state = fleet::ReplicaState::Ready;
      r.prefill_tps = 1000;
      r.decode_tps = 100;
      r.slots = 4;
      r.free_slots = 4;
      r.model_sha256 = a.model_sha256;
      // Opened and proved as a real agent does: HMAC under the key inside the box.
      if (auto opened = identity.open_sealed(a.sealed_secrets); opened.ok()) {
        if (auto secrets = fleet::secrets_from_payload(*opened); secrets.ok()) {
          r.secrets_version = a.secrets_version;
          r.secrets_proof =
              fleet::secrets_ack_proof(secrets->ack_key, a.deployment, a.secrets_version, a.secrets_challenge);
        }
      }
      next.push_back(std::move(r));
    }
    std::lock_guard lock(mu);
    reports = std::move(next);
  }
  std::string status_json() {
    std::lock_guard lock(mu);
    return json::serialize(fleet::to_json(reports));
  }
};

}  // namespace

int main(int argc, char** argv) {
  std::string hub_url;
  std::string content_type = "application/json";
  net::HeaderList headers;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    const std::string value = argv[i + 1];
    if (flag == "--hub") {
      hub_url = value;
    } else if (flag == "--content-type") {
      content_type = value;
    } else if (flag == "--header" && value.find(": ") != std::string::npos) {
      headers.emplace_back(value.substr(0, value.find(": ")), value.substr(value.find(": ") + 2));
    } else {
      return usage();
    }
  }
  if (hub_url.empty()) return usage();
  auto hub = fleet::parse_hub_url(hub_url);
  if (!hub.ok()) {
    std::fprintf(stderr, "scripted_device: %s\n", hub.status().message().c_str());
    return 1;
  }
  const fleet::Identity identity = fleet::Identity::generate();
  auto dialed = fleet::dial_hub(*hub, identity, 10s);
  if (!dialed.ok()) {
    std::fprintf(stderr, "scripted_device: cannot join: %s\n", dialed.status().message().c_str());
    return 1;
  }
  Replicas replicas;
  fleet::AgentInfo info;
  info.name = "scripted";
  info.specs = {8ULL << 30, 100ULL << 30, 4, 4, "x86_64", "linux", {}};
  info.benchmark = {1000, 100, "scripted"};
  info.simulated = true;
  auto handler = [&](const net::HttpRequest& req, net::ResponseWriter& w) {
    if (req.path == fleet::kAgentInfoPath)
      return w.send(200, "application/json", json::serialize(fleet::to_json(info)));
    if (req.path == fleet::kAgentStatusPath) return w.send(200, "application/json", replicas.status_json());
    if (req.path == fleet::kAgentAssignmentsPath) {
      auto v = fleet::parse_json(req.body, "assignments");
      if (!v.ok()) return net::send_error(w, 400, v.status().message());
      auto wanted = fleet::assignments_from_json(*v);
      if (!wanted.ok()) return net::send_error(w, 400, wanted.status().message());
      replicas.assign(identity, *wanted);
      return w.send(200, "application/json", R"({"ok":true})");
    }
    if (req.path.starts_with("/d/")) return w.send(200, content_type, std::string(kAnswer), headers);
    net::send_error(w, 404, "nothing here");
  };
  auto tunnel = fleet::TunnelServer::start(dialed->fd, handler, {}, std::move(dialed->initial_bytes));
  if (!tunnel.ok()) {
    std::fprintf(stderr, "scripted_device: tunnel: %s\n", tunnel.status().message().c_str());
    return 1;
  }
  std::printf("joined %s\n", identity.id().c_str());
  std::fflush(stdout);
  (*tunnel)->wait();
  std::fprintf(stderr, "scripted_device: the hub closed the tunnel (%s)\n", (*tunnel)->close_reason().c_str());
  (*tunnel)->close();
  return 0;
}
