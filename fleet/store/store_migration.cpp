#include "fleet/store/store_migration.h"

#include <filesystem>

#include "fleet/store/open_store.h"

#ifdef CELLSERVE_HAVE_POSTGRES
#include <algorithm>
#include <fstream>
#include <memory>
#include <set>

#include "fleet/batch/pg_batch_store.h"
#include "fleet/batch/sqlite_batch_store.h"
#include "fleet/store/pg_connection.h"
#include "fleet/store/pg_schema.h"
#include "fleet/store/pg_store.h"
#include "fleet/store/sqlite_db.h"
#endif

namespace cellserve::fleet {

#ifdef CELLSERVE_HAVE_POSTGRES
namespace {

// How a column's value is read from SQLite and sent to PostgreSQL.
enum class Kind { Text, Integer, Real, Flag };

struct Column {
  const char* source;  // the SQLite column
  const char* target;  // the PostgreSQL column (batch_lines' offset and length are renamed there)
  Kind kind;
  // Copied when the source has it: a column of a later schema version than some builds know.
  bool optional = false;
  // Read but not copied: a SQLite row number that the target's identity column numbers afresh
  // (the rows go in in the same order).
  bool renumbered = false;
};

struct TableCopy {
  const char* table;
  std::vector<Column> columns;
};

Column same(const char* name, Kind kind) { return {name, name, kind}; }
Column later(const char* name, Kind kind) { return {name, name, kind, true}; }
Column renumbered(const char* name) { return {name, name, Kind::Integer, false, true}; }

// hub.db's tables at this build's schema (sqlite_schema.cpp; pg_schema.cpp), parents before the
// rows that reference them.
const std::vector<TableCopy>& hub_tables() {
  using enum Kind;
  static const std::vector<TableCopy> tables = {
      {"processors",
       {same("id", Text),
        same("name", Text),
        same("ram_bytes", Integer),
        same("free_disk_bytes", Integer),
        same("cores", Integer),
        same("big_cores", Integer),
        same("arch", Text),
        same("os", Text),
        same("cpu_features", Text),
        same("prefill_tps", Real),
        same("decode_tps", Real),
        same("bench_shape", Text),
        same("price_per_day", Real),
        same("attested", Flag),
        same("online", Flag),
        same("registered_ms", Integer),
        same("last_seen_ms", Integer),
        same("simulated", Flag),
        same("enrollment", Text),
        same("attestation", Text),
        same("label", Text),
        same("address", Text)}},
      {"enrollment_tokens",
       {same("hash", Text), same("label", Text), same("uses_left", Integer), same("expires_ms", Integer),
        same("created_ms", Integer)}},
      {"deployments",
       {same("name", Text), same("created_ms", Integer), same("secrets_version", Integer), same("spec", Text)}},
      {"replicas",
       {same("deployment", Text), same("idx", Integer), same("processor_id", Text), same("price_per_day", Real),
        same("state", Text), same("progress", Real), same("detail", Text), same("prefill_tps", Real),
        same("decode_tps", Real), same("matched_ms", Integer), same("ready_since_ms", Integer), same("cost", Real),
        same("draining", Flag), same("reloading", Flag), same("serving", Text), same("secrets_version", Integer)}},
      // In rowid order: PostgreSQL's seq keeps intervals that start in the same millisecond in order.
      {"service_history",
       {same("processor_id", Text), same("deployment", Text), same("idx", Integer), same("model_sha256", Text),
        same("from_ms", Integer), same("until_ms", Integer)}},
      {"api_keys",
       {same("id", Text), same("hash", Text), same("name", Text), same("deployment", Text), same("rpm", Integer),
        same("tokens_per_day", Integer), same("created_ms", Integer), same("revoked", Flag), same("requests", Integer),
        same("tokens", Integer), same("day", Integer), same("day_tokens", Integer),
        same("deployment_created_ms", Integer)}},
      {"device_agreement",
       {same("processor_id", Text), same("checks", Integer), same("agreed", Integer), same("lost", Integer),
        same("recent_bits", Integer), same("recent_count", Integer), same("quarantined", Flag), same("reason", Text),
        same("changed_ms", Integer)}},
      {"canaries", {same("deployment", Text), same("cases", Text), same("every", Integer)}},
      // In rowid (seq) order: the events keep the order they were made in.
      {"scaling_events",
       {renumbered("seq"), same("deployment", Text), same("at_ms", Integer), same("action", Text),
        same("from_replicas", Integer), same("to_replicas", Integer), same("reason", Text)}},
      {"attestation_pins",
       {same("processor_id", Text), same("key_sha256", Text), same("key_spki", Text), same("challenge", Text),
        same("verified_boot_key", Text), same("boot_state", Text), same("app_packages", Text),
        same("app_digests", Text), same("evidence", Text), same("pinned_ms", Integer), same("held", Text),
        same("change_approved", Flag), same("ecdh", Flag)}},
  };
  return tables;
}

// batch.db's tables (sqlite_batch_store.cpp; pg_batch_schema.cpp).
const std::vector<TableCopy>& batch_tables() {
  using enum Kind;
  static const std::vector<TableCopy> tables = {
      {"files",
       {same("id", Text), same("deployment", Text), same("filename", Text), same("purpose", Text),
        same("bytes", Integer), same("created_ms", Integer), same("deployment_created_ms", Integer),
        same("owner_key", Text), same("expires_ms", Integer)}},
      {"batches",
       {same("id", Text),
        same("deployment", Text),
        same("endpoint", Text),
        same("input_file_id", Text),
        same("key_id", Text),
        same("completion_window", Text),
        same("metadata", Text),
        same("status", Text),
        same("errors", Text),
        same("output_file_id", Text),
        same("error_file_id", Text),
        same("created_ms", Integer),
        same("in_progress_ms", Integer),
        same("expires_ms", Integer),
        same("finalizing_ms", Integer),
        same("completed_ms", Integer),
        same("failed_ms", Integer),
        same("expired_ms", Integer),
        same("cancelling_ms", Integer),
        same("cancelled_ms", Integer),
        same("total", Integer),
        same("completed", Integer),
        same("failed", Integer),
        same("deployment_created_ms", Integer),
        same("output_expires_after_s", Integer),
        later("finalizer", Text),
        later("finalize_until_ms", Integer)}},
      {"batch_lines",
       {same("batch_id", Text),
        same("line", Integer),
        same("custom_id", Text),
        {"offset", "byte_offset", Integer},
        {"length", "byte_length", Integer},
        same("state", Text),
        same("attempts", Integer),
        same("result", Text),
        same("device", Text),
        same("ended_ms", Integer),
        later("holder", Text),
        later("lease_until_ms", Integer)}},
  };
  return tables;
}

// A source file's tables and the connection to it, open in a transaction for a consistent read.
struct Source {
  std::string path;
  const std::vector<TableCopy>* tables;
  std::unique_ptr<SqliteDb> db;
};

bool covers(const TableCopy& t, const std::string& column, bool source) {
  return std::any_of(t.columns.begin(), t.columns.end(),
                     [&](const Column& c) { return column == (source ? c.source : c.target); });
}

// The columns copied from `s`: every column of the SQLite table must be one this copy carries
// (none is dropped on the way); an optional one is copied when the file has it.
Result<TableCopy> source_columns(const Source& s, const TableCopy& t) {
  CS_ASSIGN_OR_RETURN(SqliteStmt info, s.db->prepare(std::string("PRAGMA table_info(") + t.table + ")"));
  CS_ASSIGN_OR_RETURN(const std::vector<std::string> names,
                      read_rows<std::string>(info, [](const SqliteStmt& r) { return r.text(1); }));
  if (names.empty()) return Status::data_loss(s.path + ": has no table " + t.table);
  for (const std::string& name : names) {
    if (!covers(t, name, true)) {
      return Status::internal(s.path + ": column " + t.table + "." + name + " is not copied by this build");
    }
  }
  TableCopy present{t.table, {}};
  for (const Column& c : t.columns) {
    if (c.renumbered) continue;
    if (!c.optional || std::find(names.begin(), names.end(), c.source) != names.end()) present.columns.push_back(c);
  }
  return present;
}

// Every column of the PostgreSQL table is filled: by the copy, or by its default (identity
// columns, and those a later schema added with a default).
Status check_target_columns(PgConnection& pg, const TableCopy& t) {
  CS_ASSIGN_OR_RETURN(const PgResult r, pg.exec("SELECT column_name, column_default IS NOT NULL OR is_identity = "
                                                "'YES' FROM information_schema.columns WHERE "
                                                "table_schema = current_schema() AND table_name = $1",
                                                PgParams().add(t.table)));
  if (r.rows() == 0) return Status::internal(std::string("the target store has no table ") + t.table);
  for (int i = 0; i < r.rows(); ++i) {
    if (!r.row(i).flag(1) && !covers(t, r.row(i).text(0), false)) {
      return Status::internal("the target's column " + std::string(t.table) + "." + r.row(i).text(0) +
                              " is not filled by this build");
    }
  }
  return {};
}

// Rows sent per INSERT: few statements, well under PostgreSQL's 65535 parameters.
size_t rows_per_insert(const TableCopy& t) {
  return std::max<size_t>(1, std::min<size_t>(500, 20000 / t.columns.size()));
}

std::string insert_sql(const TableCopy& t, size_t rows) {
  std::string sql = std::string("INSERT INTO ") + t.table + " (";
  for (size_t c = 0; c < t.columns.size(); ++c) sql += std::string(c ? ", " : "") + t.columns[c].target;
  sql += ") VALUES ";
  int n = 0;
  for (size_t r = 0; r < rows; ++r) {
    sql += r ? ", (" : "(";
    for (size_t c = 0; c < t.columns.size(); ++c) sql += (c ? ", $" : "$") + std::to_string(++n);
    sql += ")";
  }
  return sql;
}

// Appends row `s`'s values to `params`. PostgreSQL text holds no NUL byte (libpq would cut the
// value there): such a value stops the migration rather than arrive shortened.
Status add_row(const SqliteStmt& s, const Source& source, const TableCopy& t, PgParams& params) {
  for (size_t c = 0; c < t.columns.size(); ++c) {
    const int col = static_cast<int>(c);
    switch (t.columns[c].kind) {
      case Kind::Text: {
        const std::string v = s.text(col);
        if (v.find('\0') != std::string::npos) {
          return Status::invalid_argument(source.path + ": a value of " + t.table + "." + t.columns[c].source +
                                          " holds a NUL byte, which PostgreSQL text cannot");
        }
        params.add(v);
        break;
      }
      case Kind::Integer:
        params.add(s.i64(col));
        break;
      case Kind::Real:
        params.add(s.f64(col));
        break;
      case Kind::Flag:
        params.add(s.i64(col) != 0);
        break;
    }
  }
  return {};
}

Result<int64_t> copy_table(const Source& source, PgConnection& pg, const TableCopy& t) {
  std::string select = "SELECT ";
  for (size_t c = 0; c < t.columns.size(); ++c) select += std::string(c ? ", " : "") + '"' + t.columns[c].source + '"';
  select += std::string(" FROM ") + t.table + " ORDER BY rowid";
  CS_ASSIGN_OR_RETURN(SqliteStmt rows, source.db->prepare(select));
  const size_t chunk = rows_per_insert(t);
  const std::string full_insert = insert_sql(t, chunk);
  int64_t copied = 0;
  size_t pending = 0;
  PgParams params;
  auto flush = [&]() -> Status {
    if (pending == 0) return {};
    CS_RETURN_IF_ERROR(pg.exec(pending == chunk ? full_insert : insert_sql(t, pending), params).status());
    copied += static_cast<int64_t>(pending);
    pending = 0;
    params = PgParams();
    return {};
  };
  for (;;) {
    CS_ASSIGN_OR_RETURN(const bool row, rows.step());
    if (!row) break;
    CS_RETURN_IF_ERROR(add_row(rows, source, t, params));
    if (++pending == chunk) CS_RETURN_IF_ERROR(flush());
  }
  CS_RETURN_IF_ERROR(flush());
  return copied;
}

// Whether the target keeps batch file contents in the database (the batch schema's
// batch_file_chunks, fleet/batch/pg_batch_file_store.cpp); otherwise they stay in each hub's folder.
Result<bool> has_file_chunks(PgConnection& pg) {
  CS_ASSIGN_OR_RETURN(const PgResult r, pg.exec("SELECT to_regclass('batch_file_chunks') IS NOT NULL"));
  return r.row(0).flag(0);
}

// pg_batch_file_store.cpp's rows: chunks of at most this many bytes, seq from 0; an empty file is
// one empty chunk.
constexpr size_t kFileChunkBytes = 1 << 20;

std::string hex(std::string_view bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (const unsigned char c : bytes) {
    out.push_back(kDigits[c >> 4]);
    out.push_back(kDigits[c & 15]);
  }
  return out;
}

// One file's bytes from `path` into batch_file_chunks, a chunk at a time (never whole in memory).
Status copy_file_content(const std::string& id, const std::string& path, PgConnection& pg) {
  std::ifstream in(path, std::ios::binary);
  std::string chunk(kFileChunkBytes, '\0');
  for (int seq = 0;; ++seq) {
    in.read(chunk.data(), static_cast<std::streamsize>(chunk.size()));
    const auto got = static_cast<size_t>(in.gcount());
    if (in.bad()) return Status::internal(path + ": cannot read");
    if (got == 0 && seq > 0) return {};
    CS_RETURN_IF_ERROR(pg.exec("INSERT INTO batch_file_chunks (file_id, seq, data) VALUES ($1, $2, decode($3, 'hex'))",
                               PgParams().add(id).add(seq).add(hex(std::string_view(chunk.data(), got))))
                           .status());
    if (got < chunk.size()) return {};
  }
}

// The contents of every file of the batch store, from `dir` (DATA_DIR/batch/files/<id>): the
// files copied, and those whose content was not there (an id that is not a plain name counts so).
Result<std::vector<MigratedTable>> copy_file_contents(const Source& batch, const std::string& dir, PgConnection& pg) {
  CS_ASSIGN_OR_RETURN(SqliteStmt ids, batch.db->prepare("SELECT id FROM files ORDER BY rowid"));
  CS_ASSIGN_OR_RETURN(const std::vector<std::string> files,
                      read_rows<std::string>(ids, [](const SqliteStmt& r) { return r.text(0); }));
  int64_t copied = 0;
  int64_t missing = 0;
  for (const std::string& id : files) {
    const bool plain = !id.empty() && id.size() <= 64 &&
                       id.find_first_not_of(
                           "abcdefghijklmnopqrstuvwxyz"
                           "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
                           "0123456789-_") == std::string::npos;
    const std::string path = (std::filesystem::path(dir) / id).string();
    std::error_code ec;
    if (!plain || !std::filesystem::is_regular_file(path, ec)) {
      ++missing;
      continue;
    }
    CS_RETURN_IF_ERROR(copy_file_content(id, path, pg));
    ++copied;
  }
  return std::vector<MigratedTable>{{"file contents", copied}, {"files without content", missing}};
}

// "the target store is not empty: ..." naming each table of `sources` that holds a row.
Status check_target_empty(PgConnection& pg, const std::vector<Source>& sources) {
  std::string full;
  for (const Source& s : sources) {
    for (const TableCopy& t : *s.tables) {
      CS_ASSIGN_OR_RETURN(const PgResult r, pg.exec(std::string("SELECT EXISTS (SELECT 1 FROM ") + t.table + ")"));
      if (r.row(0).flag(0)) full += std::string(full.empty() ? "" : ", ") + t.table;
    }
  }
  CS_ASSIGN_OR_RETURN(const bool chunks, has_file_chunks(pg));
  if (chunks) {
    CS_ASSIGN_OR_RETURN(const PgResult r, pg.exec("SELECT EXISTS (SELECT 1 FROM batch_file_chunks)"));
    if (r.row(0).flag(0)) full += std::string(full.empty() ? "" : ", ") + "batch_file_chunks";
  }
  if (full.empty()) return {};
  return Status::invalid_argument("the target store is not empty: " + full +
                                  " already hold rows (migrate into a new database)");
}

// Brings `path` to this build's schema (as the hub would at start) and opens it for reading.
Result<Source> open_source(const std::string& path, const std::vector<TableCopy>& tables, bool batch) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) return Status::not_found(path + ": no such file");
  if (batch) {
    CS_RETURN_IF_ERROR(open_sqlite_batch_store(path).status());
  } else {
    CS_RETURN_IF_ERROR(open_sqlite_store(path).status());
  }
  CS_ASSIGN_OR_RETURN(std::unique_ptr<SqliteDb> db, SqliteDb::open(path));
  return Source{path, &tables, std::move(db)};
}

