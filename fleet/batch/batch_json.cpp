#include "fleet/batch/batch_json.h"

#include <boost/json.hpp>

#include "fleet/crypto/identity.h"

namespace cellserve::fleet {
namespace {

namespace json = boost::json;

json::value seconds_or_null(int64_t ms) { return ms > 0 ? json::value(ms / 1000) : json::value(nullptr); }
json::value id_or_null(const std::string& id) { return id.empty() ? json::value(nullptr) : json::value(id); }

}  // namespace

json::object file_json(const BatchFile& f) {
  return json::object{{"id", f.id},
                      {"object", "file"},
                      {"bytes", f.bytes},
                      {"created_at", f.created_ms / 1000},
                      {"expires_at", f.expires_ms > 0 ? json::value(f.expires_ms / 1000) : json::value(nullptr)},
                      {"filename", f.filename},
                      {"purpose", f.purpose},
                      {"status", "processed"},
                      {"status_details", nullptr}};
}

json::object batch_json(const Batch& b) {
  json::value errors = nullptr;
  if (!b.errors.empty()) {
    json::array data;
    for (const BatchError& e : b.errors) {
      data.push_back(json::object{{"code", e.code},
                                  {"message", e.message},
                                  {"param", nullptr},
                                  {"line", e.line > 0 ? json::value(e.line) : json::value(nullptr)}});
    }
    errors = json::object{{"object", "list"}, {"data", std::move(data)}};
  }
  boost::system::error_code ec;
  json::value metadata = json::parse(b.metadata_json, ec);
  if (ec) metadata = nullptr;
  return json::object{
      {"id", b.id},
      {"object", "batch"},
      {"endpoint", b.endpoint},
      {"errors", std::move(errors)},
      {"input_file_id", b.input_file_id},
      {"completion_window", b.completion_window},
      {"status", batch_status_name(b.status)},
      {"output_file_id", id_or_null(b.output_file_id)},
      {"error_file_id", id_or_null(b.error_file_id)},
      {"created_at", b.created_ms / 1000},
      {"in_progress_at", seconds_or_null(b.in_progress_ms)},
      {"expires_at", seconds_or_null(b.expires_ms)},
      {"finalizing_at", seconds_or_null(b.finalizing_ms)},
      {"completed_at", seconds_or_null(b.completed_ms)},
      {"failed_at", seconds_or_null(b.failed_ms)},
      {"expired_at", seconds_or_null(b.expired_ms)},
      {"cancelling_at", seconds_or_null(b.cancelling_ms)},
      {"cancelled_at", seconds_or_null(b.cancelled_ms)},
      {"request_counts", json::object{{"total", b.total}, {"completed", b.completed}, {"failed", b.failed}}},
      {"metadata", std::move(metadata)}};
}

json::object list_json(json::array data, bool has_more) {
  json::value first = nullptr;
  json::value last = nullptr;
  if (!data.empty()) {
    first = data.front().as_object().at("id");
    last = data.back().as_object().at("id");
  }
  return json::object{
      {"object", "list"}, {"data", std::move(data)}, {"first_id", first}, {"last_id", last}, {"has_more", has_more}};
}

json::value batch_body_value(std::string_view body) {
  boost::system::error_code ec;
  json::value parsed = json::parse(body, ec);
  if (ec) return json::value(json::string(body));
  return parsed;
}

std::string batch_result_line(const std::string& custom_id, int status_code, const std::string& body,
                              std::string_view signature) {
  json::value parsed = batch_body_value(body);
  // Compact JSON is what verify hashes when no exact copy is kept.
  const bool exact = json::serialize(parsed) == body;
  json::object response{
      {"status_code", status_code}, {"request_id", "req_" + random_hex(12)}, {"body", std::move(parsed)}};
  if (!signature.empty()) {
    boost::system::error_code ec;
    json::value record = json::parse(signature, ec);
    if (!ec && record.is_object()) {
      response["cellserve_signature"] = std::move(record);
      if (!exact) response["cellserve_body"] = body;
    }
  }
  return json::serialize(json::object{{"id", "batch_req_" + random_hex(12)},
                                      {"custom_id", custom_id},
                                      {"response", std::move(response)},
                                      {"error", nullptr}});
}

}  // namespace cellserve::fleet
