// PgBatchStore: the batch store on one PostgreSQL connection behind one mutex (each hub holds its
// own). The SQL follows sqlite_batch_store.cpp; where SQLite's one writer serializes everything,
// here hubs run at once: a lease takes pending lines with FOR UPDATE SKIP LOCKED (two hubs never
// lease one line), a line ends by a conditional UPDATE (state = 'leased') that only one of two
// racing ends passes, and every counter moves in the transaction that moves its lines.
#include "fleet/batch/pg_batch_store.h"

#include <algorithm>
#include <mutex>

#include "fleet/batch/batch_rows.h"
#include "fleet/batch/pg_batch_schema.h"
#include "fleet/store/pg_connection.h"
#include "fleet/store/pg_schema.h"

namespace cellserve::fleet {
namespace {

// Results read per round trip by for_each_result: a batch's answers need not fit in memory.
constexpr int kResultPage = 500;
// Lines per INSERT when a batch starts: 4 parameters each, far below PostgreSQL's 65,535.
constexpr size_t kLineGroup = 1000;

std::string select_from(const char* columns, const std::string& rest) {
  return std::string("SELECT ") + columns + " " + rest;
}

class PgBatchStore final : public BatchStore {
 public:
  explicit PgBatchStore(std::unique_ptr<PgConnection> conn) : conn_(std::move(conn)) {}

  Status migrate() {
    std::lock_guard lock(mu_);
    return migrate_pg_schema(*conn_, pg_batch_schema_migrations(), kPgBatchSchemaTable);
  }

  Status add_file(const BatchFile& f) override {
    std::lock_guard lock(mu_);
    PgParams v;
    v.add(f.id).add(f.deployment).add(f.filename).add(f.purpose).add(f.bytes).add(f.created_ms);
    v.add(f.deployment_created_ms).add(f.owner_key).add(f.expires_ms);
    return conn_
        ->exec(std::string("INSERT INTO files (") + kBatchFileColumns + ") VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
               v)
        .status();
  }

  Result<std::optional<BatchFile>> file(const std::string& id) override {
    std::lock_guard lock(mu_);
    CS_ASSIGN_OR_RETURN(const PgResult r,
                        conn_->exec(select_from(kBatchFileColumns, "FROM files WHERE id = $1"), PgParams().add(id)));
    if (r.rows() == 0) return std::optional<BatchFile>();
    return std::optional<BatchFile>(read_batch_file(r.row(0)));
  }

  Result<std::vector<BatchFile>> files(const Scope& scope, const std::string& after_id, int limit) override {
    std::lock_guard lock(mu_);
    CS_ASSIGN_OR_RETURN(const PgResult r, page(kBatchFileColumns, "files", "owner_key", scope, after_id, limit));
    return read_pg_rows<BatchFile>(r, [](const PgRow& row) { return read_batch_file(row); });
  }

  Status delete_file(const std::string& id) override {
    std::lock_guard lock(mu_);
    CS_ASSIGN_OR_RETURN(const PgResult r, conn_->exec("DELETE FROM files WHERE id = $1", PgParams().add(id)));
    if (r.changed() == 0) return Status::not_found("no file " + id);
    return {};
  }

  Result<std::vector<std::string>> expired_files(int64_t now_ms, int limit) override {
    std::lock_guard lock(mu_);
    CS_ASSIGN_OR_RETURN(const PgResult r, conn_->exec("SELECT id FROM files WHERE expires_ms > 0 AND expires_ms <= $1 "
                                                      "ORDER BY expires_ms LIMIT $2",
                                                      PgParams().add(now_ms).add(limit)));
    return read_pg_rows<std::string>(r, [](const PgRow& row) { return row.text(0); });
  }

  Result<std::vector<std::string>> delete_deployment(const std::string& name) override {
    std::lock_guard lock(mu_);
    PgTransaction tx(*conn_);
    CS_RETURN_IF_ERROR(tx.begin());
    // A batch's lines go with it (ON DELETE CASCADE).
    CS_ASSIGN_OR_RETURN(const PgResult r,
                        conn_->exec("DELETE FROM files WHERE deployment = $1 RETURNING id", PgParams().add(name)));
    CS_RETURN_IF_ERROR(conn_->exec("DELETE FROM batches WHERE deployment = $1", PgParams().add(name)).status());
    CS_RETURN_IF_ERROR(tx.commit());
    return read_pg_rows<std::string>(r, [](const PgRow& row) { return row.text(0); });
  }

