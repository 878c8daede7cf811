#include "fleet/batch/sqlite_batch_store.h"

#include <mutex>

#include "fleet/batch/batch_rows.h"
#include "fleet/store/sqlite_db.h"

namespace cellserve::fleet {
namespace {

constexpr const char* kMigrations[] = {
    R"sql(
CREATE TABLE files (
  id TEXT PRIMARY KEY NOT NULL,
  deployment TEXT NOT NULL,
  filename TEXT NOT NULL,
  purpose TEXT NOT NULL,
  bytes INTEGER NOT NULL,
  created_ms INTEGER NOT NULL
);
CREATE INDEX files_by_deployment ON files(deployment, created_ms);
CREATE TABLE batches (
  id TEXT PRIMARY KEY NOT NULL,
  deployment TEXT NOT NULL,
  endpoint TEXT NOT NULL,
  input_file_id TEXT NOT NULL,
  key_id TEXT NOT NULL,
  completion_window TEXT NOT NULL,
  metadata TEXT NOT NULL,
  status TEXT NOT NULL,
  errors TEXT NOT NULL,
  output_file_id TEXT NOT NULL,
  error_file_id TEXT NOT NULL,
  created_ms INTEGER NOT NULL,
  in_progress_ms INTEGER NOT NULL,
  expires_ms INTEGER NOT NULL,
  finalizing_ms INTEGER NOT NULL,
  completed_ms INTEGER NOT NULL,
  failed_ms INTEGER NOT NULL,
  expired_ms INTEGER NOT NULL,
  cancelling_ms INTEGER NOT NULL,
  cancelled_ms INTEGER NOT NULL,
  total INTEGER NOT NULL,
  completed INTEGER NOT NULL,
  failed INTEGER NOT NULL
);
CREATE INDEX batches_by_deployment ON batches(deployment, created_ms);
CREATE TABLE batch_lines (
  batch_id TEXT NOT NULL REFERENCES batches(id) ON DELETE CASCADE,
  line INTEGER NOT NULL,
  custom_id TEXT NOT NULL,
  offset INTEGER NOT NULL,
  length INTEGER NOT NULL,
  state TEXT NOT NULL,
  attempts INTEGER NOT NULL,
  result TEXT NOT NULL,
  device TEXT NOT NULL DEFAULT '',
  ended_ms INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (batch_id, line)
);
CREATE INDEX batch_lines_by_state ON batch_lines(batch_id, state, line);
PRAGMA user_version = 1;
)sql",
    // 2: the runner looks batches up by status every round.
    R"sql(
CREATE INDEX batches_by_status ON batches(status);
PRAGMA user_version = 2;
)sql",
    // 3: files and batches are bound to their deployment's identity (name and created_ms) and
    // owned by the API key that made them; output files expire (output_expires_after).
    R"sql(
ALTER TABLE files ADD COLUMN deployment_created_ms INTEGER NOT NULL DEFAULT 0;
ALTER TABLE files ADD COLUMN owner_key TEXT NOT NULL DEFAULT '';
ALTER TABLE files ADD COLUMN expires_ms INTEGER NOT NULL DEFAULT 0;
CREATE INDEX files_by_expiry ON files(expires_ms) WHERE expires_ms > 0;
ALTER TABLE batches ADD COLUMN deployment_created_ms INTEGER NOT NULL DEFAULT 0;
ALTER TABLE batches ADD COLUMN output_expires_after_s INTEGER NOT NULL DEFAULT 0;
PRAGMA user_version = 3;
)sql",
    // 4: a line's lease names its holder and expires; a batch's finalization is claimed the same
    // way (batch_store.h: LeaseTerms), as on PostgreSQL where several hubs share the store.
    R"sql(
ALTER TABLE batch_lines ADD COLUMN holder TEXT NOT NULL DEFAULT '';
ALTER TABLE batch_lines ADD COLUMN lease_until_ms INTEGER NOT NULL DEFAULT 0;
ALTER TABLE batches ADD COLUMN finalizer TEXT NOT NULL DEFAULT '';
ALTER TABLE batches ADD COLUMN finalize_until_ms INTEGER NOT NULL DEFAULT 0;
PRAGMA user_version = 4;
)sql",
};

