// Validating a batch's input file before any work (OpenAI's Batch API input): one JSON object per
// line, {"custom_id", "method": "POST", "url": <the batch's endpoint>, "body": {...}}. Every line
// is checked first; any bad line fails the whole batch with errors naming the lines.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "fleet/batch/batch_file_store.h"
#include "fleet/batch/batch_records.h"

namespace cellserve::fleet {

inline constexpr size_t kMaxBatchLines = 50000;         // OpenAI's per-batch limit
inline constexpr size_t kMaxBatchLineBytes = 4u << 20;  // one request line
inline constexpr size_t kMaxCustomIdBytes = 512;
inline constexpr size_t kMaxReportedBatchErrors = 100;  // errors listed; the rest are counted

struct BatchInput {
  std::vector<BatchLine> lines;    // valid lines, in order (state Pending)
  std::vector<BatchError> errors;  // empty: the file is valid
};

// Reads and checks the input file at `path` for a batch to `endpoint`. `check_body` is the
// deployment's own check of a request body (its model name, field types); a failure names the
// problem. Blank lines are skipped. Internal only when the file cannot be read.
Result<BatchInput> read_batch_input(const std::string& path, const std::string& endpoint,
                                    const std::function<Status(std::string_view body)>& check_body);
// The same, reading the file from `file` (batch_file_store.h) a piece at a time.
Result<BatchInput> read_batch_input(BatchFileReader& file, const std::string& endpoint,
                                    const std::function<Status(std::string_view body)>& check_body);

}  // namespace cellserve::fleet
