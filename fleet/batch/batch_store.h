// Where the hub keeps the Files and Batches API's state, apart from the hub's Store because it
// grows with every batch line and is written at the fleet's pace. The contract every
// implementation keeps; SQLite (DATA_DIR/batch.db, sqlite_batch_store.h) is the embedded one, and
// open_batch_store.h picks one from a URL or path. Thread-safe.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "fleet/batch/batch_records.h"

namespace cellserve::fleet {

// A lease's terms: who takes or holds it (a hub's id), the time now and how long it lasts. The
// caller's clock times it (each hub's; keep the hubs' clocks synchronized: a skew shortens or
// lengthens the lease, and never lets a line end twice, since the end is fenced by the attempt).
struct LeaseTerms {
  std::string holder;
  int64_t now_ms = 0;
  int64_t lease_ms = 0;
};

class BatchStore {
 public:
  // The SQLite database at `path` (open_sqlite_batch_store).
  static Result<std::unique_ptr<BatchStore>> open(const std::string& path);
  virtual ~BatchStore() = default;

  virtual Status add_file(const BatchFile& f) = 0;
  virtual Result<std::optional<BatchFile>> file(const std::string& id) = 0;
  // Which rows a list shows: a deployment's (its name and created_ms), and of those only the
  // ones `owner` owns ("" : all, the admin's view).
  struct Scope {
    std::string deployment;
    int64_t deployment_created_ms = 0;
    std::string owner;
  };
  // The scope's files, newest first; after `after_id` when set; at most `limit`.
  virtual Result<std::vector<BatchFile>> files(const Scope& scope, const std::string& after_id, int limit) = 0;
  virtual Status delete_file(const std::string& id) = 0;
  // The ids of the files whose expires_ms is at or before `now_ms` (at most `limit`).
  virtual Result<std::vector<std::string>> expired_files(int64_t now_ms, int limit) = 0;
  // The deployment `name` was deleted: every file and batch (with its lines) stored under the
  // name goes, in one transaction. Returns the removed files' ids (their bytes are the caller's).
  virtual Result<std::vector<std::string>> delete_deployment(const std::string& name) = 0;
  // Rows stored before they carried their deployment's created_ms are bound to the deployment
  // `name` created at `created_ms`.
  virtual Status bind_unbound(const std::string& name, int64_t created_ms) = 0;

  // The batch and all its lines, in one transaction; an error when the id exists.
  virtual Status create_batch(const Batch& b, const std::vector<BatchLine>& lines) = 0;
  // A validated batch starts: its lines are stored and it is in_progress with `b`'s in_progress_ms
  // and total, in one transaction; false (nothing stored) when it is no longer validating (it was
  // cancelled meanwhile).
  virtual Result<bool> start_batch(const Batch& b, const std::vector<BatchLine>& lines) = 0;
  virtual Result<std::optional<Batch>> batch(const std::string& id) = 0;
  virtual Result<std::vector<Batch>> batches(const Scope& scope, const std::string& after_id, int limit) = 0;
  // Every batch in one of `statuses` (the runner's work).
  virtual Result<std::vector<Batch>> batches_in(const std::vector<BatchStatus>& statuses) = 0;
  // Writes every field of `b` but its counts, which only line changes move.
  virtual Status update_batch(const Batch& b) = 0;

  // Up to `n` lines of the batch in line order that are pending, or leased under a lease that
  // expired (its holder died or stalled), each leased to `lease.holder` until now + lease_ms with
  // attempts + 1, in one transaction; the lines returned carry their new state and attempt
  // count. Two holders leasing at once never get the same line.
  virtual Result<std::vector<BatchLine>> lease_lines(const std::string& batch_id, int n, const LeaseTerms& lease) = 0;
  // Every line `holder` has leased whose lease has not expired is leased until now + lease_ms (a
  // long generation keeps its lease while its hub lives). Returns how many.
  virtual Result<int> renew_leases(const LeaseTerms& lease) = 0;
  // Line `l` (batch_id, line, and its attempts: the lease's fencing token) ends: Done or Failed
  // with `result`, run on `device` ("" : none) at lease.now_ms, and the batch's count moves, in
  // one transaction. Only the holder of the line's current, unexpired lease ends it: otherwise
  // nothing changes (false) and the line ends once, by its current holder.
  virtual Result<bool> end_line(const BatchLine& l, const LeaseTerms& lease, LineState state, const std::string& result,
                                const std::string& device) = 0;
  // Which devices answered the batch's lines, how many each, and over what time.
  struct Throughput {
    int64_t first_ended_ms = 0;
    int64_t last_ended_ms = 0;
    std::vector<std::pair<std::string, int>> answered_by_device;  // most first
  };
  virtual Result<Throughput> throughput(const std::string& batch_id) = 0;
  // A failed attempt: the line `l` that `holder` leased is pending again (another attempt may
  // run it). Nothing changes when the line's lease is no longer `holder`'s attempt.
  virtual Status release_line(const BatchLine& l, const std::string& holder) = 0;
  // A leased line that never ran (its key had no room left): pending again, the attempt uncounted.
  virtual Status return_line(const BatchLine& l, const std::string& holder) = 0;
  // The lines `holder` leased are pending again (a hub that starts again under its id).
  virtual Result<int> release_leases(const std::string& holder) = 0;
  // Every leased line, whoever holds it, is pending again: only for a database that one hub owns
  // (SQLite's batch.db) when that hub starts.
  virtual Result<int> release_all_leases() = 0;
  // Finalizing the batch (writing its output and error files and its terminal status) is
  // `lease.holder`'s until now + lease_ms: true when the batch is not finalized and nobody else
  // holds an unexpired claim (a hub that died finalizing is taken over). Two hubs racing: one wins.
  virtual Result<bool> claim_finalization(const std::string& batch_id, const LeaseTerms& lease) = 0;
  // Writes `b` (as update_batch) only while `holder` holds its finalization claim and the stored
  // batch is not yet in a terminal status; false (nothing written) otherwise.
  virtual Result<bool> finish_batch(const Batch& b, const std::string& holder) = 0;
  // The batch is cancelling since `now_ms`, when it is validating or in progress; false otherwise
  // (it ended meanwhile, perhaps on another hub).
  virtual Result<bool> cancel_batch(const std::string& batch_id, int64_t now_ms) = 0;
  // Every still-pending line of the batch, and every line whose lease expired at `now_ms`,
  // fails with the error line of `code` and `message` (expiry, cancellation), and the failed
  // count moves, in one transaction.
  virtual Result<int> fail_pending(const std::string& batch_id, const std::string& code, const std::string& message,
                                   int64_t now_ms) = 0;
  // How many lines of the batch are in `state`.
  virtual Result<int> count_lines(const std::string& batch_id, LineState state) = 0;
  // Calls `each` with every ended line's result in `state`, in line order, one row at a time (a
  // batch's answers may not fit in memory at once); stops at the first error `each` returns.
  // Returns how many results there were.
  virtual Result<int> for_each_result(const std::string& batch_id, LineState state,
                                      const std::function<Status(std::string_view result)>& each) = 0;
  // The same, collected (small batches, tests).
  Result<std::vector<std::string>> results(const std::string& batch_id, LineState state);
};

// The error file line of a request that never got an answer (OpenAI's shape).
std::string batch_error_line(const std::string& custom_id, const std::string& code, const std::string& message);

}  // namespace cellserve::fleet
