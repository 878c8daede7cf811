// `cellserve agent`: the device side of the fleet. It creates its identity on first start,
// detects its specs, benchmarks the engine, then keeps one outbound tunnel to a hub (re-dialled,
// to the next hub of its list, with backoff when it drops) and runs the replicas the hub assigns (replica_runtime.h),
// serving their OpenAI API to requests that arrive through the tunnel. docs/fleet.md.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "engine/simulated/simulate_options.h"

namespace cellserve::fleet {

struct AgentOptions {
  // http(s)://host:port, or several, comma-separated: hubs of one fleet, any of which the agent
  // may hold its tunnel to (fleet/agent/hub_candidates.h).
  std::string hub_url;
  std::string hub_ca;    // PEM CA for the https hubs ("" : the system's certificate store)
  std::string data_dir;  // identity.key, models/, benchmark/
  std::string name;      // shown at the hub; default: the host name
  // An enrolment token (`cellserve hub tokens create`): a closed hub admits an unknown device
  // that presents one. Sent with every tunnel request; once enrolled the device needs it no more.
  std::string enroll_token;
  double price_per_day = 0;
  std::string specs_override;                  // a JSON file replacing detected specs (tests, odd devices)
  std::string benchmark_shape = "qwen3-0.6b";  // "" : no benchmark
  bool autotune = true;
  // --simulate: a paced simulator instead of real models (docs/fleet.md, "Simulate mode"). The
  // agent registers as simulated, skips the benchmark (its speeds are these), serves only
  // simulated deployments, and downloads nothing.
  std::optional<engine::simulated::SimulateOptions> simulate;
  std::function<void(const std::string&)> log;  // default: stderr
  // --attestation-command: the device's keystore helper, run at each registration with the
  // attestation challenge (docs/attestation.md). "" : the device presents no attestation.
  std::string attestation_command;
  // --dns SERVER[,SERVER...]: resolve the hub's name (and download hosts) through these DNS
  // servers (c-ares) instead of the system resolver, which has no configuration on Android.
  std::vector<std::string> dns;
  // --allow-private-downloads: fetch model and adapter URLs that connect to loopback, private,
  // link-local or other non-public addresses. Off: only the hub's own address and public ones
  // (a hub's URLs must not aim the device at its own network or a metadata endpoint).
  bool allow_private_downloads = false;
  // Below this battery percentage, and not charging, the agent takes no new requests (its
  // status says why) until the device charges. 0: never pauses. --min-battery.
  int min_battery = 20;
  // Prefixes the sysfs and /proc paths the device state is read from (fleet/agent/
  // device_sensors.h): test fixtures only. --device-root.
  std::string device_root;
};

class Agent {
 public:
  // Loads or creates the identity, detects specs, runs the benchmark, then starts the connection
  // loop. Errors name the file or option.
  static Result<std::unique_ptr<Agent>> start(AgentOptions options);
  ~Agent();
  Agent(const Agent&) = delete;
  Agent& operator=(const Agent&) = delete;

  const std::string& id() const;
  // Closes the tunnel and stops every replica. Idempotent.
  void stop();

  struct Impl;

 private:
  explicit Agent(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace cellserve::fleet
