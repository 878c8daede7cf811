// Many simulated devices in one process, for the hub measurements of bench/cluster_bench.mjs
// (--swarm): COUNT fleet::Agent instances, each with its own identity (DIR/aK), name (PREFIXk),
// tunnel to the hubs, status polls and paced simulator, as COUNT `cellserve agent --simulate`
// processes would be. One process instead of a thousand: on the small machine that also runs the
// hubs, the database and the clients, a thousand agent processes took 12 GiB and most of the
// CPU, so the bench measured the machine instead of the hubs (docs/cluster.md, "Measured").
//
//   build/bench/agent_swarm --hub URL[,URL...] --data-dir DIR --count N --simulate SPEC
//                           [--hub-ca PEM] [--name-prefix P] [--price-per-day X]
//
// Also the many devices of tests/fleet/e2e/healing.test.mjs (a hundred agents behind one NAT
// address, through one TLS listener).
//
// Prints "agent_swarm: N agents started" once every agent has started; runs until SIGINT or
// SIGTERM, then stops them all.
#include <pthread.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "base/log_sink.h"
#include "engine/simulated/simulate_options.h"
#include "fleet/agent/agent.h"

namespace {

using cellserve::fleet::Agent;
using cellserve::fleet::AgentOptions;

int run(int argc, char** argv) {
  CLI::App app{"Many simulated fleet agents in one process (bench/cluster_bench.mjs --swarm)"};
  AgentOptions base;
  int count = 1;
  std::string name_prefix = "swarm-";
  std::string simulate;
  app.add_option("--hub", base.hub_url, "The hubs, comma-separated")->required();
  app.add_option("--data-dir", base.data_dir, "Folder of the agents' data folders (aK for agent K)")->required();
  app.add_option("--count", count, "Agents to start")->check(CLI::Range(1, 10000))->required();
  app.add_option("--simulate", simulate, "prefill=TOK/S,decode=TOK/S,slots=N, as `cellserve agent --simulate`")
      ->required();
  app.add_option("--hub-ca", base.hub_ca, "PEM CA for https hubs (default: the system's certificate store)");
  app.add_option("--name-prefix", name_prefix, "Agent K is named PREFIXK")->capture_default_str();
  app.add_option("--price-per-day", base.price_per_day, "Each agent's ask per replica-day")->capture_default_str();
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  auto sim = cellserve::engine::simulated::parse_simulate_options(simulate);
  if (!sim.ok()) {
    std::fprintf(stderr, "agent_swarm: %s\n", sim.status().message().c_str());
    return 2;
  }
  base.simulate = *sim;

  // One writer for every agent's log lines, each prefixed with the agent's name.
  auto log = std::make_shared<cellserve::LogSink>(STDERR_FILENO);
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);  // before any agent thread starts: they inherit it

  std::vector<std::unique_ptr<Agent>> agents;
  agents.reserve(static_cast<size_t>(count));
  int exit_code = 0;
  for (int k = 0; k < count; ++k) {
    AgentOptions options = base;
    options.name = name_prefix + std::to_string(k);
    options.data_dir = base.data_dir + "/a" + std::to_string(k);
    options.log = [log, name = options.name](const std::string& line) { log->write(name + ": " + line); };
    auto agent = Agent::start(std::move(options));
    if (!agent.ok()) {
      std::fprintf(stderr, "agent_swarm: agent %d: %s\n", k, agent.status().message().c_str());
      exit_code = 1;
      break;
    }
    agents.push_back(std::move(agent).value());
  }
  if (exit_code == 0) {
    std::fprintf(stderr, "agent_swarm: %d agents started\n", count);
    int sig = 0;
    sigwait(&signals, &sig);
  }
  for (auto& agent : agents) agent->stop();
  return exit_code;
}

}  // namespace

int main(int argc, char** argv) { return run(argc, argv); }