  Status bind_unbound(const std::string& name, int64_t created_ms) override {
    std::lock_guard lock(mu_);
    for (const char* sql : {"UPDATE files SET deployment_created_ms = $2 WHERE deployment = $1 AND "
                            "deployment_created_ms = 0",
                            "UPDATE batches SET deployment_created_ms = $2 WHERE deployment = $1 AND "
                            "deployment_created_ms = 0"}) {
      CS_RETURN_IF_ERROR(conn_->exec(sql, PgParams().add(name).add(created_ms)).status());
    }
    return {};
  }

  Status create_batch(const Batch& b, const std::vector<BatchLine>& lines) override {
    std::lock_guard lock(mu_);
    PgTransaction tx(*conn_);
    CS_RETURN_IF_ERROR(tx.begin());
    PgParams v;
    v.add(b.id).add(b.deployment).add(b.endpoint).add(b.input_file_id).add(b.completion_window).add(b.metadata_json);
    v.add(batch_status_name(b.status)).add(errors_json(b.errors)).add(b.output_file_id).add(b.error_file_id);
    v.add(b.created_ms).add(b.in_progress_ms).add(b.expires_ms).add(b.finalizing_ms).add(b.completed_ms);
    v.add(b.failed_ms).add(b.expired_ms).add(b.cancelling_ms).add(b.cancelled_ms).add(b.total).add(b.completed);
    v.add(b.failed).add(b.key_id).add(b.deployment_created_ms).add(b.output_expires_after_s);
    CS_RETURN_IF_ERROR(conn_
                           ->exec(std::string("INSERT INTO batches (") + kBatchColumns +
                                      ") VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, "
                                      "$16, $17, $18, $19, $20, $21, $22, $23, $24, $25)",
                                  v)
                           .status());
    // Lines given at creation keep their states (tests); each state's lines go in one group.
    for (LineState st : {LineState::Pending, LineState::Leased, LineState::Done, LineState::Failed}) {
      std::vector<BatchLine> in_state;
      for (const BatchLine& l : lines) {
        if (l.state == st) in_state.push_back(l);
      }
      CS_RETURN_IF_ERROR(insert_lines(b.id, in_state, line_state_name(st)));
    }
    return tx.commit();
  }

  Result<bool> start_batch(const Batch& b, const std::vector<BatchLine>& lines) override {
    std::lock_guard lock(mu_);
    PgTransaction tx(*conn_);
    CS_RETURN_IF_ERROR(tx.begin());
    // The row lock this takes makes a cancellation meanwhile wait, or this find it no longer validating.
    CS_ASSIGN_OR_RETURN(
        const PgResult r,
        conn_->exec("UPDATE batches SET status = 'in_progress', in_progress_ms = $2, total = $3 "
                    "WHERE id = $1 AND status = 'validating'",
                    PgParams().add(b.id).add(b.in_progress_ms).add(static_cast<int64_t>(lines.size()))));
    if (r.changed() == 0) return false;
    CS_RETURN_IF_ERROR(insert_lines(b.id, lines, "pending"));
    CS_RETURN_IF_ERROR(tx.commit());
    return true;
  }

  Result<std::optional<Batch>> batch(const std::string& id) override {
    std::lock_guard lock(mu_);
    CS_ASSIGN_OR_RETURN(const PgResult r,
                        conn_->exec(select_from(kBatchColumns, "FROM batches WHERE id = $1"), PgParams().add(id)));
    if (r.rows() == 0) return std::optional<Batch>();
    CS_ASSIGN_OR_RETURN(Batch b, read_batch(r.row(0)));
    return std::optional<Batch>(std::move(b));
  }

  Result<std::vector<Batch>> batches(const Scope& scope, const std::string& after_id, int limit) override {
    std::lock_guard lock(mu_);
    CS_ASSIGN_OR_RETURN(const PgResult r, page(kBatchColumns, "batches", "key_id", scope, after_id, limit));
    return read_pg_rows<Batch>(r, [](const PgRow& row) { return read_batch(row); });
  }