std::string select(const char* columns, const char* rest) { return std::string("SELECT ") + columns + " " + rest; }

// One page of `table`'s records in `scope` (its `owner` column names the key), newest first,
// after the record `after_id` ("" : from the newest).
template <typename T, typename Read>
Result<std::vector<T>> scoped_page(SqliteDb& db, const char* columns, const std::string& table,
                                   const std::string& owner, const BatchStore::Scope& scope,
                                   const std::string& after_id, int limit, const Read& read) {
  const std::string rest = "FROM " + table + " WHERE deployment = ?1 AND deployment_created_ms = ?4 AND (?5 = '' OR " +
                           owner + " = ?5) AND (?2 = '' OR (created_ms, id) < (SELECT created_ms, id FROM " + table +
                           " WHERE id = ?2)) ORDER BY created_ms DESC, id DESC LIMIT ?3";
  CS_ASSIGN_OR_RETURN(SqliteStmt s, db.prepare(select(columns, rest.c_str())));
  s.bind(1, scope.deployment).bind(2, after_id).bind(3, limit).bind(4, scope.deployment_created_ms);
  s.bind(5, scope.owner);
  return read_rows<T>(s, read);
}

// The batch store on its own SQLite database (WAL, synchronous=NORMAL: see
// open_sqlite_batch_store). One connection, serialised by a mutex.
class SqliteBatchStore final : public BatchStore {
 public:
  explicit SqliteBatchStore(std::unique_ptr<SqliteDb> db) : db_(std::move(db)) {}

  Status migrate();

  Status add_file(const BatchFile& f) override;
  Result<std::optional<BatchFile>> file(const std::string& id) override;
  Result<std::vector<BatchFile>> files(const Scope& scope, const std::string& after_id, int limit) override;
  Status delete_file(const std::string& id) override;
  Result<std::vector<std::string>> expired_files(int64_t now_ms, int limit) override;
  Result<std::vector<std::string>> delete_deployment(const std::string& name) override;
  Status bind_unbound(const std::string& name, int64_t created_ms) override;
  Status create_batch(const Batch& b, const std::vector<BatchLine>& lines) override;
  Result<bool> start_batch(const Batch& b, const std::vector<BatchLine>& lines) override;
  Result<std::optional<Batch>> batch(const std::string& id) override;
  Result<std::vector<Batch>> batches(const Scope& scope, const std::string& after_id, int limit) override;
  Result<std::vector<Batch>> batches_in(const std::vector<BatchStatus>& statuses) override;
  Status update_batch(const Batch& b) override;
  Result<std::vector<BatchLine>> lease_lines(const std::string& batch_id, int n, const LeaseTerms& lease) override;
  Result<int> renew_leases(const LeaseTerms& lease) override;
  Result<bool> end_line(const BatchLine& l, const LeaseTerms& lease, LineState state, const std::string& result,
                        const std::string& device) override;
  Result<Throughput> throughput(const std::string& batch_id) override;
  Status release_line(const BatchLine& l, const std::string& holder) override;
  Status return_line(const BatchLine& l, const std::string& holder) override;
  Result<int> release_leases(const std::string& holder) override;
  Result<int> release_all_leases() override;
  Result<bool> claim_finalization(const std::string& batch_id, const LeaseTerms& lease) override;
  Result<bool> finish_batch(const Batch& b, const std::string& holder) override;
  Result<bool> cancel_batch(const std::string& batch_id, int64_t now_ms) override;
  Result<int> fail_pending(const std::string& batch_id, const std::string& code, const std::string& message,
                           int64_t now_ms) override;
  Result<int> count_lines(const std::string& batch_id, LineState state) override;
  Result<int> for_each_result(const std::string& batch_id, LineState state,
                              const std::function<Status(std::string_view result)>& each) override;

 private:
  // REQUIRES mu_ held. Runs `sql` with its ?1.. bound to `bind`; returns the rows it changed.
  template <typename Bind>
  Result<int> changed(const char* sql, const Bind& bind) {
    CS_ASSIGN_OR_RETURN(SqliteStmt s, db_->prepare(sql));
    bind(s);
    CS_RETURN_IF_ERROR(s.run());
    return static_cast<int>(db_->changes());
  }

