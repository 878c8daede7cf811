// `cellserve up [--model PATH|URL|hf://...] [--agents N] [--replicas N] [--port P] [--data-dir DIR]`:
// a whole fleet on this machine in one process tree (a hub on SQLite, N agents, a deployment of
// the model), ready to answer; stays in the foreground until Ctrl-C. docs/up.md.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <thread>

#include <boost/json.hpp>

#include "cli/commands.h"
#include "cli/hub_client.h"
#include "cli/local_fleet.h"
#include "cli/up_model.h"
#include "fleet/crypto/identity.h"
#include "fleet/crypto/private_file.h"
#include "fleet/crypto/sha256.h"
#include "fleet/spec/deployment_spec.h"

namespace cellserve::cli {
namespace {

namespace fs = std::filesystem;
namespace json = boost::json;
using Clock = std::chrono::steady_clock;

struct UpOptions {
  std::string model;
  int agents = 2;
  int replicas = 0;  // 0: one per agent
  int port = 8090;
  std::string data_dir;
  int ready_timeout_s = 600;
};

// What the steps share: the folder, the hub's address and admin key, and the children.
struct Up {
  UpOptions o;
  std::string dir;
  std::string hub_url;
  std::string admin_key;
  std::string deployment;
  // Made once the model is here (a download stays interruptible): from then on SIGINT and SIGTERM
  // are blocked and read where the steps wait.
  std::unique_ptr<LocalFleet> fleet;
  int stop_signal = 0;  // SIGINT or SIGTERM once received

  Result<json::value> api(const std::string& method, const std::string& path, const std::string& body = {}) const {
    return data_request(hub_url, admin_key, method, path, body);  // the admin key, never the environment's
  }
};

// --data-dir, else $XDG_DATA_HOME/cellserve/up, else ~/.local/share/cellserve/up; created 0700.
Result<std::string> data_dir(const std::string& flag) {
  std::string dir = flag;
  const char* xdg = std::getenv("XDG_DATA_HOME");
  const char* home = std::getenv("HOME");
  if (dir.empty() && xdg != nullptr && *xdg != '\0') dir = std::string(xdg) + "/cellserve/up";
  if (dir.empty() && home != nullptr && *home != '\0') dir = std::string(home) + "/.local/share/cellserve/up";
  if (dir.empty()) return Status::invalid_argument("no data folder: pass --data-dir DIR");
  std::error_code ec;
  const bool created = !fs::exists(dir, ec);
  fs::create_directories(fs::path(dir) / "logs", ec);
  if (ec) return Status::internal("--data-dir " + dir + ": " + ec.message());
  if (created) fs::permissions(dir, fs::perms::owner_all, ec);  // it holds the admin key and the devices' identities
  return fs::absolute(dir).string();
}

// The port is checked before anything starts, so that a busy one is one clear line.
Status check_port_free(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return Status::internal(std::string("socket: ") + std::strerror(errno));
  const int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));  // as the hub binds: TIME_WAIT is no obstacle
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const int rc = ::bind(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr));
  const int bind_errno = errno;
  ::close(fd);
  if (rc == 0) return {};
  if (bind_errno == EADDRINUSE) {
    return Status::unavailable("port " + std::to_string(port) +
                               " on 127.0.0.1 is in use (another hub, or `up` already running?): pick another with "
                               "--port");
  }
  return Status::unavailable("port " + std::to_string(port) + ": " + std::strerror(bind_errno));
}

// DIR/admin.key (0600): made at the first start, reused after, so the dashboard login stays valid.
Result<std::string> admin_key(const std::string& dir) {
  const std::string path = dir + "/admin.key";
  CS_ASSIGN_OR_RETURN(std::optional<std::string> existing, fleet::read_private_file(path, "admin key", 4096));
  if (existing) {
    std::string key = existing->substr(0, existing->find_first_of("\r\n"));
    if (!key.empty()) return key;
  }
  std::string key = "csa-" + fleet::random_hex(32);
  fs::remove(path);
  CS_RETURN_IF_ERROR(fleet::write_private_file(path, key + "\n"));
  return key;
}

