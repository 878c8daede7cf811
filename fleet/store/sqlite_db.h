// A thin RAII layer over the SQLite C API for the store: one connection (SqliteDb), prepared
// statements with bound parameters (SqliteStmt), and the mapping of SQLite errors to Status.
// Not thread-safe: SqliteStore serializes every use behind its mutex.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "base/status.h"

struct sqlite3;
struct sqlite3_stmt;

namespace cellserve::fleet {

class SqliteDb;

// One prepared statement. Parameters are 1-based, as in SQLite; columns are 0-based.
class SqliteStmt {
 public:
  SqliteStmt(SqliteStmt&& other) noexcept;
  SqliteStmt& operator=(SqliteStmt&&) = delete;
  SqliteStmt(const SqliteStmt&) = delete;
  ~SqliteStmt();

  SqliteStmt& bind(int i, std::string_view text);
  SqliteStmt& bind(int i, const char* text) { return bind(i, std::string_view(text)); }
  SqliteStmt& bind(int i, const std::string& text) { return bind(i, std::string_view(text)); }
  SqliteStmt& bind(int i, int64_t v);
  SqliteStmt& bind(int i, int v) { return bind(i, static_cast<int64_t>(v)); }
  SqliteStmt& bind(int i, uint64_t v) { return bind(i, static_cast<int64_t>(v)); }  // bit pattern kept
  SqliteStmt& bind(int i, bool v) { return bind(i, static_cast<int64_t>(v ? 1 : 0)); }
  SqliteStmt& bind(int i, double v);

  // Advances: true when a row is available, false when done. A failure (including one in an
  // earlier bind) becomes a Status.
  Result<bool> step();
  // Runs a statement that returns no rows.
  Status run();
  // Makes the statement ready to run again with new bindings (one prepare for many rows).
  SqliteStmt& reset();

  std::string text(int col) const;
  int64_t i64(int col) const;
  uint64_t u64(int col) const { return static_cast<uint64_t>(i64(col)); }
  int i32(int col) const { return static_cast<int>(i64(col)); }
  double f64(int col) const;

 private:
  friend class SqliteDb;
  SqliteStmt(SqliteDb* db, sqlite3_stmt* stmt) : db_(db), stmt_(stmt) {}

  SqliteDb* db_;
  sqlite3_stmt* stmt_;
  int bind_error_ = 0;  // first failed bind's result code (0: none)
};

// Every remaining row of `s`, each read by `read(s)`: a T, or a Result<T> whose error ends the
// read. A failed step is the result.
template <typename T, typename Read>
Result<std::vector<T>> read_rows(SqliteStmt& s, Read read) {
  std::vector<T> out;
  while (true) {
    CS_ASSIGN_OR_RETURN(const bool row, s.step());
    if (!row) return out;
    if constexpr (std::is_same_v<std::invoke_result_t<Read&, const SqliteStmt&>, T>) {
      out.push_back(read(s));
    } else {
      CS_ASSIGN_OR_RETURN(T value, read(s));
      out.push_back(std::move(value));
    }
  }
}

class SqliteDb {
 public:
  // Opens (creating) the database at `path`. Touches no page yet: a file that is not a database
  // is reported by the first statement.
  static Result<std::unique_ptr<SqliteDb>> open(const std::string& path);
  ~SqliteDb();
  SqliteDb(const SqliteDb&) = delete;
  SqliteDb& operator=(const SqliteDb&) = delete;

  // Prepares `sql` (a constant: values go through bind()).
  Result<SqliteStmt> prepare(std::string_view sql);
  // Runs one or more constant statements that take no parameters (schema, PRAGMAs, BEGIN).
  Status exec(const char* sql);
  // Rows changed by the last INSERT/UPDATE/DELETE.
  int64_t changes() const;

  // The Status for SQLite result code `rc`: DataLoss naming the file for a corrupt or
  // non-database file, Internal with SQLite's message otherwise.
  Status error(int rc) const;

 private:
  SqliteDb(sqlite3* db, std::string path) : db_(db), path_(std::move(path)) {}
  sqlite3* db_;
  std::string path_;
};

// Runs BEGIN IMMEDIATE at construction; rolls back at destruction unless commit() succeeded.
class SqliteTransaction {
 public:
  explicit SqliteTransaction(SqliteDb& db) : db_(db) {}
  ~SqliteTransaction();
  SqliteTransaction(const SqliteTransaction&) = delete;
  SqliteTransaction& operator=(const SqliteTransaction&) = delete;

  Status begin();
  Status commit();

 private:
  SqliteDb& db_;
  bool open_ = false;
};

// Brings the schema (PRAGMA user_version) up to migrations.size(): migration v (0-based) takes
// version v to v + 1 and sets user_version itself; each runs in its own transaction. Unimplemented
// when the file's version is newer than this build's; `what` names the database in that message.
Status migrate_schema(SqliteDb& db, std::span<const char* const> migrations, const std::string& what);

}  // namespace cellserve::fleet
