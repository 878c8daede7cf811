#include "tests/support/postgres_server.h"

#include <gtest/gtest.h>
#include <libpq-fe.h>
#include <pwd.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <sstream>

#include "base/log_if_failed.h"

namespace cellserve::testing {
namespace {

namespace fs = std::filesystem;

// The folder holding initdb and pg_ctl, or "" when either is missing.
std::string find_postgres_bin() {
  std::vector<fs::path> candidates;
  if (const char* path = std::getenv("PATH"); path != nullptr) {
    std::stringstream dirs(path);
    for (std::string d; std::getline(dirs, d, ':');) {
      if (!d.empty()) candidates.emplace_back(d);
    }
  }
  std::error_code ec;
  if (fs::is_directory("/usr/lib/postgresql", ec)) {
    for (const auto& version : fs::directory_iterator("/usr/lib/postgresql", ec)) {
      candidates.push_back(version.path() / "bin");
    }
  }
  for (const fs::path& d : candidates) {
    if (::access((d / "initdb").c_str(), X_OK) == 0 && ::access((d / "pg_ctl").c_str(), X_OK) == 0) {
      return d.string();
    }
  }
  return "";
}

std::string quoted(const std::string& s) { return "'" + s + "'"; }  // our own paths: no quotes inside

}  // namespace

Result<std::unique_ptr<PostgresServer>> PostgresServer::start() {
  const std::string bin = find_postgres_bin();
  if (bin.empty()) {
    return Status::not_found(
        "PostgreSQL server binaries (initdb, pg_ctl) not found on PATH or in /usr/lib/postgresql/*/bin: "
        "scripts/setup installs the postgresql package");
  }
  std::string tmpl = (fs::temp_directory_path() / "cs_pg_XXXXXX").string();
  if (::mkdtemp(tmpl.data()) == nullptr) return Status::internal("mkdtemp " + tmpl + " failed");
  const bool as_postgres = ::geteuid() == 0;
  if (as_postgres) {
    const passwd* pw = ::getpwnam("postgres");
    if (pw == nullptr || ::chown(tmpl.c_str(), pw->pw_uid, pw->pw_gid) != 0) {
      fs::remove_all(tmpl);
      return Status::not_found("running as root, and no `postgres` user to run the PostgreSQL server as");
    }
  }
  std::unique_ptr<PostgresServer> server(new PostgresServer(tmpl, bin, as_postgres));
  const std::string data = server->dir_ + "/data";
  CS_RETURN_IF_ERROR(server->make_cluster(data));
  CS_RETURN_IF_ERROR(server->start_again());
  return server;
}

Status PostgresServer::start_again() {
  if (running_) return {};
  // -k: the socket's folder; listen_addresses '': no TCP at all.
  const std::string options = "-k " + dir_ + " -c listen_addresses='' -c fsync=off -c full_page_writes=off";
  CS_RETURN_IF_ERROR(run_tool("pg_ctl", "-D " + quoted(dir_ + "/data") + " -w -t 60 -l " +
                                            quoted(dir_ + "/server.log") + " -o \"" + options + "\" start"));
  running_ = true;
  return {};
}

Status PostgresServer::stop() {
  if (!running_) return {};
  CS_RETURN_IF_ERROR(run_tool("pg_ctl", "-D " + quoted(dir_ + "/data") + " -w -t 60 -m fast stop"));
  running_ = false;
  return {};
}

Status PostgresServer::make_cluster(const std::string& data) const {
#ifdef CELLSERVE_PG_TEMPLATE_DIR
  // One template per PostgreSQL version (its bin folder's parent: /usr/lib/postgresql/15).
  std::error_code ec;
  const fs::path version = fs::canonical(fs::path(bin_) / "initdb", ec).parent_path().parent_path().filename();
  const std::string tmpl = std::string(CELLSERVE_PG_TEMPLATE_DIR) + "-" + version.string();
  if (fs::exists(tmpl + "/PG_VERSION", ec)) {
    return run_shell("cp -a " + quoted(tmpl) + " " + quoted(data), "copying the cluster template " + tmpl);
  }
#endif
  CS_RETURN_IF_ERROR(run_tool("initdb", "-D " + quoted(data) + " -U postgres --auth=trust -E UTF8 --no-sync"));
#ifdef CELLSERVE_PG_TEMPLATE_DIR
  // Published whole by one rename: a process running beside this one sees no template or all of
  // it. A failed copy or a lost race only costs the next start an initdb.
  const std::string staging = tmpl + ".tmp" + std::to_string(::getpid());
  if (run_shell("cp -a " + quoted(data) + " " + quoted(staging), "staging the cluster template").ok()) {
    fs::rename(staging, tmpl, ec);
    if (ec) fs::remove_all(staging, ec);
  }
#endif
  return {};
}

Status PostgresServer::run_shell(const std::string& command, const std::string& what) const {
  const int rc = std::system((command + " >>" + quoted(dir_ + "/log.txt") + " 2>&1").c_str());
  if (rc != 0) {
    return Status::internal(what + " failed (exit status " + std::to_string(rc) + "); see " + dir_ + "/log.txt");
  }
  return {};
}

PostgresServer::~PostgresServer() {
  if (running_) {
    log_if_failed(run_tool("pg_ctl", "-D " + quoted(dir_ + "/data") + " -w -t 60 -m immediate stop"),
                  "stopping the test PostgreSQL server");
  }
  std::error_code ec;
  fs::remove_all(dir_, ec);
}

Status PostgresServer::run_tool(const std::string& tool, const std::string& args) const {
  return run_shell((as_postgres_ ? "runuser -u postgres -- " : "") + quoted(bin_ + "/" + tool) + " " + args,
                   tool + " (server log: " + dir_ + "/server.log)");
}

std::string PostgresServer::url(const std::string& name) const {
  return "postgresql://postgres@/" + name + "?host=" + dir_;
}

Result<std::string> PostgresServer::create_database() {
  const std::string name = "t_" + std::to_string(databases_++);
  PGconn* conn = PQconnectdb(("host=" + dir_ + " user=postgres dbname=postgres connect_timeout=10").c_str());
  Status status;
  if (PQstatus(conn) != CONNECTION_OK) {
    status = Status::unavailable(std::string("connecting to the test server: ") + PQerrorMessage(conn));
  } else {
    PGresult* res = PQexec(conn, ("CREATE DATABASE " + name).c_str());
    if (PQresultStatus(res) != PGRES_COMMAND_OK) {
      status = Status::internal("CREATE DATABASE " + name + ": " + PQresultErrorMessage(res));
    }
    PQclear(res);
  }
  PQfinish(conn);
  if (!status.ok()) return status;
  return url(name);
}

namespace {

// Holds the shared server; TearDown stops it once every test has run.
class SharedPostgres final : public ::testing::Environment {
 public:
  Result<PostgresServer*> get() {
    if (!started_) {
      started_ = true;
      Result<std::unique_ptr<PostgresServer>> s = PostgresServer::start();
      if (s.ok()) {
        server_ = std::move(s).value();
      } else {
        failure_ = s.status();
      }
    }
    if (server_ == nullptr) return failure_;
    return server_.get();
  }
  void TearDown() override { server_.reset(); }

 private:
  bool started_ = false;
  std::unique_ptr<PostgresServer> server_;
  Status failure_;
};

SharedPostgres* shared_environment() {
  // Owned by GoogleTest once added.
  static SharedPostgres* const env =
      static_cast<SharedPostgres*>(::testing::AddGlobalTestEnvironment(new SharedPostgres));
  return env;
}

}  // namespace

Result<PostgresServer*> shared_postgres_server() { return shared_environment()->get(); }

}  // namespace cellserve::testing
