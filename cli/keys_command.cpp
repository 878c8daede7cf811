// `cellserve keys create|ls|revoke`: API keys for a deployment's endpoint, with request-rate and
// token quotas, at the hub's REST API (/api/v1/keys). A new key is printed once.
#include <cstdio>

#include <boost/json.hpp>

#include "cli/commands.h"
#include "cli/hub_client.h"

namespace cellserve::cli {
namespace {

namespace json = boost::json;

struct KeyOptions {
  std::string deployment;
  std::string name;
  int rpm = 0;
  int64_t tokens_per_day = 0;
};

int keys_failed(const Status& s) {
  print_error("keys", s.message());
  return 1;
}

}  // namespace

void add_keys_command(CLI::App& app, int* exit_code) {
  auto hub = std::make_shared<std::string>(default_hub_url());
  CLI::App* keys = app.add_subcommand("keys", "API keys for a deployment's endpoint, with quotas");
  keys->require_subcommand(1);

  auto o = std::make_shared<KeyOptions>();
  CLI::App* create = keys->add_subcommand("create", "Create a key (printed once; the hub keeps only its hash)");
  create->add_option("--deployment", o->deployment, "The deployment it opens")->required();
  create->add_option("--name", o->name, "A label shown in keys ls");
  create->add_option("--rpm", o->rpm, "Requests per minute across the fleet (0: no limit)")->capture_default_str();
  create->add_option("--tokens-per-day", o->tokens_per_day, "Prompt + completion tokens per UTC day (0: no limit)")
      ->capture_default_str();
  create->add_option("--hub", *hub, "The hub (else $CELLSERVE_HUB)")->capture_default_str();
  create->callback([hub, o, exit_code] {
    const json::object body{
        {"deployment", o->deployment}, {"name", o->name}, {"rpm", o->rpm}, {"tokens_per_day", o->tokens_per_day}};
    auto r = hub_request(*hub, "POST", "/api/v1/keys", json::serialize(body));
    if (!r.ok()) return void(*exit_code = keys_failed(r.status()));
    std::printf("%s\n", json_string(r->as_object(), "key").c_str());
    std::fprintf(stderr, "key %s for %s: keep it now, the hub cannot show it again\n",
                 json_string(r->as_object(), "id").c_str(), o->deployment.c_str());
  });

  auto as_json = std::make_shared<bool>(false);
  CLI::App* ls = keys->add_subcommand("ls", "List keys with their quotas and usage (never the keys)");
  ls->add_option("--hub", *hub, "The hub (else $CELLSERVE_HUB)")->capture_default_str();
  ls->add_flag("--json", *as_json, "Print the hub's JSON instead of a table");
  ls->callback([hub, as_json, exit_code] {
    auto r = hub_request(*hub, "GET", "/api/v1/keys");
    if (!r.ok()) return void(*exit_code = keys_failed(r.status()));
    if (*as_json) return print_json(*r);
    std::printf("%-12s %-16s %-20s %8s %14s %10s %14s %14s  %s\n", "id", "name", "deployment", "rpm", "tokens/day",
                "requests", "tokens", "tokens today", "state");
    for (const json::value& kv : r->at("keys").as_array()) {
      const json::object& k = kv.as_object();
      const json::value* revoked = k.if_contains("revoked");
      std::printf("%-12s %-16s %-20s %8lld %14lld %10lld %14lld %14lld  %s\n", json_string(k, "id").c_str(),
                  json_string(k, "name").c_str(), json_string(k, "deployment").c_str(),
                  static_cast<long long>(json_number(k.if_contains("rpm"))),
                  static_cast<long long>(json_number(k.if_contains("tokens_per_day"))),
                  static_cast<long long>(json_number(k.if_contains("requests"))),
                  static_cast<long long>(json_number(k.if_contains("tokens"))),
                  static_cast<long long>(json_number(k.if_contains("tokens_today"))),
                  revoked != nullptr && revoked->is_bool() && revoked->as_bool() ? "revoked" : "active");
    }
  });

  auto id = std::make_shared<std::string>();
  CLI::App* revoke = keys->add_subcommand("revoke", "Revoke a key: it is refused from the next request on");
  revoke->add_option("id", *id, "The key's id (keys ls)")->required();
  revoke->add_option("--hub", *hub, "The hub (else $CELLSERVE_HUB)")->capture_default_str();
  revoke->callback([hub, id, exit_code] {
    auto r = hub_request(*hub, "POST", "/api/v1/keys/" + *id + "/revoke");
    if (!r.ok()) return void(*exit_code = keys_failed(r.status()));
    std::printf("%s revoked\n", id->c_str());
  });
}

}  // namespace cellserve::cli
