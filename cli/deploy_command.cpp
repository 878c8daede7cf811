// `cellserve deploy spec.toml` and `cellserve deployments ls|show|scale|drain|undrain|rm` and
// `set-secret|unset-secret`: deployments at the hub's REST API. The spec is validated here first
// (fleet/spec/deployment_spec.h), so a typo is reported with its line before anything is sent.
#include <algorithm>
#include <cctype>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <sstream>

#include <boost/json.hpp>

#include "cli/commands.h"
#include "cli/hub_client.h"
#include "fleet/spec/agent_protocol.h"
#include "fleet/spec/deployment_spec.h"

namespace cellserve::cli {
namespace {

namespace json = boost::json;

// The hub's measurement of a replica's speed beside its device's claim (the table's t/s columns).
void print_measured_speed(const json::object& r) {
  const long long answers = static_cast<long long>(json_number(r.if_contains("measured_answers")));
  if (answers <= 0) return;
  const json::value* inflated = r.if_contains("speed_claim_inflated");
  const bool flagged = inflated != nullptr && inflated->is_bool() && inflated->as_bool();
  std::printf(
      "      measured over %lld answers: prompt %.1f, gen %.1f t/s (routed on %.1f, %.1f); answers took %.1fx the "
      "claimed time%s\n",
      answers, json_number(r.if_contains("measured_prefill_tps")), json_number(r.if_contains("measured_decode_tps")),
      json_number(r.if_contains("routed_prefill_tps")), json_number(r.if_contains("routed_decode_tps")),
      json_number(r.if_contains("speed_claim_ratio")), flagged ? "  SPEED CLAIM INFLATED" : "");
}

// The settings the replica's device runs it with (autotune's choice), once it reported them.
void print_tuned(const json::object& r) {
  const json::value* t = r.if_contains("tuned");
  if (t == nullptr || !t->is_object()) return;
  const json::object& o = t->as_object();
  const json::value* autotuned = o.if_contains("autotuned");
  const bool tuned = autotuned != nullptr && autotuned->is_bool() && autotuned->as_bool();
  const json::value* cached = o.if_contains("cached");
  const bool reused = cached != nullptr && cached->is_bool() && cached->as_bool();
  auto n = [&](const char* key) { return static_cast<long long>(json_number(o.if_contains(key))); };
  // The device's own text, shown only when it is a plain type name.
  std::string kv = json_string(o, "kv_type");
  if (kv.size() > 8 || !std::all_of(kv.begin(), kv.end(),
                                    [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; })) {
    kv.clear();
  }
  std::printf("      settings: threads %lld, prefill chunk %lld, parallel %lld, ctx %lld, batch %lld%s%s (%s)\n",
              n("threads"), n("prefill_chunk"), n("parallel"), n("ctx_size"), n("batch_size"),
              kv.empty() ? "" : ", KV ", kv.c_str(),
              tuned ? (reused ? "autotuned, reused" : "autotuned") : "not autotuned");
}

void print_deployment(const json::object& d, bool detail) {
  const json::object& spec = d.at("spec").as_object();
  std::printf("%-20s replicas %lld (ready %lld)  max %.2f/day  cost %.4f  model %s\n", json_string(d, "name").c_str(),
              static_cast<long long>(json_number(spec.at("replicas"))),
              static_cast<long long>(json_number(d.at("ready"))), json_number(spec.at("max_price_per_day")),
              json_number(d.at("cost")), json_string(spec.at("model").as_object(), "url").c_str());
  if (!detail) return;
  std::printf("  endpoint %s  queue %lld  completed last hour %lld\n", json_string(d, "endpoint").c_str(),
              static_cast<long long>(json_number(d.if_contains("queue"))),
              static_cast<long long>(json_number(d.if_contains("completed_last_hour"))));
  if (const json::value* max = spec.if_contains("max_replicas"); max != nullptr) {
    std::printf("  autoscaling %lld..%lld replicas: target wait %.1f s, cool-down %.0f s",
                static_cast<long long>(json_number(spec.if_contains("min_replicas"))),
                static_cast<long long>(json_number(max)), json_number(spec.if_contains("target_wait_s")),
                json_number(spec.if_contains("cooldown_s")));
    if (spec.contains("batch_deadline"))
      std::printf(", batches end within %s", json_string(spec, "batch_deadline").c_str());
    if (const json::value* total = spec.if_contains("max_total_price_per_day"); total != nullptr) {
      std::printf(", at most %.2f/day in all", json_number(total));
    }
    std::printf("\n");
    if (const json::value* windows = spec.if_contains("schedule"); windows != nullptr && windows->is_array()) {
      for (const json::value& w : windows->as_array()) {
        if (!w.is_object()) continue;
        std::printf("    schedule '%s': %lld replicas for %s\n", json_string(w.as_object(), "cron").c_str(),
                    static_cast<long long>(json_number(w.as_object().if_contains("replicas"))),
                    json_string(w.as_object(), "for").c_str());
      }
    }
  }
  if (const json::value* a = d.if_contains("attestation_status"); a != nullptr && a->is_object()) {
    std::printf("  attestation status list %s: fetched %lld s ago\n", json_string(a->as_object(), "source").c_str(),
                static_cast<long long>(json_number(a->as_object().if_contains("age_seconds"))));
  }
  if (const json::value* w = d.if_contains("warnings"); w != nullptr && w->is_array()) {
    for (const json::value& line : w->as_array()) {
      if (line.is_string()) std::printf("  warning: %s\n", line.as_string().c_str());
    }
  }
  if (const long long outdated = static_cast<long long>(json_number(d.if_contains("outdated"))); outdated > 0) {
    std::printf("  rolling update: %lld row%s still serve%s an older spec\n", outdated, outdated == 1 ? "" : "s",
                outdated == 1 ? "s" : "");
  }
  std::printf("  %-3s %-8s %-18s %-14s %7s %7s %7s %10s %10s %10s %10s  %s\n", "#", "role", "device", "state", "load",
              "errors", "done/h", "price/day", "prompt t/s", "gen t/s", "cost", "address");
  for (const json::value& rv : d.at("replicas").as_array()) {
    const json::object& r = rv.as_object();
    std::string state = json_string(r, "state");
    if (state == "downloading")
      state += " " + std::to_string(static_cast<int>(json_number(r.at("progress")) * 100)) + "%";
    if (const json::value* e = r.if_contains("ejected"); e != nullptr && e->is_bool() && e->as_bool()) {
      state += " (ejected)";
    }
    if (const json::value* e = r.if_contains("draining"); e != nullptr && e->is_bool() && e->as_bool()) {
      state += " (draining)";
    }
    if (const json::value* e = r.if_contains("heartbeat_missed"); e != nullptr && e->is_bool() && e->as_bool()) {
      state += " (no heartbeat)";
    }
    if (const json::value* e = r.if_contains("reloading"); e != nullptr && e->is_bool() && e->as_bool()) {
      state += " (reloading)";
    }
    if (const json::value* e = r.if_contains("outdated"); e != nullptr && e->is_bool() && e->as_bool()) {
      state += " (old spec)";
    }
    if (const json::value* e = r.if_contains("speed_claim_inflated"); e != nullptr && e->is_bool() && e->as_bool()) {
      state += " (inflated)";
    }
    std::string device = json_string(r, "processor");
    if (device.size() > 16) device = device.substr(0, 16);
    const std::string load = std::to_string(static_cast<long long>(json_number(r.if_contains("busy")))) + "/" +
                             std::to_string(static_cast<long long>(json_number(r.if_contains("slots"))));
    std::printf("  %-3lld %-8s %-18s %-14s %7s %7lld %7lld %10.2f %10.1f %10.1f %10.4f  %s\n",
                static_cast<long long>(json_number(r.at("index"))), json_string(r, "role").c_str(),
                device.empty() ? "-" : device.c_str(), state.c_str(), load.c_str(),
                static_cast<long long>(json_number(r.if_contains("failures"))),
                static_cast<long long>(json_number(r.if_contains("completed_last_hour"))),
                json_number(r.at("price_per_day")), json_number(r.at("prefill_tps")), json_number(r.at("decode_tps")),
                json_number(r.at("cost")), json_string(r, "path").c_str());
    if (!json_string(r, "detail").empty()) std::printf("      %s\n", json_string(r, "detail").c_str());
    print_tuned(r);
    print_measured_speed(r);
    if (const std::string a = agreement_text(r); !a.empty()) std::printf("      %s\n", a.c_str());
  }
}

// `deployments events NAME`: the autoscaler's decisions, newest first.
void add_events_command(CLI::App& deps, const std::shared_ptr<std::string>& hub,
                        const std::shared_ptr<std::string>& name, const std::shared_ptr<bool>& as_json,
                        int* exit_code) {
  auto limit = std::make_shared<int>(20);
  CLI::App* events = deps.add_subcommand("events", "Show a deployment's autoscaling decisions and why, newest first");
  events->add_option("name", *name, "Deployment name")->required();
  events->add_option("--limit", *limit, "How many (1..500)")->capture_default_str()->check(CLI::Range(1, 500));
  events->add_option("--hub", *hub, "The hub (else $CELLSERVE_HUB)")->capture_default_str();
  events->add_flag("--json", *as_json, "Print the hub's JSON instead of lines");
  events->callback([hub, name, limit, as_json, exit_code] {
    auto r = hub_request(*hub, "GET", "/api/v1/deployments/" + *name + "/events?limit=" + std::to_string(*limit));
    if (!r.ok()) {
      print_error("deployments", r.status().message());
      *exit_code = 1;
      return;
    }
    if (*as_json) return print_json(*r);
    const json::array& data = r->at("data").as_array();
    if (data.empty()) std::printf("no scaling events for %s\n", name->c_str());
    for (const json::value& v : data) {
      const json::object& e = v.as_object();
      const auto at = static_cast<time_t>(json_number(e.if_contains("at_ms")) / 1000);
      tm t{};
      gmtime_r(&at, &t);
      char when[32];
      std::strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S", &t);
      std::printf("%s UTC  %-10s %lld -> %lld  %s\n", when, json_string(e, "action").c_str(),
                  static_cast<long long>(json_number(e.if_contains("from_replicas"))),
                  static_cast<long long>(json_number(e.if_contains("to_replicas"))), json_string(e, "reason").c_str());
    }
  });
}

int run_deploy(const std::string& hub, const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    print_error("deploy", path + ": cannot read the spec file");
    return 1;
  }
  std::stringstream text;
  text << in.rdbuf();
  Result<json::value> tree =
      path.ends_with(".json") ? fleet::parse_json(text.str(), path) : fleet::toml_to_json(text.str(), path);
  if (!tree.ok()) {
    print_error("deploy", tree.status().message());
    return 1;
  }
  auto spec = fleet::parse_deployment_spec(*tree);
  if (!spec.ok()) {
    print_error("deploy", path + ": " + spec.status().message());
    return 1;
  }
  // PUT: created when new; an existing deployment changes in place, or rolls over to a new model.
  json::object body = fleet::deployment_spec_json(*spec, /*with_secrets=*/true);
  // An autoscaled deployment keeps the count its autoscaler chose unless the file names one.
  if (spec->autoscale.enabled() && tree->is_object() && !tree->as_object().contains("replicas")) body.erase("replicas");
  auto created = hub_request(hub, "PUT", "/api/v1/deployments/" + spec->name, json::serialize(body));
  if (!created.ok()) {
    print_error("deploy", created.status().message());
    return 1;
  }
  print_deployment(created->as_object(), true);
  return 0;
}

// A secret's value from stdin, so it never appears in a command line (ps, shell history). One
// trailing newline (from `echo` or a file) is not part of it.
Result<std::string> read_secret_from_stdin() {
  std::string value;
  char buf[4096];
  size_t n = 0;
  while ((n = std::fread(buf, 1, sizeof(buf), stdin)) > 0) {
    value.append(buf, n);
    if (value.size() > fleet::kMaxEnvValueBytes + 2) {
      return Status::invalid_argument("the secret on stdin is longer than " + std::to_string(fleet::kMaxEnvValueBytes) +
                                      " bytes");
    }
  }
  if (!value.empty() && value.back() == '\n') value.pop_back();
  if (!value.empty() && value.back() == '\r') value.pop_back();
  if (value.empty()) return Status::invalid_argument("no secret on stdin (pipe the value in: ... < file)");
  return value;
}

}  // namespace