  std::mutex mu_;
  std::unique_ptr<SqliteDb> db_;
};

}  // namespace

Result<std::unique_ptr<BatchStore>> open_sqlite_batch_store(const std::string& path) {
  CS_ASSIGN_OR_RETURN(std::unique_ptr<SqliteDb> db, SqliteDb::open(path));
  CS_RETURN_IF_ERROR(db->exec("PRAGMA busy_timeout = 5000"));
  CS_RETURN_IF_ERROR(db->exec("PRAGMA journal_mode = WAL"));
  // WAL with NORMAL: a commit survives the hub's crash (SIGKILL) at once; a power cut may lose
  // the last commits, never the database. A line whose recorded answer was lost that way is
  // pending again and runs once more: never lost, never twice in the output, which is written
  // from these records. FULL would sync every line's commit and cap a large fleet's throughput.
  CS_RETURN_IF_ERROR(db->exec("PRAGMA synchronous = NORMAL"));
  CS_RETURN_IF_ERROR(db->exec("PRAGMA foreign_keys = ON"));
  CS_RETURN_IF_ERROR(db->exec("PRAGMA secure_delete = ON"));
  auto store = std::make_unique<SqliteBatchStore>(std::move(db));
  CS_RETURN_IF_ERROR(store->migrate());
  return std::unique_ptr<BatchStore>(std::move(store));
}

Status SqliteBatchStore::migrate() {
  std::lock_guard lock(mu_);
  return migrate_schema(*db_, kMigrations, "batch.db");
}

Status SqliteBatchStore::add_file(const BatchFile& f) {
  std::lock_guard lock(mu_);
  CS_ASSIGN_OR_RETURN(SqliteStmt s, db_->prepare(std::string("INSERT INTO files (") + kBatchFileColumns +
                                                 ") VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)"));
  s.bind(1, f.id).bind(2, f.deployment).bind(3, f.filename).bind(4, f.purpose).bind(5, f.bytes).bind(6, f.created_ms);
  s.bind(7, f.deployment_created_ms).bind(8, f.owner_key).bind(9, f.expires_ms);
  return s.run();
}

Result<std::optional<BatchFile>> SqliteBatchStore::file(const std::string& id) {
  std::lock_guard lock(mu_);
  CS_ASSIGN_OR_RETURN(SqliteStmt s, db_->prepare(select(kBatchFileColumns, "FROM files WHERE id = ?1")));
  s.bind(1, id);
  CS_ASSIGN_OR_RETURN(bool row, s.step());
  if (!row) return std::optional<BatchFile>();
  return std::optional<BatchFile>(read_batch_file(s));
}

Result<std::vector<BatchFile>> SqliteBatchStore::files(const Scope& scope, const std::string& after_id, int limit) {
  std::lock_guard lock(mu_);
  return scoped_page<BatchFile>(*db_, kBatchFileColumns, "files", "owner_key", scope, after_id, limit,
                                [](const SqliteStmt& s) -> Result<BatchFile> { return read_batch_file(s); });
}

Status SqliteBatchStore::delete_file(const std::string& id) {
  std::lock_guard lock(mu_);
  CS_ASSIGN_OR_RETURN(SqliteStmt s, db_->prepare("DELETE FROM files WHERE id = ?1"));
  s.bind(1, id);
  CS_RETURN_IF_ERROR(s.run());
  if (db_->changes() == 0) return Status::not_found("no file " + id);
  return {};
}

Result<std::vector<std::string>> SqliteBatchStore::expired_files(int64_t now_ms, int limit) {
  std::lock_guard lock(mu_);
  CS_ASSIGN_OR_RETURN(SqliteStmt s, db_->prepare("SELECT id FROM files WHERE expires_ms > 0 AND expires_ms <= ?1 "
                                                 "ORDER BY expires_ms LIMIT ?2"));
  s.bind(1, now_ms).bind(2, limit);
  std::vector<std::string> out;
  while (true) {
    CS_ASSIGN_OR_RETURN(bool row, s.step());
    if (!row) break;
    out.push_back(s.text(0));
  }
  return out;
}

