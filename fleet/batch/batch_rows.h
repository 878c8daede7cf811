// How batch records are stored as table rows, the same in every BatchStore implementation: the
// column lists (and their order, which the readers follow), the names line states are stored by,
// and a batch's errors as a JSON array. The readers take any row with text/i64/i32/u64 accessors
// (SqliteStmt, PgRow).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "fleet/batch/batch_records.h"

namespace cellserve::fleet {

inline constexpr const char* kBatchFileColumns =
    "id, deployment, filename, purpose, bytes, created_ms, deployment_created_ms, owner_key, expires_ms";
inline constexpr const char* kBatchColumns =
    "id, deployment, endpoint, input_file_id, completion_window, metadata, status, errors, output_file_id, "
    "error_file_id, created_ms, in_progress_ms, expires_ms, finalizing_ms, completed_ms, failed_ms, expired_ms, "
    "cancelling_ms, cancelled_ms, total, completed, failed, key_id, deployment_created_ms, output_expires_after_s";

const char* line_state_name(LineState s);  // "pending", "leased", "done", "failed"
std::string errors_json(const std::vector<BatchError>& errors);
// The errors of `text`; what is not one is skipped (never an error: errors are informative).
std::vector<BatchError> errors_from_json(const std::string& text);

// A row of kBatchFileColumns.
template <typename Row>
BatchFile read_batch_file(const Row& s) {
  return {s.text(0), s.text(1), s.text(2), s.text(3), s.u64(4), s.i64(5), s.i64(6), s.text(7), s.i64(8)};
}

// A row of kBatchColumns. DataLoss for a status this build does not know.
template <typename Row>
Result<Batch> read_batch(const Row& s) {
  Batch b;
  b.id = s.text(0);
  b.deployment = s.text(1);
  b.endpoint = s.text(2);
  b.input_file_id = s.text(3);
  b.completion_window = s.text(4);
  b.metadata_json = s.text(5);
  const std::string status = s.text(6);
  const std::optional<BatchStatus> parsed = parse_batch_status(status);
  if (!parsed) return Status::data_loss("stored batch status '" + status + "' is unknown");
  b.status = *parsed;
  b.errors = errors_from_json(s.text(7));
  b.output_file_id = s.text(8);
  b.error_file_id = s.text(9);
  int64_t* times[] = {&b.created_ms, &b.in_progress_ms, &b.expires_ms,    &b.finalizing_ms, &b.completed_ms,
                      &b.failed_ms,  &b.expired_ms,     &b.cancelling_ms, &b.cancelled_ms};
  for (int i = 0; i < 9; ++i) *times[i] = s.i64(10 + i);
  b.total = s.i32(19);
  b.completed = s.i32(20);
  b.failed = s.i32(21);
  b.key_id = s.text(22);
  b.deployment_created_ms = s.i64(23);
  b.output_expires_after_s = s.i64(24);
  return b;
}

}  // namespace cellserve::fleet
