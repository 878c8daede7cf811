// The OpenAI Files and Batches API's records at the hub (fleet/batch/batch_store.h keeps them):
// uploaded files, batches, and each batch's lines with their state and recorded result.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace cellserve::fleet {

// An uploaded (purpose "batch") or produced ("batch_output") file of one deployment. The bytes
// live in the hub's data directory, batch/files/<id>.
struct BatchFile {
  std::string id;  // "file-" + 24 hex digits
  std::string deployment;
  std::string filename;
  std::string purpose;
  uint64_t bytes = 0;
  int64_t created_ms = 0;
  // The deployment's own created_ms: a deployment created again under the name never sees the
  // file. 0: stored before files carried it (bound to the deployment of the name at hub start).
  int64_t deployment_created_ms = 0;
  // The API key that uploaded it (or whose batch produced it); "": the admin key or an open hub.
  // Only that key (and the admin) lists, reads, downloads or deletes it.
  std::string owner_key = {};
  int64_t expires_ms = 0;  // when the hub deletes it (a batch's output_expires_after); 0: never
};

enum class BatchStatus { Validating, Failed, InProgress, Finalizing, Completed, Expired, Cancelling, Cancelled };
const char* batch_status_name(BatchStatus s);  // OpenAI's spelling: "in_progress", ...
std::optional<BatchStatus> parse_batch_status(std::string_view name);

// One entry of a batch's `errors` (validation), naming its input line (1-based) when it has one.
struct BatchError {
  std::string code;
  std::string message;
  int line = 0;  // 0: not about one line
};

struct Batch {
  std::string id;  // "batch_" + 24 hex digits
  std::string deployment;
  std::string endpoint;  // "/v1/chat/completions" or "/v1/completions"
  std::string input_file_id;
  // The API key that created it ("" : the admin key, or an open hub): its owner (only that key
  // and the admin see it); its lines count against that key's rate and daily tokens, and wait
  // while the key has none left.
  std::string key_id;
  int64_t deployment_created_ms = 0;  // as BatchFile's
  // The seconds after their creation the batch's output and error files are deleted
  // (output_expires_after, anchored at created_at); 0: kept until deleted.
  int64_t output_expires_after_s = 0;
  std::string completion_window = "24h";
  std::string metadata_json = "null";  // the client's metadata object, as JSON
  BatchStatus status = BatchStatus::Validating;
  std::vector<BatchError> errors;
  std::string output_file_id;  // "" until finalized
  std::string error_file_id;
  int64_t created_ms = 0, in_progress_ms = 0, expires_ms = 0, finalizing_ms = 0, completed_ms = 0, failed_ms = 0,
          expired_ms = 0, cancelling_ms = 0, cancelled_ms = 0;
  int total = 0, completed = 0, failed = 0;
};

enum class LineState { Pending, Leased, Done, Failed };

// One input line of a batch: where its request is in the input file, and once it ended, the
// exact line it contributes to the output file (Done) or the error file (Failed). The result is
// recorded in the same transaction that ends the line, so a hub that dies at any moment resumes
// with every line either ended once or still to run.
struct BatchLine {
  std::string batch_id;
  int line = 0;  // 1-based, as in the input file
  std::string custom_id;
  uint64_t offset = 0;  // the line's bytes in the input file
  uint32_t length = 0;
  LineState state = LineState::Pending;
  int attempts = 0;
  std::string result;  // the output or error file's JSON line (no newline)
};

}  // namespace cellserve::fleet