Result<std::vector<std::string>> SqliteBatchStore::delete_deployment(const std::string& name) {
  std::lock_guard lock(mu_);
  SqliteTransaction tx(*db_);
  CS_RETURN_IF_ERROR(tx.begin());
  std::vector<std::string> ids;
  {
    CS_ASSIGN_OR_RETURN(SqliteStmt s, db_->prepare("SELECT id FROM files WHERE deployment = ?1"));
    s.bind(1, name);
    while (true) {
      CS_ASSIGN_OR_RETURN(bool row, s.step());
      if (!row) break;
      ids.push_back(s.text(0));
    }
  }
  for (const char* sql : {"DELETE FROM files WHERE deployment = ?1", "DELETE FROM batches WHERE deployment = ?1"}) {
    CS_ASSIGN_OR_RETURN(SqliteStmt s, db_->prepare(sql));  // a batch's lines go with it (ON DELETE CASCADE)
    s.bind(1, name);
    CS_RETURN_IF_ERROR(s.run());
  }
  CS_RETURN_IF_ERROR(tx.commit());
  return ids;
}

Status SqliteBatchStore::bind_unbound(const std::string& name, int64_t created_ms) {
  std::lock_guard lock(mu_);
  for (const char* sql : {"UPDATE files SET deployment_created_ms = ?2 WHERE deployment = ?1 AND "
                          "deployment_created_ms = 0",
                          "UPDATE batches SET deployment_created_ms = ?2 WHERE deployment = ?1 AND "
                          "deployment_created_ms = 0"}) {
    CS_ASSIGN_OR_RETURN(SqliteStmt s, db_->prepare(sql));
    s.bind(1, name).bind(2, created_ms);
    CS_RETURN_IF_ERROR(s.run());
  }
  return {};
}

Status SqliteBatchStore::create_batch(const Batch& b, const std::vector<BatchLine>& lines) {
  std::lock_guard lock(mu_);
  SqliteTransaction tx(*db_);
  CS_RETURN_IF_ERROR(tx.begin());
  {
    CS_ASSIGN_OR_RETURN(SqliteStmt s, db_->prepare(std::string("INSERT INTO batches (") + kBatchColumns +
                                                   ") VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, "
                                                   "?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21, ?22, ?23, ?24, ?25)"));
    s.bind(1, b.id).bind(2, b.deployment).bind(3, b.endpoint).bind(4, b.input_file_id).bind(5, b.completion_window);
    s.bind(6, b.metadata_json).bind(7, batch_status_name(b.status)).bind(8, errors_json(b.errors));
    s.bind(9, b.output_file_id).bind(10, b.error_file_id).bind(11, b.created_ms).bind(12, b.in_progress_ms);
    s.bind(13, b.expires_ms).bind(14, b.finalizing_ms).bind(15, b.completed_ms).bind(16, b.failed_ms);
    s.bind(17, b.expired_ms).bind(18, b.cancelling_ms).bind(19, b.cancelled_ms).bind(20, b.total);
    s.bind(21, b.completed).bind(22, b.failed).bind(23, b.key_id).bind(24, b.deployment_created_ms);
    s.bind(25, b.output_expires_after_s);
    CS_RETURN_IF_ERROR(s.run());
  }
  for (const BatchLine& l : lines) {
    CS_ASSIGN_OR_RETURN(SqliteStmt s, db_->prepare("INSERT INTO batch_lines (batch_id, line, custom_id, offset, "
                                                   "length, state, attempts, result) VALUES (?1, ?2, ?3, ?4, ?5, "
                                                   "?6, 0, '')"));
    s.bind(1, b.id).bind(2, l.line).bind(3, l.custom_id).bind(4, l.offset).bind(5, static_cast<int64_t>(l.length));
    s.bind(6, line_state_name(l.state));
    CS_RETURN_IF_ERROR(s.run());
  }
  return tx.commit();
}