Result<std::vector<MigratedTable>> copy_all(std::vector<Source>& sources, const std::string& files_dir,
                                            PgConnection& pg) {
  std::vector<std::unique_ptr<SqliteTransaction>> reads;
  for (Source& s : sources) {
    reads.push_back(std::make_unique<SqliteTransaction>(*s.db));
    CS_RETURN_IF_ERROR(reads.back()->begin());  // a consistent view; a hub still writing waits
  }
  PgTransaction tx(pg);
  CS_RETURN_IF_ERROR(tx.begin());
  // Hubs starting against the target wait until the copy is committed or rolled back.
  CS_RETURN_IF_ERROR(pg.exec("SELECT pg_advisory_xact_lock($1)", PgParams().add(kPgMigrationLockKey)).status());
  CS_RETURN_IF_ERROR(check_target_empty(pg, sources));
  std::vector<MigratedTable> counts;
  for (const Source& s : sources) {
    for (const TableCopy& t : *s.tables) {
      CS_ASSIGN_OR_RETURN(const TableCopy present, source_columns(s, t));
      CS_RETURN_IF_ERROR(check_target_columns(pg, present));
      CS_ASSIGN_OR_RETURN(const int64_t rows, copy_table(s, pg, present));
      counts.push_back({t.table, rows});
    }
  }
  CS_ASSIGN_OR_RETURN(const bool chunks, has_file_chunks(pg));
  if (sources.size() > 1 && chunks) {
    CS_ASSIGN_OR_RETURN(const std::vector<MigratedTable> contents, copy_file_contents(sources[1], files_dir, pg));
    counts.insert(counts.end(), contents.begin(), contents.end());
  }
  CS_RETURN_IF_ERROR(tx.commit());
  return counts;
}

}  // namespace