void add_deploy_command(CLI::App& app, int* exit_code) {
  auto hub = std::make_shared<std::string>(default_hub_url());
  auto file = std::make_shared<std::string>();
  CLI::App* deploy = app.add_subcommand("deploy", "Create a deployment at the hub from a spec file (TOML or JSON)");
  deploy->add_option("spec", *file, "spec.toml")->required();
  deploy->add_option("--hub", *hub, "The hub (else $CELLSERVE_HUB)")->capture_default_str();
  deploy->callback([hub, file, exit_code] { *exit_code = run_deploy(*hub, *file); });

  auto name = std::make_shared<std::string>();
  CLI::App* deps = app.add_subcommand("deployments", "List, show or remove deployments");
  deps->require_subcommand(1);
  auto as_json = std::make_shared<bool>(false);
  CLI::App* ls = deps->add_subcommand("ls", "List deployments");
  ls->add_option("--hub", *hub, "The hub (else $CELLSERVE_HUB)")->capture_default_str();
  ls->add_flag("--json", *as_json, "Print the hub's JSON instead of a table");
  ls->callback([hub, as_json, exit_code] {
    auto r = hub_request(*hub, "GET", "/api/v1/deployments");
    if (!r.ok()) {
      print_error("deployments", r.status().message());
      *exit_code = 1;
      return;
    }
    if (*as_json) return print_json(*r);
    const json::array& list = r->at("deployments").as_array();
    if (list.empty()) std::printf("no deployments\n");
    for (const json::value& d : list) print_deployment(d.as_object(), false);
  });
  CLI::App* show = deps->add_subcommand(
      "show", "Show a deployment's replicas: device, state, load, errors, throughput, price, cost");
  show->add_option("name", *name, "Deployment name")->required();
  show->add_option("--hub", *hub, "The hub (else $CELLSERVE_HUB)")->capture_default_str();
  show->add_flag("--json", *as_json, "Print the hub's JSON instead of a table");
  show->callback([hub, name, as_json, exit_code] {
    auto r = hub_request(*hub, "GET", "/api/v1/deployments/" + *name);
    if (!r.ok()) {
      print_error("deployments", r.status().message());
      *exit_code = 1;
      return;
    }
    if (*as_json) return print_json(*r);
    print_deployment(r->as_object(), true);
  });
  auto counts = std::make_shared<std::pair<int, int>>(-1, -1);
  CLI::App* scale = deps->add_subcommand(
      "scale", "Change a deployment's replicas and spares; removed replicas finish their requests first");
  scale->add_option("name", *name, "Deployment name")->required();
  scale->add_option("--replicas", counts->first, "Replicas (1..1000)");
  scale->add_option("--spares", counts->second, "Spares (0..1000)");
  scale->add_option("--hub", *hub, "The hub (else $CELLSERVE_HUB)")->capture_default_str();
  scale->callback([hub, name, counts, exit_code] {
    json::object body;
    if (counts->first >= 0) body["replicas"] = counts->first;
    if (counts->second >= 0) body["spares"] = counts->second;
    if (body.empty()) {
      print_error("deployments", "scale needs --replicas N and/or --spares M");
      *exit_code = 2;
      return;
    }
    auto r = hub_request(*hub, "POST", "/api/v1/deployments/" + *name + "/scale", json::serialize(body));
    if (!r.ok()) {
      print_error("deployments", r.status().message());
      *exit_code = 1;
      return;
    }
    print_deployment(r->as_object(), true);
  });
  add_events_command(*deps, hub, name, as_json, exit_code);
  auto index = std::make_shared<int>(0);
  for (const bool drain : {true, false}) {
    CLI::App* cmd = deps->add_subcommand(drain ? "drain" : "undrain",
                                         drain ? "Stop new requests to one replica; its requests in flight finish"
                                               : "Let a drained replica take requests again");
    cmd->add_option("name", *name, "Deployment name")->required();
    cmd->add_option("index", *index, "Replica index")->required();
    cmd->add_option("--hub", *hub, "The hub (else $CELLSERVE_HUB)")->capture_default_str();
    cmd->callback([hub, name, index, drain, exit_code] {
      auto r = hub_request(
          *hub, "POST",
          "/api/v1/deployments/" + *name + "/replicas/" + std::to_string(*index) + (drain ? "/drain" : "/undrain"));
      if (!r.ok()) {
        print_error("deployments", r.status().message());
        *exit_code = 1;
        return;
      }
      print_deployment(r->as_object(), true);
    });
  }
  auto secret = std::make_shared<std::string>();
  CLI::App* set_secret = deps->add_subcommand(
      "set-secret",
      "Set or rotate one of a deployment's secrets ([env]) on every replica without a redeploy; the value is read "
      "from stdin (one trailing newline dropped)");
  set_secret->add_option("name", *name, "Deployment name")->required();
  set_secret->add_option("secret", *secret, "Variable name, e.g. HF_TOKEN")->required();
  set_secret->add_option("--hub", *hub, "The hub (else $CELLSERVE_HUB)")->capture_default_str();
  set_secret->callback([hub, name, secret, exit_code] {
    auto value = read_secret_from_stdin();
    if (!value.ok()) {
      print_error("deployments", value.status().message());
      *exit_code = 2;
      return;
    }
    auto r = hub_request(*hub, "PUT", "/api/v1/deployments/" + *name + "/secrets/" + *secret,
                         json::serialize(json::object{{"value", *value}}));
    if (!r.ok()) {
      print_error("deployments", r.status().message());
      *exit_code = 1;
      return;
    }
    std::printf("%s: %s set (secrets version %lld); replicas take traffic once their devices have opened it\n",
                name->c_str(), secret->c_str(), static_cast<long long>(json_number(r->at("secrets_version"))));
  });
  CLI::App* unset_secret = deps->add_subcommand("unset-secret", "Remove one of a deployment's secrets");
  unset_secret->add_option("name", *name, "Deployment name")->required();
  unset_secret->add_option("secret", *secret, "Variable name")->required();
  unset_secret->add_option("--hub", *hub, "The hub (else $CELLSERVE_HUB)")->capture_default_str();
  unset_secret->callback([hub, name, secret, exit_code] {
    auto r = hub_request(*hub, "DELETE", "/api/v1/deployments/" + *name + "/secrets/" + *secret);
    if (!r.ok()) {
      print_error("deployments", r.status().message());
      *exit_code = 1;
      return;
    }
    std::printf("%s: %s removed (secrets version %lld)\n", name->c_str(), secret->c_str(),
                static_cast<long long>(json_number(r->at("secrets_version"))));
  });
  CLI::App* rm = deps->add_subcommand("rm", "Remove a deployment (its devices stop serving it)");
  rm->add_option("name", *name, "Deployment name")->required();
  rm->add_option("--hub", *hub, "The hub (else $CELLSERVE_HUB)")->capture_default_str();
  rm->callback([hub, name, exit_code] {
    auto r = hub_request(*hub, "DELETE", "/api/v1/deployments/" + *name);
    if (!r.ok()) {
      print_error("deployments", r.status().message());
      *exit_code = 1;
      return;
    }
    std::printf("removed %s\n", name->c_str());
  });
}

}  // namespace cellserve::cli