Result<bool> SqliteBatchStore::start_batch(const Batch& b, const std::vector<BatchLine>& lines) {
  std::lock_guard lock(mu_);
  SqliteTransaction tx(*db_);
  CS_RETURN_IF_ERROR(tx.begin());
  {
    CS_ASSIGN_OR_RETURN(SqliteStmt s, db_->prepare("UPDATE batches SET status = 'in_progress', in_progress_ms = ?2, "
                                                   "total = ?3 WHERE id = ?1 AND status = 'validating'"));
    s.bind(1, b.id).bind(2, b.in_progress_ms).bind(3, static_cast<int64_t>(lines.size()));
    CS_RETURN_IF_ERROR(s.run());
    if (db_->changes() == 0) return false;
  }
  for (const BatchLine& l : lines) {
    CS_ASSIGN_OR_RETURN(SqliteStmt s, db_->prepare("INSERT INTO batch_lines (batch_id, line, custom_id, offset, "
                                                   "length, state, attempts, result) VALUES (?1, ?2, ?3, ?4, ?5, "
                                                   "'pending', 0, '')"));
    s.bind(1, b.id).bind(2, l.line).bind(3, l.custom_id).bind(4, l.offset).bind(5, static_cast<int64_t>(l.length));
    CS_RETURN_IF_ERROR(s.run());
  }
  CS_RETURN_IF_ERROR(tx.commit());
  return true;
}

Result<std::optional<Batch>> SqliteBatchStore::batch(const std::string& id) {
  std::lock_guard lock(mu_);
  CS_ASSIGN_OR_RETURN(SqliteStmt s, db_->prepare(select(kBatchColumns, "FROM batches WHERE id = ?1")));
  s.bind(1, id);
  CS_ASSIGN_OR_RETURN(bool row, s.step());
  if (!row) return std::optional<Batch>();
  CS_ASSIGN_OR_RETURN(Batch b, read_batch(s));
  return std::optional<Batch>(std::move(b));
}

Result<std::vector<Batch>> SqliteBatchStore::batches(const Scope& scope, const std::string& after_id, int limit) {
  std::lock_guard lock(mu_);
  return scoped_page<Batch>(*db_, kBatchColumns, "batches", "key_id", scope, after_id, limit,
                            [](const SqliteStmt& s) { return read_batch(s); });
}

Result<std::vector<Batch>> SqliteBatchStore::batches_in(const std::vector<BatchStatus>& statuses) {
  std::vector<Batch> out;
  if (statuses.empty()) return out;
  // One bound parameter (?N) per status: the runner asks every round, so the database filters.
  std::string in;
  for (size_t i = 0; i < statuses.size(); ++i) in += (i == 0 ? "?" : ", ?") + std::to_string(i + 1);
  const std::string where = "FROM batches WHERE status IN (" + in + ") ORDER BY created_ms, id";
  std::lock_guard lock(mu_);
  CS_ASSIGN_OR_RETURN(SqliteStmt s, db_->prepare(select(kBatchColumns, where.c_str())));
  for (size_t i = 0; i < statuses.size(); ++i) s.bind(static_cast<int>(i + 1), batch_status_name(statuses[i]));
  while (true) {
    CS_ASSIGN_OR_RETURN(bool row, s.step());
    if (!row) break;
    CS_ASSIGN_OR_RETURN(Batch b, read_batch(s));
    out.push_back(std::move(b));
  }
  return out;
}

Status SqliteBatchStore::update_batch(const Batch& b) {
  std::lock_guard lock(mu_);
  CS_ASSIGN_OR_RETURN(SqliteStmt s,
                      db_->prepare("UPDATE batches SET status = ?2, errors = ?3, output_file_id = ?4, "
                                   "error_file_id = ?5, in_progress_ms = ?6, expires_ms = ?7, finalizing_ms = ?8, "
                                   "completed_ms = ?9, failed_ms = ?10, expired_ms = ?11, cancelling_ms = ?12, "
                                   "cancelled_ms = ?13, total = ?14 WHERE id = ?1"));
  s.bind(1, b.id).bind(2, batch_status_name(b.status)).bind(3, errors_json(b.errors)).bind(4, b.output_file_id);
  s.bind(5, b.error_file_id).bind(6, b.in_progress_ms).bind(7, b.expires_ms).bind(8, b.finalizing_ms);
  s.bind(9, b.completed_ms).bind(10, b.failed_ms).bind(11, b.expired_ms).bind(12, b.cancelling_ms);
  s.bind(13, b.cancelled_ms).bind(14, b.total);
  CS_RETURN_IF_ERROR(s.run());
  if (db_->changes() == 0) return Status::not_found("no batch " + b.id);
  return {};
}