Result<std::vector<MigratedTable>> migrate_store(const StoreMigration& migration) {
  if (!is_postgres_url(migration.to)) {
    return Status::invalid_argument("--to must be a PostgreSQL URL (postgresql://...), not " +
                                    store_display_name(migration.to));
  }
  std::vector<Source> sources;
  CS_ASSIGN_OR_RETURN(Source hub, open_source(migration.from, hub_tables(), false));
  sources.push_back(std::move(hub));
  if (!migration.batch_from.empty()) {
    CS_ASSIGN_OR_RETURN(Source batch, open_source(migration.batch_from, batch_tables(), true));
    sources.push_back(std::move(batch));
  }
  // The target's schema, made as a hub makes it (each under the migration lock, committed).
  CS_RETURN_IF_ERROR(open_postgres_store(migration.to).status());
  if (!migration.batch_from.empty()) CS_RETURN_IF_ERROR(open_postgres_batch_store(migration.to).status());
  CS_ASSIGN_OR_RETURN(std::unique_ptr<PgConnection> pg, PgConnection::open(migration.to));
  std::string files_dir = migration.batch_files_dir;
  if (files_dir.empty() && !migration.batch_from.empty()) {
    files_dir = (std::filesystem::path(migration.batch_from).parent_path() / "batch" / "files").string();
  }
  return copy_all(sources, files_dir, *pg);
}

#else

Result<std::vector<MigratedTable>> migrate_store(const StoreMigration&) {
  return Status::invalid_argument("this build has no PostgreSQL support (configure with -DCELLSERVE_POSTGRES=ON)");
}

#endif

}  // namespace cellserve::fleet
