// `cellserve hub --listen ADDR --data-dir DIR [--domain D]`: the fleet's control plane and front
// door (fleet/hub/hub.h). Runs until SIGINT or SIGTERM.
#include <pthread.h>
#include <csignal>

#include "cli/commands.h"
#include "cli/key_file.h"
#include "fleet/hub/hub.h"
#include "net/cors.h"

namespace cellserve::cli {
namespace {

struct HubCliOptions {
  std::string listen = "127.0.0.1:8090";
  std::string data_dir;
  std::string domain;
  std::string api_key_file;
  std::string tls_cert;
  std::string tls_key;
  std::string cors_origins;
  double poll_seconds = 1;
  double ping_timeout_seconds = 10;
  int max_connections = 1024;
  int max_connections_per_ip = 64;
  bool insecure = false;
};

int run_hub(const HubCliOptions& o) {
  fleet::HubOptions ho;
  const size_t colon = o.listen.rfind(':');
  if (colon == std::string::npos) {
    print_error("hub", "--listen " + o.listen + ": expected HOST:PORT");
    return 1;
  }
  ho.host = o.listen.substr(0, colon);
  try {
    ho.port = std::stoi(o.listen.substr(colon + 1));
  } catch (...) {
    ho.port = -1;
  }
  if (ho.port < 0 || ho.port > 65535) {
    print_error("hub", "--listen " + o.listen + ": bad port");
    return 1;
  }
  if (!(o.poll_seconds >= 0.05 && o.poll_seconds <= 60) ||
      !(o.ping_timeout_seconds >= 0.5 && o.ping_timeout_seconds <= 600)) {
    print_error("hub", "--poll-seconds must be in [0.05, 60] and --ping-timeout in [0.5, 600]");
    return 1;
  }
  ho.data_dir = o.data_dir;
  ho.domain = o.domain;
  ho.tls_cert = o.tls_cert;
  ho.tls_key = o.tls_key;
  ho.cors_origins = net::split_origins(o.cors_origins);
  ho.insecure = o.insecure;
  ho.max_connections = o.max_connections;
  ho.max_connections_per_address = o.max_connections_per_ip;
  ho.poll_interval = std::chrono::milliseconds(static_cast<int64_t>(o.poll_seconds * 1000));
  ho.ping_timeout = std::chrono::milliseconds(static_cast<int64_t>(o.ping_timeout_seconds * 1000));
  if (!o.api_key_file.empty()) {
    auto key = read_key_file("--api-key-file", o.api_key_file);
    if (!key.ok()) {
      print_error("hub", key.status().message());
      return 1;
    }
    ho.api_key = *key;
  } else if (const char* env = std::getenv("CELLSERVE_HUB_KEY"); env != nullptr) {
    ho.api_key = env;
  }
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  auto hub = fleet::Hub::start(ho);
  if (!hub.ok()) {
    print_error("hub", hub.status().message());
    return 1;
  }
  int sig = 0;
  sigwait(&signals, &sig);
  std::fprintf(stderr, "cellserve hub: %s, shutting down\n", sig == SIGINT ? "SIGINT" : "SIGTERM");
  (*hub)->stop();
  return 0;
}

}  // namespace

void add_hub_command(CLI::App& app, int* exit_code) {
  auto o = std::make_shared<HubCliOptions>();
  CLI::App* cmd = app.add_subcommand("hub", "Run the fleet hub: registry, matching, deployments, replica addresses");
  cmd->add_option("--listen", o->listen, "Address to listen on (HOST:PORT; port 0: any)")->capture_default_str();
  cmd->add_option("--data-dir", o->data_dir, "Folder for hub.db (the store) and files/ (served at /files/)")
      ->required();
  cmd->add_option("--domain", o->domain, "Route Host <deployment>-<n>.<domain> to that replica");
  cmd->add_option("--api-key-file", o->api_key_file,
                  "Admin key (else $CELLSERVE_HUB_KEY): needed by /api/v1/*, /metrics, every deployment and "
                  "replica address, and /files/ (agents use their download tokens); none: an open hub, "
                  "loopback only");
  cmd->add_flag("--insecure", o->insecure, "Run an open hub (no key) on a non-loopback address");
  cmd->add_option("--cors-origins", o->cors_origins,
                  "Origins whose web pages may call the hub, comma-separated (\"*\": any; default: none)");
  cmd->add_option("--tls-cert", o->tls_cert, "PEM certificate chain: serve HTTPS to users and agents");
  cmd->add_option("--tls-key", o->tls_key, "PEM private key of --tls-cert");
  cmd->add_option("--poll-seconds", o->poll_seconds, "Agent status poll and matching interval")->capture_default_str();
  cmd->add_option("--ping-timeout", o->ping_timeout_seconds, "Seconds of tunnel silence before an agent is offline")
      ->capture_default_str();
  cmd->add_option("--max-connections", o->max_connections,
                  "Client connections held at once (1.." + std::to_string(fleet::kMaxHubConnections) +
                      "; one thread each; at the cap an idle one is evicted, else 503)")
      ->capture_default_str();
  cmd->add_option("--max-connections-per-ip", o->max_connections_per_ip,
                  "The same per client IP address (0: no cap; raise it for a backend calling from one address)")
      ->capture_default_str();
  cmd->callback([o, exit_code] { *exit_code = run_hub(*o); });
}

}  // namespace cellserve::cli