Result<std::vector<BatchLine>> SqliteBatchStore::lease_lines(const std::string& batch_id, int n,
                                                             const LeaseTerms& lease) {
  std::lock_guard lock(mu_);
  SqliteTransaction tx(*db_);
  CS_RETURN_IF_ERROR(tx.begin());
  std::vector<BatchLine> out;
  {
    CS_ASSIGN_OR_RETURN(SqliteStmt s, db_->prepare("SELECT line, custom_id, offset, length, attempts FROM batch_lines "
                                                   "WHERE batch_id = ?1 AND (state = 'pending' OR (state = 'leased' "
                                                   "AND lease_until_ms <= ?3)) ORDER BY line LIMIT ?2"));
    s.bind(1, batch_id).bind(2, n).bind(3, lease.now_ms);
    while (true) {
      CS_ASSIGN_OR_RETURN(bool row, s.step());
      if (!row) break;
      BatchLine l;
      l.batch_id = batch_id;
      l.line = s.i32(0);
      l.custom_id = s.text(1);
      l.offset = s.u64(2);
      l.length = static_cast<uint32_t>(s.i64(3));
      l.attempts = s.i32(4) + 1;
      l.state = LineState::Leased;
      out.push_back(std::move(l));
    }
  }
  for (const BatchLine& l : out) {
    CS_ASSIGN_OR_RETURN(SqliteStmt u, db_->prepare("UPDATE batch_lines SET state = 'leased', attempts = ?3, holder = "
                                                   "?4, lease_until_ms = ?5 WHERE batch_id = ?1 AND line = ?2"));
    u.bind(1, batch_id).bind(2, l.line).bind(3, l.attempts).bind(4, lease.holder);
    u.bind(5, lease.now_ms + lease.lease_ms);
    CS_RETURN_IF_ERROR(u.run());
  }
  CS_RETURN_IF_ERROR(tx.commit());
  return out;
}

Result<int> SqliteBatchStore::renew_leases(const LeaseTerms& lease) {
  std::lock_guard lock(mu_);
  return changed(
      "UPDATE batch_lines SET lease_until_ms = ?3 WHERE state = 'leased' AND holder = ?1 AND "
      "lease_until_ms > ?2",
      [&](SqliteStmt& s) { s.bind(1, lease.holder).bind(2, lease.now_ms).bind(3, lease.now_ms + lease.lease_ms); });
}

Result<bool> SqliteBatchStore::end_line(const BatchLine& l, const LeaseTerms& lease, LineState state,
                                        const std::string& result, const std::string& device) {
  std::lock_guard lock(mu_);
  SqliteTransaction tx(*db_);
  CS_RETURN_IF_ERROR(tx.begin());
  CS_ASSIGN_OR_RETURN(const int ended,
                      changed("UPDATE batch_lines SET state = ?3, result = ?4, device = ?5, ended_ms = ?6, holder = "
                              "'', lease_until_ms = 0 WHERE batch_id = ?1 AND line = ?2 AND state = 'leased' AND "
                              "holder = ?7 AND attempts = ?8 AND lease_until_ms > ?6",
                              [&](SqliteStmt& s) {
                                s.bind(1, l.batch_id).bind(2, l.line).bind(3, line_state_name(state)).bind(4, result);
                                s.bind(5, device).bind(6, lease.now_ms).bind(7, lease.holder).bind(8, l.attempts);
                              }));
  if (ended == 0) return false;
  CS_RETURN_IF_ERROR(changed(state == LineState::Done ? "UPDATE batches SET completed = completed + 1 WHERE id = ?1"
                                                      : "UPDATE batches SET failed = failed + 1 WHERE id = ?1",
                             [&](SqliteStmt& s) { s.bind(1, l.batch_id); })
                         .status());
  CS_RETURN_IF_ERROR(tx.commit());
  return true;
}

Status SqliteBatchStore::release_line(const BatchLine& l, const std::string& holder) {
  std::lock_guard lock(mu_);
  return changed(
             "UPDATE batch_lines SET state = 'pending', holder = '', lease_until_ms = 0 WHERE batch_id = ?1 AND "
             "line = ?2 AND state = 'leased' AND holder = ?3 AND attempts = ?4",
             [&](SqliteStmt& s) { s.bind(1, l.batch_id).bind(2, l.line).bind(3, holder).bind(4, l.attempts); })
      .status();
}

