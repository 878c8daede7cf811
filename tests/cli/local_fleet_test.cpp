// LocalFleet, the child processes of `cellserve up`, with /bin/sh standing in for cellserve:
// output goes to the log, an exit is reported with its status, stop_all() ends even a child that
// ignores SIGTERM and reaps everything, and a child dies with its parent even when the parent is
// SIGKILLed (PR_SET_PDEATHSIG).
#include "cli/local_fleet.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>

namespace cellserve::cli {
namespace {

namespace fs = std::filesystem;
using std::chrono::milliseconds;

class LocalFleetTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/cs_local_fleet_XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string read(const std::string& path) {
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  }
  std::string dir_;
};

// Whether `pid` exists and is not a zombie.
bool running(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return false;
  const size_t paren = line.rfind(')');
  return paren != std::string::npos && paren + 2 < line.size() && line[paren + 2] != 'Z';
}

TEST_F(LocalFleetTest, ReportsAnExitWithItsStatusAndKeepsTheOutputInTheLog) {
  LocalFleet fleet("/bin/sh");
  ASSERT_TRUE(fleet.start("agent-1", {"-c", "echo to-the-log; echo err >&2; exit 3"}, dir_ + "/a.log").ok());
  FleetEvent event;
  for (int i = 0; i < 100 && !event.exited_child; ++i) event = fleet.wait_for_event(milliseconds(100));
  ASSERT_TRUE(event.exited_child.has_value());
  EXPECT_EQ(event.exited_child->name, "agent-1");
  EXPECT_EQ(describe_wait_status(event.exited_child->wait_status), "exited with status 3");
  EXPECT_EQ(read(dir_ + "/a.log"), "to-the-log\nerr\n");
  EXPECT_EQ(fs::status(dir_ + "/a.log").permissions() & fs::perms::all, fs::perms::owner_read | fs::perms::owner_write);
}

TEST_F(LocalFleetTest, StopAllEndsAndReapsEveryChildEvenOneIgnoringSigterm) {
  LocalFleet fleet("/bin/sh");
  ASSERT_TRUE(fleet.start("hub", {"-c", "exec sleep 30"}, dir_ + "/hub.log").ok());
  ASSERT_TRUE(fleet.start("agent-1", {"-c", "trap '' TERM; sleep 30; sleep 30"}, dir_ + "/a.log").ok());
  std::vector<pid_t> pids;
  for (const ChildProcess& c : fleet.children()) pids.push_back(c.pid);
  std::this_thread::sleep_for(milliseconds(200));  // the trap is set
  fleet.stop_all(milliseconds(300));
  for (const ChildProcess& c : fleet.children()) EXPECT_EQ(c.pid, -1) << c.name;
  EXPECT_EQ(describe_wait_status(fleet.children()[1].wait_status), "killed by signal 9 (Killed)");
  for (pid_t pid : pids) EXPECT_FALSE(running(pid));
  EXPECT_EQ(::waitpid(-1, nullptr, WNOHANG), -1) << "a child was left unreaped";
}

TEST_F(LocalFleetTest, ChildrenDieWithTheirParentEvenWhenItIsKilled) {
  int pipe_fds[2];
  ASSERT_EQ(::pipe(pipe_fds), 0);
  const pid_t parent = ::fork();
  ASSERT_GE(parent, 0);
  if (parent == 0) {  // the stand-in for `up`: starts a child, says its pid, waits to be killed
    LocalFleet fleet("/bin/sh");
    if (!fleet.start("hub", {"-c", "exec sleep 30"}, dir_ + "/hub.log").ok()) ::_exit(1);
    const pid_t child = fleet.children()[0].pid;
    if (::write(pipe_fds[1], &child, sizeof(child)) != sizeof(child)) ::_exit(1);
    ::pause();
    ::_exit(0);
  }
  ::close(pipe_fds[1]);
  pid_t child = -1;
  ASSERT_EQ(::read(pipe_fds[0], &child, sizeof(child)), static_cast<ssize_t>(sizeof(child)));
  ::close(pipe_fds[0]);
  ASSERT_TRUE(running(child));
  ::kill(parent, SIGKILL);
  ::waitpid(parent, nullptr, 0);
  for (int i = 0; i < 100 && running(child); ++i) std::this_thread::sleep_for(milliseconds(50));
  EXPECT_FALSE(running(child)) << "the child outlived its SIGKILLed parent";
}

}  // namespace
}  // namespace cellserve::cli
