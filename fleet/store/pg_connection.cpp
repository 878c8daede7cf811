#include "fleet/store/pg_connection.h"

#include <libpq-fe.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "base/log_if_failed.h"

namespace cellserve::fleet {
namespace {

// Session settings every connection (and every reset) runs with: no statement, lock wait or
// forgotten transaction holds a hub forever; notices (IF NOT EXISTS, ...) stay out of the log.
constexpr const char* kSessionSettings =
    "SET statement_timeout = '30s'; SET lock_timeout = '10s'; "
    "SET idle_in_transaction_session_timeout = '60s'; SET client_min_messages = warning";

void ignore_notice(void* /*arg*/, const char* /*message*/) {}

// libpq's messages span lines ("...failed: Connection refused\n\tIs the server running...\n");
// a Status is one line.
std::string trimmed(const char* message) {
  std::string m;
  for (const char* p = message != nullptr ? message : ""; *p != '\0'; ++p) {
    if (*p != '\n' && *p != '\t') {
      m += *p;
    } else if (!m.empty() && m.back() != ' ') {
      m += ' ';
    }
  }
  while (!m.empty() && m.back() == ' ') m.pop_back();
  return m;
}

// Masks the text after "password=" up to the next separator, in a query string or a key=value
// connection string.
void mask_password_parameter(std::string& s) {
  size_t at = 0;
  while ((at = s.find("password=", at)) != std::string::npos) {
    const size_t from = at + std::strlen("password=");
    size_t to = s.find_first_of("& ", from);
    if (to == std::string::npos) to = s.size();
    s.replace(from, to - from, "***");
    at = from;
  }
}

// SQLSTATEs that say "not now" rather than "wrong": the same call may succeed later, so the hub
// answers 503 on them. Class 08: connection exceptions; 57P01..57P03: the server shuts down or
// starts; 57014: statement_timeout; 55P03: lock_timeout; 40001, 40P01: serialization failure and
// deadlock (two hubs writing the same rows).
bool transient_sqlstate(const char* state) {
  if (std::strncmp(state, "08", 2) == 0 || std::strncmp(state, "57P0", 4) == 0) return true;
  for (const char* s : {"57014", "55P03", "40001", "40P01"}) {
    if (std::strcmp(state, s) == 0) return true;
  }
  return false;
}

}  // namespace

std::string mask_postgres_url(std::string_view url) {
  std::string s(url);
  const size_t scheme = s.find("://");
  if (scheme != std::string::npos) {
    // postgresql://user:password@host: the userinfo ends at the last '@' before the path.
    const size_t authority = scheme + 3;
    const size_t path = s.find_first_of("/?", authority);
    const size_t at = s.rfind('@', path == std::string::npos ? std::string::npos : path);
    if (at != std::string::npos && at >= authority) {
      const size_t colon = s.find(':', authority);
      if (colon != std::string::npos && colon < at) s.replace(colon + 1, at - colon - 1, "***");
    }
  }
  mask_password_parameter(s);
  return s;
}

PgParams& PgParams::add(std::string_view text) {
  values_.emplace_back(std::string(text));
  return *this;
}

PgParams& PgParams::add(int64_t v) {
  values_.emplace_back(std::to_string(v));
  return *this;
}

PgParams& PgParams::add(bool v) {
  values_.emplace_back(v ? "true" : "false");
  return *this;
}

PgParams& PgParams::add(double v) {
  if (std::isnan(v)) {
    values_.emplace_back("NaN");
  } else if (std::isinf(v)) {
    values_.emplace_back(v > 0 ? "Infinity" : "-Infinity");
  } else {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.17g", v);  // 17 digits: the exact double comes back
    values_.emplace_back(buf);
  }
  return *this;
}

PgParams& PgParams::add_null() {
  values_.emplace_back(std::nullopt);
  return *this;
}

PgParams& PgParams::add_text_array(const std::vector<std::string>& items) {
  std::string literal = "{";
  for (const std::string& item : items) {
    if (literal.size() > 1) literal += ',';
    literal += '"';
    for (const char c : item) {
      if (c == '"' || c == '\\') literal += '\\';
      literal += c;
    }
    literal += '"';
  }
  literal += '}';
  values_.emplace_back(std::move(literal));
  return *this;
}

std::string PgRow::text(int col) const {
  const char* v = PQgetvalue(result_.res_, row_, col);
  return std::string(v, static_cast<size_t>(PQgetlength(result_.res_, row_, col)));
}

int64_t PgRow::i64(int col) const { return std::strtoll(PQgetvalue(result_.res_, row_, col), nullptr, 10); }

double PgRow::f64(int col) const { return std::strtod(PQgetvalue(result_.res_, row_, col), nullptr); }

bool PgRow::flag(int col) const { return PQgetvalue(result_.res_, row_, col)[0] == 't'; }

PgResult::~PgResult() { PQclear(res_); }

int PgResult::rows() const { return PQntuples(res_); }

int64_t PgResult::changed() const {
  const char* n = PQcmdTuples(res_);
  return n[0] == '\0' ? 0 : std::strtoll(n, nullptr, 10);
}

Result<std::unique_ptr<PgConnection>> PgConnection::open(const std::string& url) {
  // Defaults first: the URL (dbname, expanded) comes last, so what it sets wins.
  const char* keys[] = {"connect_timeout",     "keepalives",       "keepalives_idle",
                        "keepalives_interval", "keepalives_count", "tcp_user_timeout",
                        "application_name",    "dbname",           nullptr};
  const char* values[] = {"10", "1", "10", "5", "3", "30000", "cellserve-hub", url.c_str(), nullptr};
  pg_conn* conn = PQconnectdbParams(keys, values, /*expand_dbname=*/1);
  const std::string masked = mask_postgres_url(url);
  if (conn == nullptr) return Status::internal("postgresql: out of memory connecting to " + masked);
  if (PQstatus(conn) != CONNECTION_OK) {
    const std::string why = trimmed(PQerrorMessage(conn));
    PQfinish(conn);
    return Status::unavailable("postgresql: cannot connect to " + masked + ": " + why);
  }
  PQsetNoticeProcessor(conn, ignore_notice, nullptr);
  std::unique_ptr<PgConnection> c(new PgConnection(conn, masked));
  CS_RETURN_IF_ERROR(c->configure_session());
  return c;
}

PgConnection::~PgConnection() { PQfinish(conn_); }

Status PgConnection::configure_session() { return exec_script(kSessionSettings); }

Status PgConnection::ensure_connected() {
  if (PQstatus(conn_) == CONNECTION_OK) return {};
  // Inside a transaction a new session would run the rest of it outside: the transaction is lost.
  if (in_transaction_) return Status::unavailable("postgresql: lost the connection to " + masked_url_);
  PQreset(conn_);
  if (PQstatus(conn_) != CONNECTION_OK) {
    return Status::unavailable("postgresql: cannot reconnect to " + masked_url_ + ": " +
                               trimmed(PQerrorMessage(conn_)));
  }
  return configure_session();
}

Status PgConnection::error(const pg_result* res) const {
  if (PQstatus(conn_) != CONNECTION_OK) {
    return Status::unavailable("postgresql: lost the connection to " + masked_url_ + ": " +
                               trimmed(PQerrorMessage(conn_)));
  }
  const char* state = res != nullptr ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : nullptr;
  const std::string message = trimmed(res != nullptr ? PQresultErrorMessage(res) : PQerrorMessage(conn_));
  if (state != nullptr && transient_sqlstate(state)) return Status::unavailable("postgresql: " + message);
  return Status::internal("postgresql: " + message);
}

Result<PgResult> PgConnection::exec(std::string_view sql, const PgParams& params) {
  CS_RETURN_IF_ERROR(ensure_connected());
  std::vector<const char*> values;
  values.reserve(params.values().size());
  for (const std::optional<std::string>& v : params.values()) values.push_back(v ? v->c_str() : nullptr);
  const std::string statement(sql);
  PgResult res(PQexecParams(conn_, statement.c_str(), params.size(), nullptr, values.data(), nullptr, nullptr,
                            /*resultFormat=text*/ 0));
  const ExecStatusType st = res.res_ != nullptr ? PQresultStatus(res.res_) : PGRES_FATAL_ERROR;
  if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) return error(res.res_);
  return res;
}

Status PgConnection::exec_script(const char* sql) {
  CS_RETURN_IF_ERROR(ensure_connected());
  PgResult res(PQexec(conn_, sql));
  const ExecStatusType st = res.res_ != nullptr ? PQresultStatus(res.res_) : PGRES_FATAL_ERROR;
  if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) return error(res.res_);
  return {};
}

PgTransaction::~PgTransaction() {
  if (!open_) return;
  conn_.in_transaction_ = false;
  // A broken connection has no transaction left to roll back; the next statement resets it.
  if (PQstatus(conn_.conn_) != CONNECTION_OK) return;
  log_if_failed(conn_.exec_script("ROLLBACK"), "postgresql: rolling back an unfinished transaction");
}

Status PgTransaction::begin() {
  CS_RETURN_IF_ERROR(conn_.exec_script("BEGIN"));
  open_ = true;
  conn_.in_transaction_ = true;
  return {};
}

Status PgTransaction::commit() {
  const Status s = conn_.exec_script("COMMIT");
  if (!s.ok()) return s;  // still open: the destructor rolls back
  open_ = false;
  conn_.in_transaction_ = false;
  return {};
}

}  // namespace cellserve::fleet