  Result<std::vector<Batch>> batches_in(const std::vector<BatchStatus>& statuses) override {
    if (statuses.empty()) return std::vector<Batch>();
    std::string in;
    PgParams v;
    for (size_t i = 0; i < statuses.size(); ++i) {
      in += (i == 0 ? "$" : ", $") + std::to_string(i + 1);
      v.add(batch_status_name(statuses[i]));
    }
    std::lock_guard lock(mu_);
    CS_ASSIGN_OR_RETURN(const PgResult r, conn_->exec(select_from(kBatchColumns, "FROM batches WHERE status IN (" + in +
                                                                                     ") ORDER BY created_ms, id"),
                                                      v));
    return read_pg_rows<Batch>(r, [](const PgRow& row) { return read_batch(row); });
  }

  Status update_batch(const Batch& b) override {
    std::lock_guard lock(mu_);
    PgParams v;
    v.add(b.id).add(batch_status_name(b.status)).add(errors_json(b.errors)).add(b.output_file_id);
    v.add(b.error_file_id).add(b.in_progress_ms).add(b.expires_ms).add(b.finalizing_ms).add(b.completed_ms);
    v.add(b.failed_ms).add(b.expired_ms).add(b.cancelling_ms).add(b.cancelled_ms).add(b.total);
    CS_ASSIGN_OR_RETURN(const PgResult r,
                        conn_->exec("UPDATE batches SET status = $2, errors = $3, output_file_id = $4, "
                                    "error_file_id = $5, in_progress_ms = $6, expires_ms = $7, finalizing_ms = $8, "
                                    "completed_ms = $9, failed_ms = $10, expired_ms = $11, cancelling_ms = $12, "
                                    "cancelled_ms = $13, total = $14 WHERE id = $1",
                                    v));
    if (r.changed() == 0) return Status::not_found("no batch " + b.id);
    return {};
  }

  Result<std::vector<BatchLine>> lease_lines(const std::string& batch_id, int n, const LeaseTerms& lease) override {
    std::lock_guard lock(mu_);
    // One statement: the lines another hub is leasing right now are skipped, never leased twice;
    // a line whose lease expired (its hub died or stalled) is leased again, its attempt counted.
    // The pick is MATERIALIZED so that it runs once: a LIMIT subquery inside the UPDATE's WHERE
    // may be run again as rows change and pick more than n.
    CS_ASSIGN_OR_RETURN(
        const PgResult r,
        conn_->exec(
            "WITH picked AS MATERIALIZED (SELECT line FROM batch_lines WHERE batch_id = $1 AND (state = "
            "'pending' OR (state = 'leased' AND lease_until_ms <= $3)) ORDER BY line LIMIT $2 FOR UPDATE "
            "SKIP LOCKED) UPDATE batch_lines l SET state = 'leased', attempts = l.attempts + 1, holder = $4, "
            "lease_until_ms = $5 FROM picked WHERE l.batch_id = $1 AND l.line = picked.line RETURNING "
            "l.line, l.custom_id, l.byte_offset, l.byte_length, l.attempts",
            PgParams().add(batch_id).add(n).add(lease.now_ms).add(lease.holder).add(lease.now_ms + lease.lease_ms)));
    CS_ASSIGN_OR_RETURN(std::vector<BatchLine> out, read_pg_rows<BatchLine>(r, [&](const PgRow& row) {
                          BatchLine l;
                          l.batch_id = batch_id;
                          l.line = row.i32(0);
                          l.custom_id = row.text(1);
                          l.offset = row.u64(2);
                          l.length = static_cast<uint32_t>(row.i64(3));
                          l.attempts = row.i32(4);
                          l.state = LineState::Leased;
                          return l;
                        }));
    // RETURNING keeps no order.
    std::sort(out.begin(), out.end(), [](const BatchLine& a, const BatchLine& b) { return a.line < b.line; });
    return out;
  }

  Result<int> renew_leases(const LeaseTerms& lease) override {
    std::lock_guard lock(mu_);
    CS_ASSIGN_OR_RETURN(const PgResult r,
                        conn_->exec("UPDATE batch_lines SET lease_until_ms = $3 WHERE state = 'leased' AND holder = "
                                    "$1 AND lease_until_ms > $2",
                                    PgParams().add(lease.holder).add(lease.now_ms).add(lease.now_ms + lease.lease_ms)));
    return static_cast<int>(r.changed());
  }