// Waits, up to `limit`, until `probe` says done (true); meanwhile a signal or a child's exit ends
// the wait with an error naming it. A probe error only means "not yet" until the limit, where it
// is the message.
Status wait_until(Up& up, const std::string& what, std::chrono::seconds limit,
                  const std::function<Result<bool>()>& probe) {
  const auto deadline = Clock::now() + limit;
  std::string last_error;
  for (;;) {
    const Result<bool> done = probe();
    if (done.ok() && *done) return {};
    if (!done.ok()) last_error = done.status().message();
    if (Clock::now() >= deadline) {
      return Status::unavailable("timed out after " + std::to_string(limit.count()) + " s waiting for " + what +
                                 (last_error.empty() ? "" : ": " + last_error));
    }
    const FleetEvent event = up.fleet->wait_for_event(std::chrono::milliseconds(300));
    if (event.signal != 0) {
      up.stop_signal = event.signal;
      return Status::unavailable(std::string(event.signal == SIGINT ? "SIGINT" : "SIGTERM") + " while waiting for " +
                                 what);
    }
    if (event.exited_child) {
      const ChildProcess& c = *event.exited_child;
      return Status::unavailable(c.name + " " + describe_wait_status(c.wait_status) + " while waiting for " + what +
                                 "; its log: " + c.log_path);
    }
  }
}

Status start_hub(Up& up) {
  const std::string hub_dir = up.dir + "/hub";
  CS_RETURN_IF_ERROR(up.fleet->start("hub",
                                     {"hub", "--listen", "127.0.0.1:" + std::to_string(up.o.port), "--data-dir",
                                      hub_dir, "--api-key-file", up.dir + "/admin.key"},
                                     up.dir + "/logs/hub.log"));
  return wait_until(up, "the hub to answer at " + up.hub_url, std::chrono::seconds(30), [&]() -> Result<bool> {
    CS_ASSIGN_OR_RETURN(const json::value health, up.api("GET", "/health"));
    return health.is_object();
  });
}

// v[key] as an array; an empty one when it is absent or not an array (the hub's answers are read
// defensively: a surprise is "not ready yet", never a crash that leaves the children to PDEATHSIG).
const json::array& array_field(const json::value& v, const char* key) {
  static const json::array empty;
  const json::value* a = v.is_object() ? v.as_object().if_contains(key) : nullptr;
  return a != nullptr && a->is_array() ? a->as_array() : empty;
}

int online_processors(const json::value& list) {
  int online = 0;
  for (const json::value& p : array_field(list, "processors")) {
    const json::value* on = p.is_object() ? p.as_object().if_contains("online") : nullptr;
    if (on != nullptr && on->is_bool() && on->as_bool()) ++online;
  }
  return online;
}

// DIR/up.pids: "<name> <pid>" per process of the tree, while it runs (for scripts and tests).
void write_pids(const Up& up) {
  std::ofstream out(up.dir + "/up.pids", std::ios::trunc);
  out << "up " << ::getpid() << "\n";
  for (const ChildProcess& c : up.fleet->children()) out << c.name << " " << c.pid << "\n";
}

