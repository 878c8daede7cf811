// A private PostgreSQL server for tests, from Debian's `postgresql` package (scripts/setup):
//   initdb in a fresh temporary folder, then pg_ctl start with the server listening only on a
//   unix socket in that folder (no TCP port: nothing outside the machine, nor another test run,
//   can reach it or collide with it). Each test takes a fresh database (create_database); the
//   destructor stops the server (pg_ctl stop -m immediate) and removes the folder.
// Root: initdb and postgres refuse to run as root, so when the test runs as uid 0 they run as the
//   `postgres` system user (runuser -u postgres --), which owns the folder; the test, as root,
//   still reaches the socket.
// Binaries: initdb and pg_ctl from PATH, else /usr/lib/postgresql/<version>/bin. Without them
//   start() is NotFound, and a test skips with its message.
// Speed: fsync and full-page writes are off (a test server's data need not survive a crash).
//   ctest runs each test in a process of its own, so each starts a server: initdb's cluster is
//   kept as a template (CELLSERVE_PG_TEMPLATE_DIR-<version>, in the build folder) and copied, not
//   made again.
#pragma once

#include <memory>
#include <string>

#include "base/status.h"

namespace cellserve::testing {

class PostgresServer {
 public:
  static Result<std::unique_ptr<PostgresServer>> start();
  ~PostgresServer();
  PostgresServer(const PostgresServer&) = delete;
  PostgresServer& operator=(const PostgresServer&) = delete;

  // Creates an empty database t_<n> (n counts up per server) and returns its URL.
  Result<std::string> create_database();
  // The URL of database `name` on this server (user postgres, trust authentication).
  std::string url(const std::string& name) const;
  // Stops the server (its databases are kept, clients' connections break) and starts it again:
  // what a client does while its database is away. Each is a no-op when already so.
  Status stop();
  Status start_again();
  // The folder holding the data, the socket and the server's log (log.txt).
  const std::string& dir() const { return dir_; }

 private:
  PostgresServer(std::string dir, std::string bin, bool as_postgres)
      : dir_(std::move(dir)), bin_(std::move(bin)), as_postgres_(as_postgres) {}
  // `tool` (initdb, pg_ctl) from bin_ with `args`, as the postgres user when we are root;
  // its output is appended to log.txt.
  Status run_tool(const std::string& tool, const std::string& args) const;
  // Runs `command` (a shell line) with its output appended to log.txt; `what` names it in errors.
  Status run_shell(const std::string& command, const std::string& what) const;
  // Makes the database cluster at `data`: a copy of the template when there is one, else initdb
  // (then kept as the template).
  Status make_cluster(const std::string& data) const;

  std::string dir_;
  std::string bin_;
  bool as_postgres_;
  bool running_ = false;
  int databases_ = 0;
};

// One server for the whole test binary, started on first use and stopped when the tests end
// (a GoogleTest environment, so also after a failed test). The Status of the failed start
// otherwise (NotFound when the binaries are absent), repeated to every caller.
Result<PostgresServer*> shared_postgres_server();

}  // namespace cellserve::testing
