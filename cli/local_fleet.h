// The child processes of `cellserve up`: this same binary run as `hub` and `agent`, each in its
// own process group with its output in a log file, dying with its parent (PR_SET_PDEATHSIG) even
// when the parent is SIGKILLed, and stopped in order with SIGTERM, then SIGKILL after a deadline,
// always reaped.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"

namespace cellserve::cli {

struct ChildProcess {
  std::string name;      // "hub", "agent-1", ...
  std::string log_path;  // its stdout and stderr
  pid_t pid = -1;        // -1 once reaped
  int wait_status = 0;   // waitpid's status once reaped
};

// What woke wait_for_event(): nothing (the timeout), SIGINT or SIGTERM, or a child that exited.
struct FleetEvent {
  int signal = 0;                            // SIGINT or SIGTERM; 0 when none
  std::optional<ChildProcess> exited_child;  // a child that ended on its own (reaped)
};

class LocalFleet {
 public:
  // Blocks SIGINT, SIGTERM and SIGCHLD in this thread, so that they are read by wait_for_event()
  // (threads started later inherit the mask). The children run `exe` (tests: another program).
  explicit LocalFleet(std::string exe = "/proc/self/exe");
  // Stops whatever still runs (stop_all with a short deadline).
  ~LocalFleet();
  LocalFleet(const LocalFleet&) = delete;
  LocalFleet& operator=(const LocalFleet&) = delete;

  // Starts `exe args...` (argv[0] "cellserve") with stdin /dev/null and stdout and stderr appended to
  // `log_path` (created 0600).
  Status start(const std::string& name, const std::vector<std::string>& args, const std::string& log_path);

  // Waits up to `timeout` for SIGINT, SIGTERM or a child's exit (reaping it).
  FleetEvent wait_for_event(std::chrono::milliseconds timeout);

  // SIGTERM to every running child, the agents first (the newest first), each waited for up to
  // `grace`, then SIGKILL for what remains; every child is reaped. Idempotent.
  void stop_all(std::chrono::milliseconds grace);

  const std::vector<ChildProcess>& children() const { return children_; }

 private:
  // Reaps children that exited (WNOHANG); returns the first one found.
  std::optional<ChildProcess> reap_exited();
  std::string exe_;
  std::vector<ChildProcess> children_;
  pid_t self_ = -1;
};

// "exited with status 3" or "killed by signal 9 (Killed)".
std::string describe_wait_status(int wait_status);

}  // namespace cellserve::cli