// The agents, enrolled with one token for exactly N devices that is withdrawn once they joined
// (it travels on their command lines, so it must not outlive the start).
Status start_agents(Up& up) {
  const json::object body{{"uses", up.o.agents}, {"expires_seconds", 900}, {"label", "cellserve up"}};
  CS_ASSIGN_OR_RETURN(const json::value token, up.api("POST", "/api/v1/enrollment-tokens", json::serialize(body)));
  const std::string token_text = token.is_object() ? json_string(token.as_object(), "token") : "";
  const std::string token_id = token.is_object() ? json_string(token.as_object(), "id") : "";
  if (token_text.empty()) return Status::unavailable("the hub made no enrolment token");
  for (int i = 1; i <= up.o.agents; ++i) {
    const std::string name = "agent-" + std::to_string(i);
    CS_RETURN_IF_ERROR(up.fleet->start(name,
                                       {"agent", "--hub", up.hub_url, "--data-dir", up.dir + "/" + name, "--name",
                                        "up-" + name, "--enroll", token_text},
                                       up.dir + "/logs/" + name + ".log"));
  }
  write_pids(up);
  const Status joined = wait_until(up, std::to_string(up.o.agents) + " agents to join the hub",
                                   std::chrono::seconds(300), [&]() -> Result<bool> {
                                     CS_ASSIGN_OR_RETURN(const json::value list, up.api("GET", "/api/v1/processors"));
                                     return online_processors(list) >= up.o.agents;
                                   });
  (void)up.api("POST", "/api/v1/enrollment-tokens/" + token_id + "/withdraw");
  return joined;
}

// The deployment as `cellserve deploy` sends it (the same spec type, validated by the hub), with
// the model served by the hub itself. Deployments of earlier runs in this folder are removed:
// they would hold the agents.
Status deploy(Up& up, const std::string& model_file, const std::string& sha256) {
  CS_ASSIGN_OR_RETURN(const json::value list, up.api("GET", "/api/v1/deployments"));
  for (const json::value& d : array_field(list, "deployments")) {
    const std::string name = d.is_object() ? json_string(d.as_object(), "name") : "";
    if (name.empty() || name == up.deployment) continue;
    CS_RETURN_IF_ERROR(up.api("DELETE", "/api/v1/deployments/" + name).status());
    std::fprintf(stderr, "cellserve up: removed deployment '%s' of an earlier run\n", name.c_str());
  }
  fleet::DeploymentSpec spec;
  spec.name = up.deployment;
  spec.model_url = up.hub_url + "/files/" + model_file;
  spec.model_sha256 = sha256;
  spec.replicas = up.o.replicas;
  spec.max_price_per_day = 1;  // the local agents ask nothing
  // The agents share this machine's cores.
  spec.engine.threads = std::max(1, static_cast<int>(std::thread::hardware_concurrency()) / up.o.agents);
  return up
      .api("PUT", "/api/v1/deployments/" + spec.name,
           json::serialize(fleet::deployment_spec_json(spec, /*with_secrets=*/true)))
      .status();
}

// An API key for the deployment: the one in DIR/api.key ("<id> <key>", 0600) while the hub still
// has it active for this deployment, else a new one kept there.
Result<std::string> api_key(Up& up) {
  const std::string path = up.dir + "/api.key";
  CS_ASSIGN_OR_RETURN(std::optional<std::string> saved, fleet::read_private_file(path, "API key", 4096));
  if (saved) {
    const std::string line = saved->substr(0, saved->find_first_of("\r\n"));
    const size_t space = line.find(' ');
    CS_ASSIGN_OR_RETURN(const json::value keys, up.api("GET", "/api/v1/keys"));
    for (const json::value& kv : array_field(keys, "keys")) {
      if (!kv.is_object()) continue;
      const json::object& k = kv.as_object();
      const json::value* revoked = k.if_contains("revoked");
      if (space != std::string::npos && json_string(k, "id") == line.substr(0, space) &&
          json_string(k, "deployment") == up.deployment && revoked != nullptr && revoked->is_bool() &&
          !revoked->as_bool()) {
        return line.substr(space + 1);
      }
    }
  }
  const json::object body{{"deployment", up.deployment}, {"name", "cellserve up"}};
  CS_ASSIGN_OR_RETURN(const json::value created, up.api("POST", "/api/v1/keys", json::serialize(body)));
  const std::string key = created.is_object() ? json_string(created.as_object(), "key") : "";
  const std::string id = created.is_object() ? json_string(created.as_object(), "id") : "";
  if (key.empty() || id.empty()) return Status::unavailable("the hub made no API key");
  std::error_code ec;
  fs::remove(path, ec);
  CS_RETURN_IF_ERROR(fleet::write_private_file(path, id + " " + key + "\n"));
  return key;
}