Status SqliteBatchStore::return_line(const BatchLine& l, const std::string& holder) {
  std::lock_guard lock(mu_);
  return changed(
             "UPDATE batch_lines SET state = 'pending', attempts = max(0, attempts - 1), holder = '', "
             "lease_until_ms = 0 WHERE batch_id = ?1 AND line = ?2 AND state = 'leased' AND holder = ?3 AND "
             "attempts = ?4",
             [&](SqliteStmt& s) { s.bind(1, l.batch_id).bind(2, l.line).bind(3, holder).bind(4, l.attempts); })
      .status();
}

Result<int> SqliteBatchStore::release_leases(const std::string& holder) {
  std::lock_guard lock(mu_);
  return changed(
      "UPDATE batch_lines SET state = 'pending', holder = '', lease_until_ms = 0 WHERE state = 'leased' "
      "AND holder = ?1",
      [&](SqliteStmt& s) { s.bind(1, holder); });
}

Result<int> SqliteBatchStore::release_all_leases() {
  std::lock_guard lock(mu_);
  CS_RETURN_IF_ERROR(
      db_->exec("UPDATE batch_lines SET state = 'pending', holder = '', lease_until_ms = 0 WHERE state = 'leased'"));
  return static_cast<int>(db_->changes());
}

Result<bool> SqliteBatchStore::claim_finalization(const std::string& batch_id, const LeaseTerms& lease) {
  std::lock_guard lock(mu_);
  CS_ASSIGN_OR_RETURN(const int n, changed("UPDATE batches SET finalizer = ?2, finalize_until_ms = ?4 WHERE id = ?1 "
                                           "AND status NOT IN ('failed', 'completed', 'expired', 'cancelled') AND "
                                           "(finalizer = '' OR finalizer = ?2 OR finalize_until_ms <= ?3)",
                                           [&](SqliteStmt& s) {
                                             s.bind(1, batch_id).bind(2, lease.holder).bind(3, lease.now_ms);
                                             s.bind(4, lease.now_ms + lease.lease_ms);
                                           }));
  return n > 0;
}

Result<bool> SqliteBatchStore::finish_batch(const Batch& b, const std::string& holder) {
  std::lock_guard lock(mu_);
  CS_ASSIGN_OR_RETURN(const int n,
                      changed("UPDATE batches SET status = ?2, errors = ?3, output_file_id = ?4, error_file_id = ?5, "
                              "in_progress_ms = ?6, expires_ms = ?7, finalizing_ms = ?8, completed_ms = ?9, "
                              "failed_ms = ?10, expired_ms = ?11, cancelling_ms = ?12, cancelled_ms = ?13, total = "
                              "?14 WHERE id = ?1 AND finalizer = ?15 AND status NOT IN ('failed', 'completed', "
                              "'expired', 'cancelled')",
                              [&](SqliteStmt& s) {
                                s.bind(1, b.id).bind(2, batch_status_name(b.status)).bind(3, errors_json(b.errors));
                                s.bind(4, b.output_file_id).bind(5, b.error_file_id).bind(6, b.in_progress_ms);
                                s.bind(7, b.expires_ms).bind(8, b.finalizing_ms).bind(9, b.completed_ms);
                                s.bind(10, b.failed_ms).bind(11, b.expired_ms).bind(12, b.cancelling_ms);
                                s.bind(13, b.cancelled_ms).bind(14, b.total).bind(15, holder);
                              }));
  return n > 0;
}

Result<bool> SqliteBatchStore::cancel_batch(const std::string& batch_id, int64_t now_ms) {
  std::lock_guard lock(mu_);
  CS_ASSIGN_OR_RETURN(const int n, changed("UPDATE batches SET status = 'cancelling', cancelling_ms = ?2 WHERE id = "
                                           "?1 AND status IN ('validating', 'in_progress')",
                                           [&](SqliteStmt& s) { s.bind(1, batch_id).bind(2, now_ms); }));
  return n > 0;
}

