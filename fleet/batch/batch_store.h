// Where the hub keeps the Files and Batches API's state: its own SQLite database (DATA_DIR/
// batch.db, WAL, synchronous=NORMAL: see open()), apart from hub.db because it grows with every
// batch line and is written at the fleet's pace. Thread-safe.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "fleet/batch/batch_records.h"

namespace cellserve::fleet {

class SqliteDb;

class BatchStore {
 public:
  // Opens (creating or migrating) the database at `path`. DataLoss when it is not one.
  static Result<std::unique_ptr<BatchStore>> open(const std::string& path);
  ~BatchStore();

  Status add_file(const BatchFile& f);
  Result<std::optional<BatchFile>> file(const std::string& id);
  // Which rows a list shows: a deployment's (its name and created_ms), and of those only the
  // ones `owner` owns ("" : all, the admin's view).
  struct Scope {
    std::string deployment;
    int64_t deployment_created_ms = 0;
    std::string owner;
  };
  // The scope's files, newest first; after `after_id` when set; at most `limit`.
  Result<std::vector<BatchFile>> files(const Scope& scope, const std::string& after_id, int limit);
  Status delete_file(const std::string& id);
  // The ids of the files whose expires_ms is at or before `now_ms` (at most `limit`).
  Result<std::vector<std::string>> expired_files(int64_t now_ms, int limit);
  // The deployment `name` was deleted: every file and batch (with its lines) stored under the
  // name goes, in one transaction. Returns the removed files' ids (their bytes are the caller's).
  Result<std::vector<std::string>> delete_deployment(const std::string& name);
  // Rows stored before they carried their deployment's created_ms are bound to the deployment
  // `name` created at `created_ms`.
  Status bind_unbound(const std::string& name, int64_t created_ms);

  // The batch and all its lines, in one transaction; an error when the id exists.
  Status create_batch(const Batch& b, const std::vector<BatchLine>& lines);
  // A validated batch starts: its lines are stored and it is in_progress with `b`'s in_progress_ms
  // and total, in one transaction; false (nothing stored) when it is no longer validating (it was
  // cancelled meanwhile).
  Result<bool> start_batch(const Batch& b, const std::vector<BatchLine>& lines);
  Result<std::optional<Batch>> batch(const std::string& id);
  Result<std::vector<Batch>> batches(const Scope& scope, const std::string& after_id, int limit);
  // Every batch in one of `statuses` (the runner's work).
  Result<std::vector<Batch>> batches_in(const std::vector<BatchStatus>& statuses);
  // Writes every field of `b` but its counts, which only line changes move.
  Status update_batch(const Batch& b);

  // Up to `n` pending lines of the batch in line order, each marked leased (attempts + 1) in one
  // transaction; the lines returned carry their new state and attempt count.
  Result<std::vector<BatchLine>> lease_lines(const std::string& batch_id, int n);
  // A leased line ends: Done or Failed with `result`, run on `device` ("" : none) at `now_ms`, and
  // the batch's count moves, in one transaction. Ignored (false) when the line is not leased.
  Result<bool> end_line(const std::string& batch_id, int line, LineState state, const std::string& result,
                        const std::string& device, int64_t now_ms);
  // Which devices answered the batch's lines, how many each, and over what time.
  struct Throughput {
    int64_t first_ended_ms = 0;
    int64_t last_ended_ms = 0;
    std::vector<std::pair<std::string, int>> answered_by_device;  // most first
  };
  Result<Throughput> throughput(const std::string& batch_id);
  // A failed attempt: the line is pending again (another attempt may run it).
  Status release_line(const std::string& batch_id, int line);
  // A leased line that never ran (its key had no room left): pending again, the attempt uncounted.
  Status return_line(const std::string& batch_id, int line);
  // Lines leased when the hub stopped: pending again (their answers were never recorded).
  Result<int> release_all_leases();
  // Every still-pending line of the batch fails with the result `make(line)` gives it (expiry,
  // cancellation), and the failed count moves, in one transaction.
  Result<int> fail_pending(const std::string& batch_id, const std::string& code, const std::string& message);
  // How many lines of the batch are in `state`.
  Result<int> count_lines(const std::string& batch_id, LineState state);
  // Calls `each` with every ended line's result in `state`, in line order, one row at a time (a
  // batch's answers may not fit in memory at once); stops at the first error `each` returns.
  // Returns how many results there were.
  Result<int> for_each_result(const std::string& batch_id, LineState state,
                              const std::function<Status(std::string_view result)>& each);
  // The same, collected (small batches, tests).
  Result<std::vector<std::string>> results(const std::string& batch_id, LineState state);

 private:
  explicit BatchStore(std::unique_ptr<SqliteDb> db);
  Status migrate();
  std::mutex mu_;
  std::unique_ptr<SqliteDb> db_;
};

// The error file line of a request that never got an answer (OpenAI's shape).
std::string batch_error_line(const std::string& custom_id, const std::string& code, const std::string& message);

}  // namespace cellserve::fleet
