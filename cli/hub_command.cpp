// `cellserve hub --listen ADDR --data-dir DIR [--domain D]`: the fleet's control plane and front
// door (fleet/hub/hub.h). Runs until SIGINT or SIGTERM.
#include <pthread.h>
#include <csignal>
#include <optional>

#include <boost/json.hpp>

#include "cli/commands.h"
#include "cli/hub_client.h"
#include "cli/key_file.h"
#include "fleet/crypto/secret_box.h"
#include "fleet/hub/hub.h"
#include "fleet/tls/dev_cert.h"
#include "net/cors.h"

namespace cellserve::cli {
namespace {

struct HubCliOptions {
  std::string listen = "127.0.0.1:8090";
  std::string data_dir;
  std::string store;  // --store, else $CELLSERVE_STORE, else DATA_DIR/hub.db
  std::string domain;
  std::string api_key_file;
  std::string tls_cert;
  std::string tls_key;
  std::string cors_origins;
  std::vector<std::string> public_urls;
  std::string cluster_key_file;  // --cluster-key-file, else $CELLSERVE_CLUSTER_KEY_FILE
  std::string peer_url;
  std::string peer_ca;
  double poll_seconds = 1;
  double ping_timeout_seconds = 10;
  int max_connections = 1024;
  int max_connections_per_ip = 64;
  int max_agents = fleet::kMaxHubConnections;
  bool insecure = false;
  bool dev_tls = false;
  std::string attestation_roots;
  std::string attestation_status;
  std::string attestation_status_refresh = "1h";
  int attestation_min_patch = 0;
  std::vector<std::string> attestation_apps;
};

std::optional<int64_t> parse_duration(const std::string& text);

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
  ho.store = o.store;
  if (const char* env = std::getenv("CELLSERVE_STORE"); ho.store.empty() && env != nullptr) ho.store = env;
  ho.cluster_key_file = o.cluster_key_file;
  if (const char* env = std::getenv("CELLSERVE_CLUSTER_KEY_FILE"); ho.cluster_key_file.empty() && env != nullptr) {
    ho.cluster_key_file = env;
  }
  ho.peer_url = o.peer_url;
  ho.peer_ca = o.peer_ca;
  ho.domain = o.domain;
  ho.tls_cert = o.tls_cert;
  ho.tls_key = o.tls_key;
  if (o.dev_tls) {
    if (!o.tls_cert.empty() || !o.tls_key.empty()) {
      print_error("hub", "--dev-tls makes its own certificate: leave out --tls-cert and --tls-key");
      return 2;
    }
    auto cert = fleet::ensure_dev_certificate(o.data_dir + "/dev-tls", {ho.host});
    if (!cert.ok()) {
      print_error("hub", cert.status().message());
      return 1;
    }
    ho.tls_cert = cert->cert_file;
    ho.tls_key = cert->key_file;
    std::fprintf(stderr,
                 "cellserve hub: %s self-signed certificate %s (for local use), SHA-256 fingerprint %s; agents "
                 "trust it with --hub-ca %s\n",
                 cert->created ? "made a" : "using the", cert->cert_file.c_str(), cert->fingerprint.c_str(),
                 cert->cert_file.c_str());
  }
  ho.cors_origins = net::split_origins(o.cors_origins);
  ho.public_urls = o.public_urls;
  ho.insecure = o.insecure;
  ho.attestation_roots = o.attestation_roots;
  ho.attestation_status = o.attestation_status;
  ho.attestation_min_patch = o.attestation_min_patch;
  ho.attestation_apps = o.attestation_apps;
  const std::optional<int64_t> refresh = parse_duration(o.attestation_status_refresh);
  if (!refresh || *refresh < 1 || *refresh > 7 * 86400) {
    print_error("hub", "--attestation-status-refresh " + o.attestation_status_refresh +
                           ": want a duration from 1s to 7d (\"30s\", \"15m\", \"1h\")");
    return 1;
  }
  ho.attestation_status_refresh = std::chrono::seconds(*refresh);
  ho.max_connections = o.max_connections;
  ho.max_connections_per_address = o.max_connections_per_ip;
  ho.max_agents = o.max_agents;
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
  sigaddset(&signals, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  auto hub = fleet::Hub::start(ho);
  if (!hub.ok()) {
    print_error("hub", hub.status().message());
    return 1;
  }
  int sig = 0;
  // SIGHUP reloads the certificate (a renewed one), keeping every connection; the others stop.
  while (sigwait(&signals, &sig) == 0 && sig == SIGHUP) {
    if (Status s = (*hub)->reload_tls(); !s.ok()) {
      std::fprintf(stderr, "cellserve hub: SIGHUP: certificate not reloaded: %s\n", s.message().c_str());
    }
  }
  std::fprintf(stderr, "cellserve hub: %s, shutting down\n", sig == SIGINT ? "SIGINT" : "SIGTERM");
  (*hub)->stop();
  return 0;
}

// "30s", "15m", "24h", "7d" (or plain seconds) as seconds; nullopt for anything else.
std::optional<int64_t> parse_duration(const std::string& text) {
  if (text.empty() || text.size() > 12) return std::nullopt;
  int64_t unit = 1;
  std::string digits = text;
  switch (text.back()) {
    case 's':
      unit = 1;
      break;
    case 'm':
      unit = 60;
      break;
    case 'h':
      unit = 3600;
      break;
    case 'd':
      unit = 86400;
      break;
    default:
      break;
  }
  if (unit != 1 || text.back() == 's') digits.pop_back();
  if (digits.empty() || digits.find_first_not_of("0123456789") != std::string::npos) return std::nullopt;
  return std::stoll(digits) * unit;
}

// `cellserve hub tokens create`: an enrolment token from a running hub, printed once.
void add_tokens_command(CLI::App& hub_cmd, int* exit_code) {
  CLI::App* tokens = hub_cmd.add_subcommand("tokens", "Enrolment tokens that let devices join a closed hub");
  tokens->require_subcommand(1);
  CLI::App* create = tokens->add_subcommand("create", "Create a token (printed once; the hub keeps only its hash)");
  auto hub = std::make_shared<std::string>(default_hub_url());
  auto uses = std::make_shared<int>(1);
  auto expires = std::make_shared<std::string>("24h");
  auto label = std::make_shared<std::string>();
  create->add_option("--hub", *hub, "The hub (else $CELLSERVE_HUB)")->capture_default_str();
  create->add_option("--uses", *uses, "Devices it may enrol")->capture_default_str();
  create->add_option("--expires", *expires, "Validity: 30m, 24h, 7d (at most 30d)")->capture_default_str();
  create->add_option("--label", *label, "A note shown when tokens are listed");
  create->callback([hub, uses, expires, label, exit_code] {
    const std::optional<int64_t> seconds = parse_duration(*expires);
    if (!seconds) {
      print_error("hub tokens", "--expires " + *expires + ": expected a duration such as 30m, 24h or 7d");
      *exit_code = 2;
      return;
    }
    const boost::json::object body{{"uses", *uses}, {"expires_seconds", *seconds}, {"label", *label}};
    auto r = hub_request(*hub, "POST", "/api/v1/enrollment-tokens", boost::json::serialize(body));
    if (!r.ok()) {
      print_error("hub tokens", r.status().message());
      *exit_code = 1;
      return;
    }
    std::printf("%s\n", json_string(r->as_object(), "token").c_str());
    std::fprintf(stderr, "token %s: %lld use(s); start an agent with --enroll <token>\n",
                 json_string(r->as_object(), "id").c_str(),
                 static_cast<long long>(json_number(r->as_object().if_contains("uses_left"))));
  });

  CLI::App* ls = tokens->add_subcommand("ls", "List tokens: id, label, uses left, expiry (never the tokens)");
  ls->add_option("--hub", *hub, "The hub (else $CELLSERVE_HUB)")->capture_default_str();
  ls->callback([hub, exit_code] {
    auto r = hub_request(*hub, "GET", "/api/v1/enrollment-tokens");
    if (!r.ok()) {
      print_error("hub tokens", r.status().message());
      *exit_code = 1;
      return;
    }
    std::printf("%-12s %-20s %9s %15s  %s\n", "id", "label", "uses left", "expires (ms)", "usable");
    for (const boost::json::value& tv : r->at("tokens").as_array()) {
      const boost::json::object& t = tv.as_object();
      const boost::json::value* usable = t.if_contains("usable");
      std::printf("%-12s %-20s %9lld %15lld  %s\n", json_string(t, "id").c_str(), json_string(t, "label").c_str(),
                  static_cast<long long>(json_number(t.if_contains("uses_left"))),
                  static_cast<long long>(json_number(t.if_contains("expires_ms"))),
                  usable != nullptr && usable->is_bool() && usable->as_bool() ? "yes" : "no");
    }
  });

  auto id = std::make_shared<std::string>();
  CLI::App* withdraw = tokens->add_subcommand("withdraw", "Spend a token's remaining uses: it enrols no more devices");
  withdraw->add_option("id", *id, "The token's id (hub tokens ls)")->required();
  withdraw->add_option("--hub", *hub, "The hub (else $CELLSERVE_HUB)")->capture_default_str();
  withdraw->callback([hub, id, exit_code] {
    auto r = hub_request(*hub, "POST", "/api/v1/enrollment-tokens/" + *id + "/withdraw");
    if (!r.ok()) {
      print_error("hub tokens", r.status().message());
      *exit_code = 1;
      return;
    }
    std::printf("%s withdrawn\n", id->c_str());
  });
}

// `cellserve hub cluster-key FILE`: a fresh cluster key for --cluster-key-file (mode 0600).
void add_cluster_key_command(CLI::App& hub_cmd, int* exit_code) {
  CLI::App* make = hub_cmd.add_subcommand(
      "cluster-key", "Write a fresh random cluster key (mode 0600) for --cluster-key-file; copy it to every hub");
  auto path = std::make_shared<std::string>();
  make->add_option("FILE", *path, "Where to write it (never over an existing file)")->required();
  make->callback([path, exit_code] {
    if (Status s = fleet::SecretBox::create(*path); !s.ok()) {
      print_error("hub cluster-key", s.message());
      *exit_code = 1;
      return;
    }
    std::fprintf(stderr, "cluster key written to %s: give every hub of the fleet the same file\n", path->c_str());
  });
}

}  // namespace

void add_hub_command(CLI::App& app, int* exit_code) {
  auto o = std::make_shared<HubCliOptions>();
  CLI::App* cmd = app.add_subcommand("hub", "Run the fleet hub: registry, matching, deployments, replica addresses");
  cmd->add_option("--listen", o->listen, "Address to listen on (HOST:PORT; port 0: any)")->capture_default_str();
  cmd->add_option("--data-dir", o->data_dir, "Folder for hub.db (the store) and files/ (served at /files/); required");
  cmd->add_option("--store", o->store,
                  "The store (else $CELLSERVE_STORE; default DATA_DIR/hub.db): a SQLite file, or a PostgreSQL URL "
                  "postgresql://USER:PASSWORD@HOST:PORT/DB?sslmode=verify-full shared by several hubs "
                  "(docs/postgres.md)");
  cmd->add_option("--domain", o->domain, "Route Host <deployment>-<n>.<domain> to that replica");
  cmd->add_option("--api-key-file", o->api_key_file,
                  "Admin key (else $CELLSERVE_HUB_KEY): needed by /api/v1/*, /metrics, every deployment and "
                  "replica address, and /files/ (agents use their download tokens); none: an open hub, "
                  "loopback only");
  cmd->add_flag("--insecure", o->insecure, "Run an open hub (no key) on a non-loopback address");
  cmd->add_flag(
      "--dev-tls", o->dev_tls,
      "Serve HTTPS with a self-signed certificate made in DATA_DIR/dev-tls (local use; prints its fingerprint)");
  cmd->add_option("--public-url", o->public_urls,
                  "A URL agents dial this hub at (repeatable): their tunnel signatures must name one of them");
  cmd->add_option("--cluster-key-file", o->cluster_key_file,
                  "The key shared by every hub of a fleet (else $CELLSERVE_CLUSTER_KEY_FILE): it seals secrets at "
                  "rest and authenticates hubs to each other; required with a PostgreSQL store (make one with "
                  "`cellserve hub cluster-key FILE`); default: DATA_DIR/secrets.key");
  cmd->add_option("--peer-url", o->peer_url,
                  "Where the other hubs dial this one (default: the first --public-url, else the --listen address)");
  cmd->add_option("--peer-ca", o->peer_ca,
                  "PEM CA that signed the other hubs' certificates, to reach https peers (default: the system store)");
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
                  "The same per client IP address (0: no cap; raise it for a backend calling from one address). "
                  "Agents' tunnels are not clients: they count against --max-agents only")
      ->capture_default_str();
  cmd->add_option("--max-agents", o->max_agents,
                  "Agent tunnels held at once (1.." + std::to_string(fleet::kMaxHubConnections) +
                      "; one thread each; a device re-dialing replaces its own)")
      ->capture_default_str();
  cmd->add_option("--attestation-roots", o->attestation_roots,
                  "PEM file of the roots device attestation chains must lead to (default: Google's hardware "
                  "attestation roots, built in)");
  cmd->add_option("--attestation-status", o->attestation_status,
                  "Google's attestation status list: an http(s) URL (e.g. "
                  "https://android.googleapis.com/attestation/status) or a local file; fetched at start and every "
                  "--attestation-status-refresh, and a change re-judges every connected attested device");
  cmd->add_option("--attestation-status-refresh", o->attestation_status_refresh,
                  "How often the status list is fetched again (\"30s\", \"15m\", \"1h\")")
      ->capture_default_str();
  cmd->add_option("--attestation-app", o->attestation_apps,
                  "PACKAGE[:SIGNING_DIGEST_HEX] of an app allowed to hold attested keys (repeatable; default: any "
                  "app); evidence from another app is refused as wrong_app");
  cmd->add_option("--attestation-min-patch", o->attestation_min_patch,
                  "Lowest OS patch level (YYYYMM) an attested device may report (default: any)")
      ->check(CLI::Range(0, 999912));
  add_tokens_command(*cmd, exit_code);
  add_cluster_key_command(*cmd, exit_code);
  add_hub_migrate_store_command(*cmd, exit_code);
  cmd->callback([cmd, o, exit_code] {
    // `hub tokens ...` talks to a running hub; `hub cluster-key` writes a file; `hub migrate-store`
    // copies a store.
    if (cmd->got_subcommand("tokens") || cmd->got_subcommand("cluster-key") || cmd->got_subcommand("migrate-store"))
      return;
    if (o->data_dir.empty()) {
      print_error("hub", "--data-dir is required");
      *exit_code = 2;
      return;
    }
    *exit_code = run_hub(*o);
  });
}

}  // namespace cellserve::cli