  Result<bool> end_line(const BatchLine& l, const LeaseTerms& lease, LineState state, const std::string& result,
                        const std::string& device) override {
    std::lock_guard lock(mu_);
    PgTransaction tx(*conn_);
    CS_RETURN_IF_ERROR(tx.begin());
    // Conditional: only the holder of the line's current lease (its attempt: the fencing token),
    // before it expires. Of two hubs ending the line at once, the second waits for the first's
    // row lock, then finds the line no longer leased and changes nothing.
    CS_ASSIGN_OR_RETURN(const PgResult r,
                        conn_->exec("UPDATE batch_lines SET state = $3, result = $4, device = $5, ended_ms = $6, "
                                    "holder = '', lease_until_ms = 0 WHERE batch_id = $1 AND line = $2 AND state = "
                                    "'leased' AND holder = $7 AND attempts = $8 AND lease_until_ms > $6",
                                    PgParams()
                                        .add(l.batch_id)
                                        .add(l.line)
                                        .add(line_state_name(state))
                                        .add(result)
                                        .add(device)
                                        .add(lease.now_ms)
                                        .add(lease.holder)
                                        .add(l.attempts)));
    if (r.changed() == 0) return false;
    CS_RETURN_IF_ERROR(conn_
                           ->exec(state == LineState::Done
                                      ? "UPDATE batches SET completed = completed + 1 WHERE id = $1"
                                      : "UPDATE batches SET failed = failed + 1 WHERE id = $1",
                                  PgParams().add(l.batch_id))
                           .status());
    CS_RETURN_IF_ERROR(tx.commit());
    return true;
  }

  Result<Throughput> throughput(const std::string& batch_id) override {
    std::lock_guard lock(mu_);
    Throughput t;
    CS_ASSIGN_OR_RETURN(const PgResult span, conn_->exec("SELECT MIN(ended_ms), MAX(ended_ms) FROM batch_lines WHERE "
                                                         "batch_id = $1 AND state = 'done'",
                                                         PgParams().add(batch_id)));
    if (span.rows() > 0) {
      t.first_ended_ms = span.row(0).i64(0);
      t.last_ended_ms = span.row(0).i64(1);
    }
    CS_ASSIGN_OR_RETURN(const PgResult r, conn_->exec("SELECT device, COUNT(*) AS n FROM batch_lines WHERE batch_id = "
                                                      "$1 AND state = 'done' GROUP BY device ORDER BY n DESC, device",
                                                      PgParams().add(batch_id)));
    for (int i = 0; i < r.rows(); ++i) t.answered_by_device.emplace_back(r.row(i).text(0), r.row(i).i32(1));
    return t;
  }

  Status release_line(const BatchLine& l, const std::string& holder) override {
    std::lock_guard lock(mu_);
    return conn_
        ->exec(
            "UPDATE batch_lines SET state = 'pending', holder = '', lease_until_ms = 0 WHERE batch_id = $1 AND "
            "line = $2 AND state = 'leased' AND holder = $3 AND attempts = $4",
            PgParams().add(l.batch_id).add(l.line).add(holder).add(l.attempts))
        .status();
  }

  Status return_line(const BatchLine& l, const std::string& holder) override {
    std::lock_guard lock(mu_);
    return conn_
        ->exec(
            "UPDATE batch_lines SET state = 'pending', attempts = GREATEST(0, attempts - 1), holder = '', "
            "lease_until_ms = 0 WHERE batch_id = $1 AND line = $2 AND state = 'leased' AND holder = $3 AND "
            "attempts = $4",
            PgParams().add(l.batch_id).add(l.line).add(holder).add(l.attempts))
        .status();
  }

  Result<int> release_leases(const std::string& holder) override {
    std::lock_guard lock(mu_);
    CS_ASSIGN_OR_RETURN(const PgResult r, conn_->exec("UPDATE batch_lines SET state = 'pending', holder = '', "
                                                      "lease_until_ms = 0 WHERE state = 'leased' AND holder = $1",
                                                      PgParams().add(holder)));
    return static_cast<int>(r.changed());
  }

