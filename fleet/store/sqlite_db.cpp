#include "fleet/store/sqlite_db.h"

#include <fcntl.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "base/log_if_failed.h"

namespace cellserve::fleet {

SqliteStmt::SqliteStmt(SqliteStmt&& other) noexcept
    : db_(other.db_), stmt_(other.stmt_), bind_error_(other.bind_error_) {
  other.stmt_ = nullptr;
}

SqliteStmt::~SqliteStmt() { sqlite3_finalize(stmt_); }

SqliteStmt& SqliteStmt::bind(int i, std::string_view text) {
  int rc = sqlite3_bind_text64(stmt_, i, text.data(), text.size(), SQLITE_TRANSIENT, SQLITE_UTF8);
  if (rc != SQLITE_OK && bind_error_ == 0) bind_error_ = rc;
  return *this;
}

SqliteStmt& SqliteStmt::bind(int i, int64_t v) {
  int rc = sqlite3_bind_int64(stmt_, i, v);
  if (rc != SQLITE_OK && bind_error_ == 0) bind_error_ = rc;
  return *this;
}

SqliteStmt& SqliteStmt::bind(int i, double v) {
  int rc = sqlite3_bind_double(stmt_, i, v);
  if (rc != SQLITE_OK && bind_error_ == 0) bind_error_ = rc;
  return *this;
}

Result<bool> SqliteStmt::step() {
  if (bind_error_ != 0) return db_->error(bind_error_);
  int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  return db_->error(rc);
}

Status SqliteStmt::run() {
  CS_ASSIGN_OR_RETURN(bool row, step());
  (void)row;
  return {};
}

SqliteStmt& SqliteStmt::reset() {
  // sqlite3_reset's result repeats the last step's error, which that step already returned.
  (void)sqlite3_reset(stmt_);
  sqlite3_clear_bindings(stmt_);
  bind_error_ = 0;
  return *this;
}

std::string SqliteStmt::text(int col) const {
  const unsigned char* p = sqlite3_column_text(stmt_, col);
  if (p == nullptr) return {};
  return std::string(reinterpret_cast<const char*>(p), static_cast<size_t>(sqlite3_column_bytes(stmt_, col)));
}

int64_t SqliteStmt::i64(int col) const { return sqlite3_column_int64(stmt_, col); }
double SqliteStmt::f64(int col) const { return sqlite3_column_double(stmt_, col); }

Result<std::unique_ptr<SqliteDb>> SqliteDb::open(const std::string& path) {
  // The database holds the fleet's state and secrets: readable by its owner only. SQLite gives
  // its -wal and -shm files the database file's mode, so creating that file 0600 covers them.
  if (path != ":memory:" && !path.empty()) {
    const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0) return Status::internal("sqlite: cannot open " + path + ": " + std::strerror(errno));
    (void)::fchmod(fd, 0600);  // an older hub.db created 0644
    ::close(fd);
  }
  sqlite3* raw = nullptr;
  // FULLMUTEX is cheap insurance; the store serializes access anyway.
  int rc =
      sqlite3_open_v2(path.c_str(), &raw, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX, nullptr);
  if (rc != SQLITE_OK) {
    std::string msg = raw != nullptr ? sqlite3_errmsg(raw) : sqlite3_errstr(rc);
    sqlite3_close(raw);
    if ((rc & 0xff) == SQLITE_NOTADB || (rc & 0xff) == SQLITE_CORRUPT) {
      return Status::data_loss(path + ": not a SQLite database (" + msg + ")");
    }
    return Status::internal("sqlite: cannot open " + path + ": " + msg);
  }
  sqlite3_extended_result_codes(raw, 1);
  return std::unique_ptr<SqliteDb>(new SqliteDb(raw, path));
}

SqliteDb::~SqliteDb() { sqlite3_close(db_); }

Result<SqliteStmt> SqliteDb::prepare(std::string_view sql) {
  sqlite3_stmt* stmt = nullptr;
  int rc = sqlite3_prepare_v2(db_, sql.data(), static_cast<int>(sql.size()), &stmt, nullptr);
  if (rc != SQLITE_OK) {
    sqlite3_finalize(stmt);
    return error(rc);
  }
  return SqliteStmt(this, stmt);
}

Status SqliteDb::exec(const char* sql) {
  int rc = sqlite3_exec(db_, sql, nullptr, nullptr, nullptr);
  return rc == SQLITE_OK ? Status() : error(rc);
}

int64_t SqliteDb::changes() const { return sqlite3_changes64(db_); }

Status SqliteDb::error(int rc) const {
  int primary = rc & 0xff;
  std::string msg = sqlite3_errmsg(db_);
  if (msg.empty() || msg == "not an error") msg = sqlite3_errstr(rc);
  if (primary == SQLITE_NOTADB || primary == SQLITE_CORRUPT) {
    return Status::data_loss(path_ + ": not a valid SQLite database (" + msg + ")");
  }
  return Status::internal("sqlite: " + msg);
}

SqliteTransaction::~SqliteTransaction() {
  // A failed ROLLBACK leaves the transaction open, and the next BEGIN on this connection fails.
  if (open_) log_if_failed(db_.exec("ROLLBACK"), "sqlite: rolling back an unfinished transaction");
}

Status SqliteTransaction::begin() {
  CS_RETURN_IF_ERROR(db_.exec("BEGIN IMMEDIATE"));
  open_ = true;
  return {};
}

Status SqliteTransaction::commit() {
  CS_RETURN_IF_ERROR(db_.exec("COMMIT"));
  open_ = false;
  return {};
}

Status migrate_schema(SqliteDb& db, std::span<const char* const> migrations, const std::string& what) {
  const int latest = static_cast<int>(migrations.size());
  CS_ASSIGN_OR_RETURN(SqliteStmt version, db.prepare("PRAGMA user_version"));
  CS_ASSIGN_OR_RETURN(bool row, version.step());
  const int current = row ? version.i32(0) : 0;
  if (current > latest) {
    return Status::unimplemented(what + " schema version " + std::to_string(current) + " is newer than this build's " +
                                 std::to_string(latest));
  }
  for (int v = current; v < latest; ++v) {
    SqliteTransaction tx(db);
    CS_RETURN_IF_ERROR(tx.begin());
    CS_RETURN_IF_ERROR(db.exec(migrations[static_cast<size_t>(v)]));
    CS_RETURN_IF_ERROR(tx.commit());
  }
  return {};
}

}  // namespace cellserve::fleet
