// A thin RAII layer over libpq for the PostgreSQL store: one connection (PgConnection),
// parameter lists (PgParams), results (PgResult, PgRow) and transactions (PgTransaction), with
// PostgreSQL errors mapped to Status. Not thread-safe: PgStore serializes every use behind its
// mutex.
//
// Deadlines: connecting waits at most connect_timeout (10 s unless the URL sets it); each session
// runs with statement_timeout 30 s, lock_timeout 10 s and idle_in_transaction_session_timeout
// 60 s; TCP keepalives and tcp_user_timeout bound a silent peer. A URL may override any of them.
//
// Errors: Unavailable when the server cannot be reached or the connection broke, and for errors
// that pass (statement or lock timeout, serialization failure, deadlock, the server shutting
// down); Internal with PostgreSQL's message otherwise.
//
// Broken connections: a statement that fails because the connection broke is Unavailable, and
// the next statement outside a transaction first resets the connection once (PQreset). A failed
// statement is never retried: it may have committed before the connection broke.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "base/status.h"

struct pg_conn;
struct pg_result;

namespace cellserve::fleet {

// `url` with its password (user:PASSWORD@ or password=...) replaced by "***": what a log may show.
std::string mask_postgres_url(std::string_view url);

// The values of $1..$n, each sent as text (PostgreSQL casts them to the types the statement
// needs); add_null() sends SQL NULL.
class PgParams {
 public:
  PgParams& add(std::string_view text);
  PgParams& add(const char* text) { return add(std::string_view(text)); }
  PgParams& add(const std::string& text) { return add(std::string_view(text)); }
  PgParams& add(int64_t v);
  PgParams& add(int v) { return add(static_cast<int64_t>(v)); }
  PgParams& add(uint64_t v) { return add(static_cast<int64_t>(v)); }  // bit pattern kept (BIGINT)
  PgParams& add(bool v);
  PgParams& add(double v);
  PgParams& add_null();
  // A text[] value (array literal: each element double-quoted, '"' and '\\' escaped), for
  // `= ANY($n::text[])`.
  PgParams& add_text_array(const std::vector<std::string>& items);

  int size() const { return static_cast<int>(values_.size()); }
  const std::vector<std::optional<std::string>>& values() const { return values_; }

 private:
  std::vector<std::optional<std::string>> values_;
};

class PgResult;

// One row of a result. Columns are 0-based; NULL reads as "" / 0.
class PgRow {
 public:
  PgRow(const PgResult& result, int row) : result_(result), row_(row) {}
  std::string text(int col) const;
  int64_t i64(int col) const;
  uint64_t u64(int col) const { return static_cast<uint64_t>(i64(col)); }
  int i32(int col) const { return static_cast<int>(i64(col)); }
  double f64(int col) const;
  bool flag(int col) const;  // a BOOLEAN column

 private:
  const PgResult& result_;
  int row_;
};

// A statement's result: its rows and, for INSERT/UPDATE/DELETE, how many rows it changed.
class PgResult {
 public:
  explicit PgResult(pg_result* res) : res_(res) {}
  PgResult(PgResult&& other) noexcept : res_(other.res_) { other.res_ = nullptr; }
  PgResult& operator=(PgResult&&) = delete;
  PgResult(const PgResult&) = delete;
  ~PgResult();

  int rows() const;
  PgRow row(int i) const { return PgRow(*this, i); }
  int64_t changed() const;

 private:
  friend class PgRow;
  friend class PgConnection;
  pg_result* res_;
};

// Every row of `r`, each read by `read(row)`: a T, or a Result<T> whose error ends the read.
template <typename T, typename Read>
Result<std::vector<T>> read_pg_rows(const PgResult& r, Read read) {
  std::vector<T> out;
  out.reserve(static_cast<size_t>(r.rows()));
  for (int i = 0; i < r.rows(); ++i) {
    if constexpr (std::is_same_v<std::invoke_result_t<Read&, const PgRow&>, T>) {
      out.push_back(read(r.row(i)));
    } else {
      CS_ASSIGN_OR_RETURN(T value, read(r.row(i)));
      out.push_back(std::move(value));
    }
  }
  return out;
}

class PgConnection {
 public:
  // Connects to `url` (postgresql://user:password@host:port/db?sslmode=verify-full, or any libpq
  // connection string). Unavailable when the server cannot be reached; the message masks the URL.
  static Result<std::unique_ptr<PgConnection>> open(const std::string& url);
  ~PgConnection();
  PgConnection(const PgConnection&) = delete;
  PgConnection& operator=(const PgConnection&) = delete;

  // Runs one statement (`sql` a constant: values go through `params`).
  Result<PgResult> exec(std::string_view sql, const PgParams& params = {});
  // Runs one or more constant statements that take no parameters (a migration).
  Status exec_script(const char* sql);

  // The URL as a log may show it (mask_postgres_url).
  const std::string& masked_url() const { return masked_url_; }

 private:
  friend class PgTransaction;
  PgConnection(pg_conn* conn, std::string masked_url) : conn_(conn), masked_url_(std::move(masked_url)) {}
  // Resets a broken connection once, outside a transaction; Unavailable when it stays broken.
  Status ensure_connected();
  Status configure_session();
  // The Status for a failed result (nullptr: libpq could not even send the statement).
  Status error(const pg_result* res) const;

  pg_conn* conn_;
  std::string masked_url_;
  bool in_transaction_ = false;
};

// Runs BEGIN at begin(); rolls back at destruction unless commit() succeeded. Statements inside
// see READ COMMITTED; the store locks the rows it reads to rewrite them (SELECT ... FOR UPDATE).
class PgTransaction {
 public:
  explicit PgTransaction(PgConnection& conn) : conn_(conn) {}
  ~PgTransaction();
  PgTransaction(const PgTransaction&) = delete;
  PgTransaction& operator=(const PgTransaction&) = delete;

  Status begin();
  Status commit();

 private:
  PgConnection& conn_;
  bool open_ = false;
};

}  // namespace cellserve::fleet