  // Every lease in the database, whoever holds it: with several hubs, never at a hub's start
  // (BatchService releases only its own, release_leases, and lets the others' expire).
  Result<int> release_all_leases() override {
    std::lock_guard lock(mu_);
    CS_ASSIGN_OR_RETURN(const PgResult r, conn_->exec("UPDATE batch_lines SET state = 'pending', holder = '', "
                                                      "lease_until_ms = 0 WHERE state = 'leased'"));
    return static_cast<int>(r.changed());
  }

  Result<bool> claim_finalization(const std::string& batch_id, const LeaseTerms& lease) override {
    std::lock_guard lock(mu_);
    CS_ASSIGN_OR_RETURN(
        const PgResult r,
        conn_->exec("UPDATE batches SET finalizer = $2, finalize_until_ms = $4 WHERE id = $1 AND "
                    "status NOT IN ('failed', 'completed', 'expired', 'cancelled') AND (finalizer = "
                    "'' OR finalizer = $2 OR finalize_until_ms <= $3)",
                    PgParams().add(batch_id).add(lease.holder).add(lease.now_ms).add(lease.now_ms + lease.lease_ms)));
    return r.changed() > 0;
  }

  Result<bool> finish_batch(const Batch& b, const std::string& holder) override {
    std::lock_guard lock(mu_);
    PgParams v;
    v.add(b.id).add(batch_status_name(b.status)).add(errors_json(b.errors)).add(b.output_file_id);
    v.add(b.error_file_id).add(b.in_progress_ms).add(b.expires_ms).add(b.finalizing_ms).add(b.completed_ms);
    v.add(b.failed_ms).add(b.expired_ms).add(b.cancelling_ms).add(b.cancelled_ms).add(b.total).add(holder);
    CS_ASSIGN_OR_RETURN(const PgResult r,
                        conn_->exec("UPDATE batches SET status = $2, errors = $3, output_file_id = $4, "
                                    "error_file_id = $5, in_progress_ms = $6, expires_ms = $7, finalizing_ms = $8, "
                                    "completed_ms = $9, failed_ms = $10, expired_ms = $11, cancelling_ms = $12, "
                                    "cancelled_ms = $13, total = $14 WHERE id = $1 AND finalizer = $15 AND status "
                                    "NOT IN ('failed', 'completed', 'expired', 'cancelled')",
                                    v));
    return r.changed() > 0;
  }

  Result<bool> cancel_batch(const std::string& batch_id, int64_t now_ms) override {
    std::lock_guard lock(mu_);
    CS_ASSIGN_OR_RETURN(const PgResult r,
                        conn_->exec("UPDATE batches SET status = 'cancelling', cancelling_ms = $2 WHERE id = $1 AND "
                                    "status IN ('validating', 'in_progress')",
                                    PgParams().add(batch_id).add(now_ms)));
    return r.changed() > 0;
  }

  Result<int> fail_pending(const std::string& batch_id, const std::string& code, const std::string& message,
                           int64_t now_ms) override {
    std::lock_guard lock(mu_);
    PgTransaction tx(*conn_);
    CS_RETURN_IF_ERROR(tx.begin());
    // Locked until commit: a line another hub is leasing meanwhile is either leased before (and
    // not failed here) or found failed by that lease. A line whose lease expired fails too: its
    // hub is gone or too late (its end is refused).
    CS_ASSIGN_OR_RETURN(const PgResult pending,
                        conn_->exec("SELECT line, custom_id FROM batch_lines WHERE batch_id = $1 AND (state = "
                                    "'pending' OR (state = 'leased' AND lease_until_ms <= $2)) ORDER BY line FOR "
                                    "UPDATE",
                                    PgParams().add(batch_id).add(now_ms)));
    for (int i = 0; i < pending.rows(); ++i) {
      const PgRow row = pending.row(i);
      CS_RETURN_IF_ERROR(
          conn_
              ->exec("UPDATE batch_lines SET state = 'failed', result = $3, holder = '', lease_until_ms = 0 WHERE "
                     "batch_id = $1 AND line = $2",
                     PgParams().add(batch_id).add(row.i32(0)).add(batch_error_line(row.text(1), code, message)))
              .status());
    }
    CS_RETURN_IF_ERROR(conn_
                           ->exec("UPDATE batches SET failed = failed + $2 WHERE id = $1",
                                  PgParams().add(batch_id).add(pending.rows()))
                           .status());
    CS_RETURN_IF_ERROR(tx.commit());
    return pending.rows();
  }

