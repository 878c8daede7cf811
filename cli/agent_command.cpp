// `cellserve agent --hub URL[,URL...] --data-dir DIR [--price-per-day P] [--name N] [--dns IP] [--cpus LIST]
// [--min-battery PCT] [--simulate prefill=400,decode=20,slots=4]`: joins this device to a fleet (fleet/agent/agent.h).
// Runs until SIGINT or SIGTERM.
#include <pthread.h>
#include <csignal>

#include "cli/commands.h"
#include "cli/model_options.h"
#include "fleet/agent/agent.h"

namespace cellserve::cli {

void add_agent_command(CLI::App& app, int* exit_code) {
  auto o = std::make_shared<fleet::AgentOptions>();
  CLI::App* cmd = app.add_subcommand("agent", "Join this device to a hub and serve the replicas it assigns");
  cmd->add_option("--hub", o->hub_url,
                  "The hub, http(s)://HOST:PORT, or several hubs of one fleet, comma-separated (the agent holds "
                  "one tunnel and moves to the next when it drops; a name with several addresses is several hubs)")
      ->required();
  cmd->add_option("--hub-ca", o->hub_ca, "PEM CA that signed the https hubs' certificates (default: system store)");
  cmd->add_option("--data-dir", o->data_dir, "Folder for the identity key, models and the benchmark model")->required();
  cmd->add_option("--price-per-day", o->price_per_day, "This device's ask per replica-day")->capture_default_str();
  cmd->add_option("--name", o->name, "Name shown at the hub (default: the host name)");
  cmd->add_option("--enroll", o->enroll_token, "Enrolment token for a closed hub (cellserve hub tokens create)");
  cmd->add_option("--attestation-command", o->attestation_command,
                  "Keystore helper run at each registration with the attestation challenge in hex as its last "
                  "argument (prints the Android Key Attestation evidence JSON), and with `sign DIGEST_HEX` to sign "
                  "each tunnel handshake with the attested key (docs/attestation.md)");
  cmd->add_option("--specs-override", o->specs_override, "JSON file replacing detected specs (tests, odd devices)");
  cmd->add_option("--benchmark-shape", o->benchmark_shape, "qwen3 preset benchmarked at start (\"\": none)")
      ->capture_default_str();
  cmd->add_flag("!--no-autotune", o->autotune, "Skip autotune when a replica loads");
  cmd->add_option("--dns", o->dns,
                  "DNS servers (IP[:PORT], comma-separated) for the hub's and download hosts' names, where the "
                  "system resolver has no configuration (Android: no /etc/resolv.conf)")
      ->delimiter(',')
      ->envname("CELLSERVE_DNS");
  cmd->add_flag("--allow-private-downloads", o->allow_private_downloads,
                "Fetch model and adapter URLs on loopback, private, link-local or other non-public addresses "
                "(default: only the hub's own address and public ones)");
  cmd->add_option("--min-battery", o->min_battery,
                  "Battery percent below which a discharging device takes no new requests (0: never pause)")
      ->check(CLI::Range(0, 100))
      ->capture_default_str();
  cmd->add_option("--device-root", o->device_root,
                  "Read /sys and /proc below this folder instead (tests: fixture trees of real phones)");
  auto cpus = std::make_shared<std::string>();
  add_cpus_option(cmd, cpus.get());
  auto simulate = std::make_shared<std::string>();
  CLI::Option* simulate_option = cmd->add_option(
      "--simulate", *simulate,
      "Serve simulated deployments with a paced simulator, no model: prefill=TOK/S,decode=TOK/S,slots=N "
      "(test knob: claim=F reports F times those speeds)");
  cmd->callback([o, cpus, simulate, simulate_option, exit_code] {
    if (const Status pinned = pin_compute_cpus(*cpus); !pinned.ok()) {
      print_error("agent", pinned.message());
      *exit_code = 2;
      return;
    }
    if (simulate_option->count() > 0) {
      auto sim = engine::simulated::parse_simulate_options(*simulate);
      if (!sim.ok()) {
        print_error("agent", sim.status().message());
        *exit_code = 2;
        return;
      }
      o->simulate = *sim;
    }
    sigset_t signals;
    sigemptyset(&signals);
    sigaddset(&signals, SIGINT);
    sigaddset(&signals, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &signals, nullptr);
    auto agent = fleet::Agent::start(*o);
    if (!agent.ok()) {
      print_error("agent", agent.status().message());
      *exit_code = 1;
      return;
    }
    int sig = 0;
    sigwait(&signals, &sig);
    std::fprintf(stderr, "cellserve agent: %s, shutting down\n", sig == SIGINT ? "SIGINT" : "SIGTERM");
    (*agent)->stop();
    *exit_code = 0;
  });
}

}  // namespace cellserve::cli
