#include "fleet/batch/batch_store.h"

#include <boost/json.hpp>

#include "fleet/batch/sqlite_batch_store.h"
#include "fleet/crypto/identity.h"

namespace cellserve::fleet {

namespace json = boost::json;

const char* batch_status_name(BatchStatus s) {
  switch (s) {
    case BatchStatus::Validating:
      return "validating";
    case BatchStatus::Failed:
      return "failed";
    case BatchStatus::InProgress:
      return "in_progress";
    case BatchStatus::Finalizing:
      return "finalizing";
    case BatchStatus::Completed:
      return "completed";
    case BatchStatus::Expired:
      return "expired";
    case BatchStatus::Cancelling:
      return "cancelling";
    case BatchStatus::Cancelled:
      return "cancelled";
  }
  return "failed";
}

std::optional<BatchStatus> parse_batch_status(std::string_view name) {
  for (BatchStatus s :
       {BatchStatus::Validating, BatchStatus::Failed, BatchStatus::InProgress, BatchStatus::Finalizing,
        BatchStatus::Completed, BatchStatus::Expired, BatchStatus::Cancelling, BatchStatus::Cancelled}) {
    if (name == batch_status_name(s)) return s;
  }
  return std::nullopt;
}

std::string batch_error_line(const std::string& custom_id, const std::string& code, const std::string& message) {
  return json::serialize(json::object{{"id", "batch_req_" + random_hex(12)},
                                      {"custom_id", custom_id},
                                      {"response", nullptr},
                                      {"error", json::object{{"code", code}, {"message", message}}}});
}

Result<std::unique_ptr<BatchStore>> BatchStore::open(const std::string& path) { return open_sqlite_batch_store(path); }

Result<std::vector<std::string>> BatchStore::results(const std::string& batch_id, LineState state) {
  std::vector<std::string> out;
  CS_RETURN_IF_ERROR(for_each_result(batch_id, state, [&](std::string_view r) {
                       out.emplace_back(r);
                       return Status();
                     }).status());
  return out;
}

}  // namespace cellserve::fleet