// "replica 0 on 3f2a...: failed: <detail>" for each replica not ready, "" when all are.
std::string replicas_not_ready(const json::value& d) {
  std::string out;
  for (const json::value& rv : array_field(d, "replicas")) {
    if (!rv.is_object()) continue;
    const json::object& r = rv.as_object();
    const std::string state = json_string(r, "state");
    if (state == "ready") continue;
    if (!out.empty()) out += "; ";
    out += "replica " + std::to_string(static_cast<long long>(json_number(r.if_contains("index"))));
    const std::string processor = json_string(r, "processor");
    if (!processor.empty()) out += " on device " + processor.substr(0, 12);
    out += ": " + state;
    if (state == "downloading")
      out += " " + std::to_string(static_cast<int>(json_number(r.if_contains("progress")) * 100)) + "%";
    if (const std::string detail = json_string(r, "detail"); !detail.empty()) out += " (" + detail + ")";
  }
  return out;
}

// Waits for every replica to be ready, printing each change of the replicas' states on stderr.
Status wait_ready(Up& up) {
  std::string shown;
  return wait_until(up, "deployment '" + up.deployment + "' to be ready", std::chrono::seconds(up.o.ready_timeout_s),
                    [&]() -> Result<bool> {
                      CS_ASSIGN_OR_RETURN(const json::value d, up.api("GET", "/api/v1/deployments/" + up.deployment));
                      const std::string pending = replicas_not_ready(d);
                      const bool ready =
                          d.is_object() && json_number(d.as_object().if_contains("ready")) >= up.o.replicas;
                      if (ready) return true;
                      if (pending != shown) std::fprintf(stderr, "cellserve up: %s\n", pending.c_str());
                      shown = pending;
                      return Status::unavailable(pending);
                    });
}

void print_ready(const Up& up, const std::string& key) {
  const std::string base = up.hub_url + "/d/" + up.deployment + "/v1";
  std::printf(
      "cellserve up: ready: %d agents, %d replicas of %s\n"
      "endpoint:  %s\n"
      "model:     %s\n"
      "api key:   %s\n"
      "dashboard: %s/ui/  (log in with the admin key in %s/admin.key)\n"
      "logs:      %s/logs/\n"
      "try:       curl %s/chat/completions -H 'Authorization: Bearer %s' -H 'Content-Type: application/json' "
      "-d '{\"model\":\"%s\",\"messages\":[{\"role\":\"user\",\"content\":\"Hello\"}]}'\n"
      "Ctrl-C stops everything.\n",
      up.o.agents, up.o.replicas, up.deployment.c_str(), base.c_str(), up.deployment.c_str(), key.c_str(),
      up.hub_url.c_str(), up.dir.c_str(), up.dir.c_str(), base.c_str(), key.c_str(), up.deployment.c_str());
  std::fflush(stdout);
}

// Until SIGINT or SIGTERM (0) or a child's unexpected exit (1).
int serve_until_stopped(Up& up) {
  for (;;) {
    const FleetEvent event = up.fleet->wait_for_event(std::chrono::seconds(1));
    if (event.signal != 0) {
      std::fprintf(stderr, "cellserve up: %s, stopping the agents and the hub\n",
                   event.signal == SIGINT ? "SIGINT" : "SIGTERM");
      return 0;
    }
    if (event.exited_child) {
      const ChildProcess& c = *event.exited_child;
      print_error("up", c.name + " " + describe_wait_status(c.wait_status) + " unexpectedly (its log: " + c.log_path +
                            "); stopping the rest");
      return 1;
    }
  }
}

