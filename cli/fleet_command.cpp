// `cellserve fleet ls|approve|revoke` (the hub's processors and their enrolment), `fleet hubs`
// (the hubs sharing its store) and `cellserve market` (what a requirement set costs right now).
#include <cstdio>

#include <boost/json.hpp>

#include "cli/commands.h"
#include "cli/hub_client.h"
#include "fleet/spec/device_state.h"

namespace cellserve::cli {
namespace {

namespace json = boost::json;

struct MarketOptions {
  std::string min_ram;
  int min_cores = 0;
  std::string arch;
  double min_decode_tps = 0;
  int replicas = 1;
};

// "online" / "offline", with " sim" for a simulated processor (`agent --simulate`).
std::string state_text(const json::object& p) {
  const json::value* online = p.if_contains("online");
  const json::value* simulated = p.if_contains("simulated");
  std::string s = online != nullptr && online->is_bool() && online->as_bool() ? "online" : "offline";
  if (simulated != nullptr && simulated->is_bool() && simulated->as_bool()) s += " sim";
  if (const std::string e = json_string(p, "enrollment"); !e.empty() && e != "enrolled") s = e;
  return s;
}

void add_fleet_enrollment_commands(CLI::App& fleet, int* exit_code);

// `cellserve fleet hubs`: the hubs sharing the store (GET /api/v1/hubs) and the leases.
void add_fleet_hubs_command(CLI::App& fleet, int* exit_code) {
  CLI::App* cmd = fleet.add_subcommand("hubs", "List the hubs sharing the store: agents, heartbeat, the leases");
  auto hub = std::make_shared<std::string>(default_hub_url());
  auto as_json = std::make_shared<bool>(false);
  cmd->add_option("--hub", *hub, "The hub (else $CELLSERVE_HUB)")->capture_default_str();
  cmd->add_flag("--json", *as_json, "Print the hub's JSON instead of a table");
  cmd->callback([hub, as_json, exit_code] {
    auto r = hub_request(*hub, "GET", "/api/v1/hubs");
    if (!r.ok()) {
      print_error("fleet hubs", r.status().message());
      *exit_code = 1;
      return;
    }
    if (*as_json) return print_json(*r);
    const auto flag = [](const json::object& o, const char* name) {
      const json::value* v = o.if_contains(name);
      return v != nullptr && v->is_bool() && v->as_bool();
    };
    std::printf("%-17s %-32s %-6s %7s %14s  %s\n", "id", "peer url", "alive", "agents", "heartbeat ago", "leases");
    for (const json::value& hv : r->at("hubs").as_array()) {
      const json::object& h = hv.as_object();
      const std::string id = json_string(h, "id");
      std::string leases;
      for (const json::value& lv : r->at("leases").as_array()) {
        const json::object& l = lv.as_object();
        if (json_string(l, "holder") != id || json_number(l.if_contains("expires_in_ms")) <= 0) continue;
        leases += (leases.empty() ? "" : ", ") + json_string(l, "name") + " (token " +
                  std::to_string(static_cast<long long>(json_number(l.if_contains("token")))) + ")";
      }
      std::printf("%-17s %-32s %-6s %7d %13.1fs  %s\n", (id + (flag(h, "self") ? "*" : "")).c_str(),
                  json_string(h, "peer_url").c_str(), flag(h, "alive") ? "yes" : "no",
                  static_cast<int>(json_number(h.if_contains("agents"))),
                  json_number(h.if_contains("heartbeat_age_ms")) / 1000.0, leases.empty() ? "-" : leases.c_str());
    }
  });
}

}  // namespace

void add_fleet_command(CLI::App& app, int* exit_code) {
  auto hub = std::make_shared<std::string>(default_hub_url());
  CLI::App* fleet = app.add_subcommand("fleet", "The hub's devices");
  fleet->require_subcommand(1);
  add_fleet_hubs_command(*fleet, exit_code);
  CLI::App* ls = fleet->add_subcommand("ls", "List processors: specs, benchmark, ask, state, what they serve");
  auto as_json = std::make_shared<bool>(false);
  ls->add_option("--hub", *hub, "The hub (else $CELLSERVE_HUB)")->capture_default_str();
  ls->add_flag("--json", *as_json, "Print the hub's JSON instead of a table");
  ls->callback([hub, as_json, exit_code] {
    auto r = hub_request(*hub, "GET", "/api/v1/processors");
    if (!r.ok()) {
      print_error("fleet", r.status().message());
      *exit_code = 1;
      return;
    }
    if (*as_json) return print_json(*r);
    std::printf("%-18s %-14s %-11s %-8s %6s %9s %10s %10s %9s %-8s  %s\n", "id", "name", "state", "arch", "cores",
                "ram GiB", "prompt t/s", "gen t/s", "ask/day", "attested", "serving");
    for (const json::value& pv : r->at("processors").as_array()) {
      const json::object& p = pv.as_object();
      const json::object& s = p.at("specs").as_object();
      const json::object& b = p.at("benchmark").as_object();
      std::string serving;
      for (const json::value& x : p.at("serving").as_array()) {
        const json::object& o = x.as_object();
        serving += (serving.empty() ? "" : ", ") + json_string(o, "deployment") + "/" +
                   std::to_string(static_cast<int>(json_number(o.if_contains("index")))) + " " +
                   json_string(o, "state");
      }
      const json::value* attested = p.if_contains("attested");
      std::printf("%-18s %-14s %-11s %-8s %6d %9.1f %10.1f %10.1f %9.2f %-8s  %s\n",
                  json_string(p, "id").substr(0, 16).c_str(), json_string(p, "name").c_str(), state_text(p).c_str(),
                  json_string(s, "arch").c_str(), static_cast<int>(json_number(s.if_contains("cores"))),
                  json_number(s.if_contains("ram_bytes")) / (1 << 30), json_number(b.if_contains("prefill_tps")),
                  json_number(b.if_contains("decode_tps")), json_number(p.if_contains("price_per_day")),
                  attested != nullptr && attested->is_bool() && attested->as_bool() ? "yes" : "no",
                  serving.empty() ? "-" : serving.c_str());
    }
    // Each device's attestation verdict, or why it has none (docs/attestation.md).
    for (const json::value& pv : r->at("processors").as_array()) {
      const std::string why = json_string(pv.as_object(), "attestation");
      if (!why.empty()) {
        std::printf("  %s %s\n", json_string(pv.as_object(), "id").substr(0, 16).c_str(), why.c_str());
      }
      const json::value* key = pv.as_object().if_contains("attested_key");
      if (key != nullptr && key->is_object() && !json_string(key->as_object(), "held").empty()) {
        std::printf("  %s held: %s\n", json_string(pv.as_object(), "id").substr(0, 16).c_str(),
                    json_string(key->as_object(), "held").c_str());
      }
    }
    // Each device's spot-check record (docs/fleet.md, "Spot checks and canaries").
    for (const json::value& pv : r->at("processors").as_array()) {
      const std::string line = agreement_text(pv.as_object());
      if (!line.empty())
        std::printf("  %s %s\n", json_string(pv.as_object(), "id").substr(0, 16).c_str(), line.c_str());
    }
    // Each online device's battery, heat, throttling and free memory from its last status poll
    // (docs/phones.md), and why it takes no new requests when it has paused.
    for (const json::value& pv : r->at("processors").as_array()) {
      const json::value* device = pv.as_object().if_contains("device");
      if (device == nullptr) continue;
      auto state = fleet::device_state_from_json(*device);
      if (!state.ok()) continue;
      const std::string line = fleet::device_state_summary(*state);
      if (!line.empty())
        std::printf("  %s %s\n", json_string(pv.as_object(), "id").substr(0, 16).c_str(), line.c_str());
    }
  });
  add_fleet_enrollment_commands(*fleet, exit_code);
}

namespace {

// `fleet approve ID` / `fleet revoke ID`: POST /api/v1/processors/ID/approve|revoke.
void add_enrollment_command(CLI::App& fleet, const char* verb, const char* help, std::shared_ptr<std::string> hub,
                            int* exit_code) {
  CLI::App* cmd = fleet.add_subcommand(verb, help);
  auto id = std::make_shared<std::string>();
  cmd->add_option("id", *id, "The processor's id (fleet ls, or the agent's log)")->required();
  cmd->add_option("--hub", *hub, "The hub (else $CELLSERVE_HUB)")->capture_default_str();
  auto label = std::make_shared<std::string>();
  if (std::string_view(verb) == "approve") {
    cmd->add_option("--name", *label, "Fix the device's name at this hub: what allow lists may name (unique)");
  }
  cmd->callback([hub, id, verb, label, exit_code] {
    const std::string body =
        label->empty() ? std::string() : boost::json::serialize(boost::json::object{{"name", *label}});
    auto r = hub_request(*hub, "POST", "/api/v1/processors/" + *id + "/" + verb, body);
    if (!r.ok()) {
      print_error("fleet", r.status().message());
      *exit_code = 1;
      return;
    }
    const json::object& o = r->as_object();
    std::printf("%s: %s\n", json_string(o, "id").c_str(),
                json_string(o, o.contains("enrollment") ? "enrollment" : "attested_key").c_str());
  });
}

void add_fleet_enrollment_commands(CLI::App& fleet, int* exit_code) {
  auto hub = std::make_shared<std::string>(default_hub_url());
  add_enrollment_command(fleet, "approve", "Enrol a device that asked to join a closed hub (or re-admit a revoked one)",
                         hub, exit_code);
  add_enrollment_command(fleet, "revoke", "Cut a device off: its tunnel closes, its replicas move, it cannot rejoin",
                         hub, exit_code);
  add_enrollment_command(fleet, "approve-key",
                         "Accept a new attested key for a device pinned to another (docs/attestation.md): its next "
                         "valid attestation pins the key it presents",
                         hub, exit_code);
}

}  // namespace

void add_market_command(CLI::App& app, int* exit_code) {
  auto hub = std::make_shared<std::string>(default_hub_url());
  auto o = std::make_shared<MarketOptions>();
  CLI::App* cmd =
      app.add_subcommand("market", "Eligible devices, average ask, and the price at which N replicas match now");
  cmd->add_option("--hub", *hub, "The hub (else $CELLSERVE_HUB)")->capture_default_str();
  cmd->add_option("--min-ram", o->min_ram, "e.g. 12G");
  cmd->add_option("--min-cores", o->min_cores, "Minimum cores");
  cmd->add_option("--arch", o->arch, "x86_64 or aarch64");
  cmd->add_option("--min-decode-tps", o->min_decode_tps, "Minimum benchmark generation speed");
  cmd->add_option("--replicas", o->replicas, "Replicas wanted")->capture_default_str();
  auto as_json = std::make_shared<bool>(false);
  cmd->add_flag("--json", *as_json, "Print the hub's JSON instead of a summary");
  cmd->callback([hub, o, as_json, exit_code] {
    std::string q = "?replicas=" + std::to_string(o->replicas);
    if (!o->min_ram.empty()) q += "&min_ram=" + o->min_ram;
    if (o->min_cores > 0) q += "&min_cores=" + std::to_string(o->min_cores);
    if (!o->arch.empty()) q += "&arch=" + o->arch;
    if (o->min_decode_tps > 0) q += "&min_decode_tps=" + std::to_string(o->min_decode_tps);
    auto r = hub_request(*hub, "GET", "/api/v1/market" + q);
    if (!r.ok()) {
      print_error("market", r.status().message());
      *exit_code = 1;
      return;
    }
    if (*as_json) return print_json(*r);
    const json::object& m = r->as_object();
    std::printf("eligible devices:   %d\navailable now:      %d\naverage ask:        %.2f/day\n",
                static_cast<int>(json_number(m.if_contains("eligible"))),
                static_cast<int>(json_number(m.if_contains("available"))), json_number(m.if_contains("average_ask")));
    const json::value* p = m.if_contains("price_for_replicas");
    if (p != nullptr && !p->is_null()) {
      std::printf("%d replicas match now at max_price_per_day >= %.2f\n", o->replicas, json_number(p));
    } else {
      std::printf("%d replicas cannot match now: too few available devices\n", o->replicas);
    }
  });
}

}  // namespace cellserve::cli
