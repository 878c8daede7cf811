// The operator's spot-check commands (docs/fleet.md, "Spot checks and canaries"):
// `cellserve fleet release ID` ends a device's quarantine, and `cellserve deployments canaries D
// FILE.jsonl [--every N]` gives a deployment its canaries (`--remove` takes them away). They
// join the `fleet` and `deployments` commands.
#include <cstdio>
#include <fstream>
#include <sstream>

#include <boost/json.hpp>

#include "cli/commands.h"
#include "cli/hub_client.h"
#include "fleet/hub/canary_book.h"

namespace cellserve::cli {
namespace {

namespace json = boost::json;

struct CanaryOptions {
  std::string deployment;
  std::string file;
  int every = 50;
  bool remove = false;
};

int failed(const std::string& message) {
  print_error("deployments canaries", message);
  return 1;
}

int run_canaries(const std::string& hub, const CanaryOptions& o) {
  const std::string path = "/api/v1/deployments/" + o.deployment + "/canaries";
  if (o.remove) {
    auto r = hub_request(hub, "DELETE", path);
    if (!r.ok()) return failed(r.status().message());
    std::printf("%s: canaries removed\n", o.deployment.c_str());
    return 0;
  }
  std::ifstream in(o.file);
  if (o.file.empty() || !in) return failed(o.file + ": cannot read the file");
  std::stringstream text;
  text << in.rdbuf();
  // Checked here first, so a bad line is named before anything is sent.
  if (auto cases = fleet::parse_canaries(text.str()); !cases.ok()) {
    return failed(o.file + ": " + cases.status().message());
  }
  auto r = hub_request(hub, "PUT", path, json::serialize(json::object{{"cases", text.str()}, {"every", o.every}}));
  if (!r.ok()) return failed(r.status().message());
  std::printf("%s: %lld canaries, one per %lld requests each device answers\n", o.deployment.c_str(),
              static_cast<long long>(json_number(r->as_object().if_contains("cases"))),
              static_cast<long long>(json_number(r->as_object().if_contains("every"))));
  return 0;
}

}  // namespace

std::string agreement_text(const json::object& o) {
  const json::value* a = o.if_contains("agreement");
  if (a == nullptr || !a->is_object()) return "";
  const json::object& g = a->as_object();
  char text[200];
  std::snprintf(text, sizeof(text), "agreement %lld of %lld decided checks (%.2f), %lld checks",
                static_cast<long long>(json_number(g.if_contains("agreed"))),
                static_cast<long long>(json_number(g.if_contains("agreed")) + json_number(g.if_contains("lost"))),
                json_number(g.if_contains("rate")), static_cast<long long>(json_number(g.if_contains("checks"))));
  std::string line = text;
  const json::value* q = g.if_contains("quarantined");
  if (q != nullptr && q->is_bool() && q->as_bool()) line += "; QUARANTINED: " + json_string(g, "reason");
  return line;
}

void add_spot_check_commands(CLI::App& app, int* exit_code) {
  auto hub = std::make_shared<std::string>(default_hub_url());
  CLI::App* release = app.get_subcommand("fleet")->add_subcommand(
      "release", "End a device's quarantine (spot checks): it gets traffic again, its record starts afresh");
  auto id = std::make_shared<std::string>();
  release->add_option("id", *id, "The processor's id (fleet ls --json)")->required();
  release->add_option("--hub", *hub, "The hub (else $CELLSERVE_HUB)")->capture_default_str();
  release->callback([hub, id, exit_code] {
    auto r = hub_request(*hub, "POST", "/api/v1/processors/" + *id + "/release");
    if (!r.ok()) {
      print_error("fleet release", r.status().message());
      *exit_code = 1;
      return;
    }
    const json::value* was = r->as_object().if_contains("was_quarantined");
    std::printf("%s: released%s\n", json_string(r->as_object(), "id").c_str(),
                was != nullptr && was->is_bool() && was->as_bool() ? " from quarantine" : " (was not quarantined)");
  });

  auto o = std::make_shared<CanaryOptions>();
  CLI::App* canaries =
      app.get_subcommand("deployments")
          ->add_subcommand("canaries",
                           "Give a deployment known requests with expected answers, mixed into each device's traffic");
  canaries->add_option("deployment", o->deployment, "Deployment name")->required();
  canaries->add_option("file", o->file, "JSONL: {\"request\": {...}, \"expect\": \"...\"} a line");
  canaries->add_option("--every", o->every, "One canary per this many requests a device answers (1..100000)")
      ->capture_default_str();
  canaries->add_flag("--remove", o->remove, "Remove the deployment's canaries");
  canaries->add_option("--hub", *hub, "The hub (else $CELLSERVE_HUB)")->capture_default_str();
  canaries->callback([hub, o, exit_code] { *exit_code = run_canaries(*hub, *o); });
}

}  // namespace cellserve::cli