  Result<int> count_lines(const std::string& batch_id, LineState state) override {
    std::lock_guard lock(mu_);
    CS_ASSIGN_OR_RETURN(const PgResult r, conn_->exec("SELECT COUNT(*) FROM batch_lines WHERE batch_id = $1 AND "
                                                      "state = $2",
                                                      PgParams().add(batch_id).add(line_state_name(state))));
    return r.rows() > 0 ? r.row(0).i32(0) : 0;
  }

  Result<int> for_each_result(const std::string& batch_id, LineState state,
                              const std::function<Status(std::string_view result)>& each) override {
    std::lock_guard lock(mu_);
    // Page by page, after the last line read: at most kResultPage results in memory at once.
    int n = 0;
    int after = 0;
    while (true) {
      CS_ASSIGN_OR_RETURN(
          const PgResult r,
          conn_->exec("SELECT line, result FROM batch_lines WHERE batch_id = $1 AND state = $2 AND "
                      "line > $3 ORDER BY line LIMIT $4",
                      PgParams().add(batch_id).add(line_state_name(state)).add(after).add(kResultPage)));
      for (int i = 0; i < r.rows(); ++i) {
        CS_RETURN_IF_ERROR(each(r.row(i).text(1)));
        after = r.row(i).i32(0);
        ++n;
      }
      if (r.rows() < kResultPage) return n;
    }
  }

 private:
  // REQUIRES mu_ held, inside a transaction. The lines in multi-row INSERTs of kLineGroup rows
  // (one round trip per group rather than per line; a batch may have 50,000).
  Status insert_lines(const std::string& batch_id, const std::vector<BatchLine>& lines, const char* state) {
    for (size_t first = 0; first < lines.size(); first += kLineGroup) {
      const size_t end = std::min(lines.size(), first + kLineGroup);
      std::string sql =
          "INSERT INTO batch_lines (batch_id, line, custom_id, byte_offset, byte_length, state, attempts, result) "
          "VALUES ";
      PgParams v;
      v.add(batch_id).add(state);
      for (size_t i = first; i < end; ++i) {
        const int p = v.size() + 1;
        sql += (i == first ? "($1, $" : ", ($1, $") + std::to_string(p) + ", $" + std::to_string(p + 1) + ", $" +
               std::to_string(p + 2) + ", $" + std::to_string(p + 3) + ", $2, 0, '')";
        v.add(lines[i].line).add(lines[i].custom_id).add(lines[i].offset).add(static_cast<int64_t>(lines[i].length));
      }
      CS_RETURN_IF_ERROR(conn_->exec(sql, v).status());
    }
    return {};
  }

  // REQUIRES mu_ held. One page of `table`'s rows in `scope` (its `owner` column names the key),
  // newest first, after the row `after_id` ("" : from the newest).
  Result<PgResult> page(const char* columns, const std::string& table, const std::string& owner, const Scope& scope,
                        const std::string& after_id, int limit) {
    const std::string rest = "FROM " + table +
                             " WHERE deployment = $1 AND deployment_created_ms = $4 AND ($5 = '' OR " + owner +
                             " = $5) AND ($2 = '' OR (created_ms, id) < (SELECT created_ms, id FROM " + table +
                             " WHERE id = $2)) ORDER BY created_ms DESC, id DESC LIMIT $3";
    return conn_->exec(
        select_from(columns, rest),
        PgParams().add(scope.deployment).add(after_id).add(limit).add(scope.deployment_created_ms).add(scope.owner));
  }

  std::mutex mu_;
  std::unique_ptr<PgConnection> conn_;  // guarded by mu_
};

}  // namespace

Result<std::unique_ptr<BatchStore>> open_postgres_batch_store(const std::string& url) {
  CS_ASSIGN_OR_RETURN(std::unique_ptr<PgConnection> conn, PgConnection::open(url));
  auto store = std::make_unique<PgBatchStore>(std::move(conn));
  CS_RETURN_IF_ERROR(store->migrate());
  return std::unique_ptr<BatchStore>(std::move(store));
}

}  // namespace cellserve::fleet
