#include "cli/local_fleet.h"

#include <fcntl.h>
#include <pthread.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>

namespace cellserve::cli {
namespace {

sigset_t fleet_signals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGCHLD);
  return set;
}

// In the child between fork and exec: only async-signal-safe calls. Never returns.
[[noreturn]] void exec_child(pid_t parent, int log_fd, const char* exe, char* const* argv) {
  // Dies with the parent (SIGTERM, which hub and agent handle as a clean stop), even when the
  // parent is SIGKILLed; and if the parent died before this line, at once.
  if (::prctl(PR_SET_PDEATHSIG, SIGTERM) != 0 || ::getppid() != parent) ::_exit(127);
  ::setpgid(0, 0);  // a terminal's Ctrl-C reaches `up` only, which stops the children in order
  const int null_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (null_fd < 0 || ::dup2(null_fd, STDIN_FILENO) < 0 || ::dup2(log_fd, STDOUT_FILENO) < 0 ||
      ::dup2(log_fd, STDERR_FILENO) < 0) {
    ::_exit(127);
  }
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);  // the mask survives exec; the children want theirs
  ::execv(exe, argv);
  ::_exit(127);
}

}  // namespace

std::string describe_wait_status(int wait_status) {
  if (WIFEXITED(wait_status)) return "exited with status " + std::to_string(WEXITSTATUS(wait_status));
  if (WIFSIGNALED(wait_status)) {
    const int sig = WTERMSIG(wait_status);
    return "killed by signal " + std::to_string(sig) + " (" + ::strsignal(sig) + ")";
  }
  return "stopped";
}

LocalFleet::LocalFleet(std::string exe) : exe_(std::move(exe)), self_(::getpid()) {
  const sigset_t set = fleet_signals();
  ::pthread_sigmask(SIG_BLOCK, &set, nullptr);
}

LocalFleet::~LocalFleet() { stop_all(std::chrono::seconds(5)); }

Status LocalFleet::start(const std::string& name, const std::vector<std::string>& args, const std::string& log_path) {
  const int log_fd = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  if (log_fd < 0) return Status::internal(log_path + ": cannot open the log: " + std::strerror(errno));
  // argv built before fork: the child may only make async-signal-safe calls.
  std::vector<std::string> owned;
  owned.push_back("cellserve");
  owned.insert(owned.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& a : owned) argv.push_back(a.data());
  argv.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid == 0) exec_child(self_, log_fd, exe_.c_str(), argv.data());
  const int fork_errno = errno;
  ::close(log_fd);
  if (pid < 0) return Status::internal("cannot start " + name + ": " + std::strerror(fork_errno));
  children_.push_back({name, log_path, pid, 0});
  return {};
}

std::optional<ChildProcess> LocalFleet::reap_exited() {
  std::optional<ChildProcess> first;
  for (ChildProcess& c : children_) {
    if (c.pid < 0) continue;
    int status = 0;
    if (::waitpid(c.pid, &status, WNOHANG) != c.pid) continue;
    c.pid = -1;
    c.wait_status = status;
    if (!first) first = c;
  }
  return first;
}

FleetEvent LocalFleet::wait_for_event(std::chrono::milliseconds timeout) {
  FleetEvent event;
  if ((event.exited_child = reap_exited())) return event;
  const sigset_t set = fleet_signals();
  timespec ts{static_cast<time_t>(timeout.count() / 1000), static_cast<long>(timeout.count() % 1000) * 1000000};
  const int sig = ::sigtimedwait(&set, nullptr, &ts);
  if (sig == SIGINT || sig == SIGTERM) event.signal = sig;
  if (!event.signal) event.exited_child = reap_exited();
  return event;
}

void LocalFleet::stop_all(std::chrono::milliseconds grace) {
  // Agents first (newest first), then the hub they report to: no agent sees its hub vanish.
  const auto stop_group = [&](bool agents) {
    bool any = false;
    for (ChildProcess& c : children_) {
      if (c.pid > 0 && (c.name != "hub") == agents) {
        ::kill(c.pid, SIGTERM);
        any = true;
      }
    }
    if (!any) return;
    const auto deadline = std::chrono::steady_clock::now() + grace;
    const sigset_t set = fleet_signals();
    for (;;) {
      (void)reap_exited();
      const bool running = std::any_of(children_.begin(), children_.end(),
                                       [&](const ChildProcess& c) { return c.pid > 0 && (c.name != "hub") == agents; });
      if (!running) return;
      if (std::chrono::steady_clock::now() >= deadline) break;
      timespec ts{0, 50 * 1000000};
      // A second Ctrl-C (or SIGTERM) while stopping: no more waiting.
      const int sig = ::sigtimedwait(&set, nullptr, &ts);
      if (sig == SIGINT || sig == SIGTERM) break;
    }
    for (ChildProcess& c : children_) {
      if (c.pid > 0 && (c.name != "hub") == agents) {
        ::kill(-c.pid, SIGKILL);  // its process group: anything it started goes too
        int status = 0;
        ::waitpid(c.pid, &status, 0);
        c.pid = -1;
        c.wait_status = status;
      }
    }
  };
  stop_group(true);
  stop_group(false);
}

}  // namespace cellserve::cli