Result<int> SqliteBatchStore::fail_pending(const std::string& batch_id, const std::string& code,
                                           const std::string& message, int64_t now_ms) {
  std::lock_guard lock(mu_);
  SqliteTransaction tx(*db_);
  CS_RETURN_IF_ERROR(tx.begin());
  std::vector<std::pair<int, std::string>> pending;
  {
    CS_ASSIGN_OR_RETURN(SqliteStmt s, db_->prepare("SELECT line, custom_id FROM batch_lines WHERE batch_id = ?1 AND "
                                                   "(state = 'pending' OR (state = 'leased' AND lease_until_ms <= "
                                                   "?2)) ORDER BY line"));
    s.bind(1, batch_id).bind(2, now_ms);
    while (true) {
      CS_ASSIGN_OR_RETURN(bool row, s.step());
      if (!row) break;
      pending.emplace_back(s.i32(0), s.text(1));
    }
  }
  for (const auto& [line, custom_id] : pending) {
    CS_ASSIGN_OR_RETURN(SqliteStmt u, db_->prepare("UPDATE batch_lines SET state = 'failed', result = ?3, holder = '', "
                                                   "lease_until_ms = 0 WHERE batch_id = ?1 AND line = ?2"));
    u.bind(1, batch_id).bind(2, line).bind(3, batch_error_line(custom_id, code, message));
    CS_RETURN_IF_ERROR(u.run());
  }
  {
    CS_ASSIGN_OR_RETURN(SqliteStmt s, db_->prepare("UPDATE batches SET failed = failed + ?2 WHERE id = ?1"));
    s.bind(1, batch_id).bind(2, static_cast<int64_t>(pending.size()));
    CS_RETURN_IF_ERROR(s.run());
  }
  CS_RETURN_IF_ERROR(tx.commit());
  return static_cast<int>(pending.size());
}

Result<BatchStore::Throughput> SqliteBatchStore::throughput(const std::string& batch_id) {
  std::lock_guard lock(mu_);
  Throughput t;
  {
    CS_ASSIGN_OR_RETURN(SqliteStmt s, db_->prepare("SELECT MIN(ended_ms), MAX(ended_ms) FROM batch_lines WHERE "
                                                   "batch_id = ?1 AND state = 'done'"));
    s.bind(1, batch_id);
    CS_ASSIGN_OR_RETURN(bool row, s.step());
    if (row) {
      t.first_ended_ms = s.i64(0);
      t.last_ended_ms = s.i64(1);
    }
  }
  CS_ASSIGN_OR_RETURN(SqliteStmt s, db_->prepare("SELECT device, COUNT(*) AS n FROM batch_lines WHERE batch_id = ?1 "
                                                 "AND state = 'done' GROUP BY device ORDER BY n DESC, device"));
  s.bind(1, batch_id);
  while (true) {
    CS_ASSIGN_OR_RETURN(bool row, s.step());
    if (!row) break;
    t.answered_by_device.emplace_back(s.text(0), s.i32(1));
  }
  return t;
}

Result<int> SqliteBatchStore::count_lines(const std::string& batch_id, LineState state) {
  std::lock_guard lock(mu_);
  CS_ASSIGN_OR_RETURN(SqliteStmt s,
                      db_->prepare("SELECT COUNT(*) FROM batch_lines WHERE batch_id = ?1 AND state = ?2"));
  s.bind(1, batch_id).bind(2, line_state_name(state));
  CS_ASSIGN_OR_RETURN(bool row, s.step());
  return row ? s.i32(0) : 0;
}

Result<int> SqliteBatchStore::for_each_result(const std::string& batch_id, LineState state,
                                              const std::function<Status(std::string_view result)>& each) {
  std::lock_guard lock(mu_);
  CS_ASSIGN_OR_RETURN(SqliteStmt s, db_->prepare("SELECT result FROM batch_lines WHERE batch_id = ?1 AND state = ?2 "
                                                 "ORDER BY line"));
  s.bind(1, batch_id).bind(2, line_state_name(state));
  int n = 0;
  while (true) {
    CS_ASSIGN_OR_RETURN(bool row, s.step());
    if (!row) break;
    CS_RETURN_IF_ERROR(each(s.text(0)));
    ++n;
  }
  return n;
}

}  // namespace cellserve::fleet