// Everything before the fleet starts: options, folder, model, port, admin key. Nothing runs yet.
Status prepare(Up& up, std::string* model_file, std::string* sha256) {
  if (up.o.agents < 1 || up.o.agents > 16) return Status::invalid_argument("--agents must be in [1, 16]");
  if (up.o.replicas == 0) up.o.replicas = up.o.agents;
  if (up.o.replicas < 1 || up.o.replicas > up.o.agents) {
    return Status::invalid_argument("--replicas must be in [1, --agents] (one replica per agent)");
  }
  if (up.o.port < 1 || up.o.port > 65535) return Status::invalid_argument("--port must be in [1, 65535]");
  const bool is_default = up.o.model.empty();
  CS_ASSIGN_OR_RETURN(const std::string model, local_model_file(is_default ? kDefaultUpModel : up.o.model, is_default));
  CS_RETURN_IF_ERROR(check_port_free(up.o.port));
  CS_ASSIGN_OR_RETURN(up.dir, data_dir(up.o.data_dir));
  up.hub_url = "http://127.0.0.1:" + std::to_string(up.o.port);
  CS_ASSIGN_OR_RETURN(up.admin_key, admin_key(up.dir));
  const std::string files = up.dir + "/hub/files";
  std::error_code ec;
  fs::create_directories(files, ec);
  CS_ASSIGN_OR_RETURN(*model_file, place_in_hub_files(model, files));
  CS_ASSIGN_OR_RETURN(*sha256, fleet::sha256_file(files + "/" + *model_file));
  up.deployment = deployment_name_for(model);
  return {};
}

int run_up(const UpOptions& o) {
  Up up;
  up.o = o;
  std::string model_file;
  std::string sha256;
  Status s = prepare(up, &model_file, &sha256);
  up.fleet = std::make_unique<LocalFleet>();
  if (s.ok()) {
    std::fprintf(stderr, "cellserve up: hub on %s, %d agents, data and logs in %s\n", up.hub_url.c_str(), up.o.agents,
                 up.dir.c_str());
    s = start_hub(up);
  }
  if (s.ok()) s = start_agents(up);
  if (s.ok()) s = deploy(up, model_file, sha256);
  Result<std::string> key = s.ok() ? api_key(up) : Result<std::string>(s);
  if (key.ok()) s = wait_ready(up);
  if (!key.ok()) s = key.status();
  int code = 0;
  if (!s.ok() && up.stop_signal != 0) std::fprintf(stderr, "cellserve up: %s; stopping\n", s.message().c_str());
  if (!s.ok() && up.stop_signal == 0) {
    print_error("up", s.message());
    code = 1;
  }
  if (s.ok()) {
    print_ready(up, *key);
    code = serve_until_stopped(up);
  }
  up.fleet->stop_all(std::chrono::seconds(10));
  std::error_code ec;
  if (!up.dir.empty()) fs::remove(up.dir + "/up.pids", ec);
  return code;
}

}  // namespace

void add_up_command(CLI::App& app, int* exit_code) {
  auto o = std::make_shared<UpOptions>();
  CLI::App* cmd = app.add_subcommand("up", "Run a whole fleet on this machine: a hub, local agents and a deployment");
  cmd->add_option("--model", o->model,
                  std::string("GGUF model: a local path, an http(s) URL or hf://owner/repo/file.gguf (default: ") +
                      kDefaultUpModel + ")");
  cmd->add_option("--agents", o->agents, "Local agents to start")->capture_default_str();
  cmd->add_option("--replicas", o->replicas, "Replicas of the model (default: one per agent)");
  cmd->add_option("--port", o->port, "The hub's port on 127.0.0.1")->capture_default_str();
  cmd->add_option("--data-dir", o->data_dir,
                  "Folder for the hub, the agents, the keys and the logs (default: $XDG_DATA_HOME/cellserve/up, "
                  "else ~/.local/share/cellserve/up)");
  cmd->add_option("--ready-timeout", o->ready_timeout_s, "Seconds to wait for the replicas to be ready")
      ->check(CLI::Range(1, 86400))
      ->capture_default_str();
  cmd->callback([o, exit_code] { *exit_code = run_up(*o); });
}

}  // namespace cellserve::cli
