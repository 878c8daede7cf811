#include "fleet/batch/batch_input.h"

#include <fstream>
#include <set>

#include <boost/json.hpp>

namespace cellserve::fleet {
namespace {

namespace json = boost::json;

// The checks of one line; "" when it is valid (then *custom_id is set).
std::string check_line(std::string_view text, const std::string& endpoint,
                       const std::function<Status(std::string_view)>& check_body, std::string* custom_id) {
  boost::system::error_code ec;
  json::parse_options opts;
  opts.max_depth = 64;
  const json::value v = json::parse(text, ec, {}, opts);
  if (ec) return "not valid JSON: " + ec.message();
  if (!v.is_object()) return "each line must be a JSON object";
  const json::object& o = v.as_object();
  const json::value* id = o.if_contains("custom_id");
  if (id == nullptr || !id->is_string() || id->as_string().empty()) return "custom_id must be a non-empty string";
  if (id->as_string().size() > kMaxCustomIdBytes) {
    return "custom_id is longer than " + std::to_string(kMaxCustomIdBytes) + " bytes";
  }
  const json::value* method = o.if_contains("method");
  if (method == nullptr || !method->is_string() || method->as_string() != "POST") return "method must be \"POST\"";
  const json::value* url = o.if_contains("url");
  if (url == nullptr || !url->is_string() || url->as_string() != endpoint) {
    return "url must be \"" + endpoint + "\", the batch's endpoint";
  }
  const json::value* body = o.if_contains("body");
  if (body == nullptr || !body->is_object()) return "body must be a JSON object";
  if (Status s = check_body(json::serialize(*body)); !s.ok()) return "body: " + s.message();
  *custom_id = std::string(id->as_string());
  return "";
}

// Reads the next piece of the file into `into` (at most `room` bytes); 0 at its end.
using ReadPiece = std::function<Result<size_t>(char* into, size_t room)>;

Result<BatchInput> read_input(const ReadPiece& read, const std::string& endpoint,
                              const std::function<Status(std::string_view body)>& check_body) {
  BatchInput out;
  size_t error_count = 0;
  std::set<std::string> seen;
  const auto fail = [&](int line, const std::string& code, const std::string& message) {
    if (++error_count <= kMaxReportedBatchErrors) out.errors.push_back({code, message, line});
  };
  std::string line;
  int number = 0;
  uint64_t offset = 0;    // where `line` starts in the file
  bool too_long = false;  // the current line passed kMaxBatchLineBytes: skip to its end
  std::vector<char> block(1 << 20);
  const auto end_line = [&](uint64_t next_offset) {
    ++number;
    if (too_long) {
      fail(number, "invalid_request", "the line is longer than " + std::to_string(kMaxBatchLineBytes) + " bytes");
    } else if (line.find_first_not_of(" \t\r") != std::string::npos) {
      std::string custom_id;
      const std::string why = check_line(line, endpoint, check_body, &custom_id);
      if (!why.empty()) {
        fail(number, "invalid_request", why);
      } else if (!seen.insert(custom_id).second) {
        fail(number, "duplicate_custom_id", "custom_id \"" + custom_id + "\" is used by an earlier line");
      } else if (out.lines.size() == kMaxBatchLines) {
        fail(number, "too_many_requests", "a batch holds at most " + std::to_string(kMaxBatchLines) + " requests");
      } else {
        BatchLine l;
        l.line = number;
        l.custom_id = std::move(custom_id);
        l.offset = offset;
        l.length = static_cast<uint32_t>(line.size());
        out.lines.push_back(std::move(l));
      }
    }
    line.clear();
    too_long = false;
    offset = next_offset;
  };
  uint64_t position = 0;
  while (true) {
    CS_ASSIGN_OR_RETURN(const size_t got, read(block.data(), block.size()));
    if (got == 0) break;
    size_t start = 0;
    for (size_t i = 0; i < got; ++i) {
      if (block[i] != '\n') continue;
      if (!too_long) line.append(block.data() + start, i - start);
      if (line.size() > kMaxBatchLineBytes) too_long = true;
      end_line(position + i + 1);
      start = i + 1;
    }
    if (!too_long) line.append(block.data() + start, got - start);
    if (line.size() > kMaxBatchLineBytes) {
      too_long = true;
      line.clear();
    }
    position += got;
  }
  if (!line.empty() || too_long) end_line(position);
  if (out.lines.empty() && error_count == 0) out.errors.push_back({"empty_file", "the input file has no requests", 0});
  if (error_count > kMaxReportedBatchErrors) {
    out.errors.push_back(
        {"too_many_errors", std::to_string(error_count - kMaxReportedBatchErrors) + " more lines are invalid", 0});
  }
  return out;
}

}  // namespace

Result<BatchInput> read_batch_input(const std::string& path, const std::string& endpoint,
                                    const std::function<Status(std::string_view body)>& check_body) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::internal("the input file cannot be read");
  return read_input(
      [&](char* into, size_t room) -> Result<size_t> {
        in.read(into, static_cast<std::streamsize>(room));
        if (in.bad()) return Status::internal("the input file cannot be read");
        return static_cast<size_t>(in.gcount());
      },
      endpoint, check_body);
}

Result<BatchInput> read_batch_input(BatchFileReader& file, const std::string& endpoint,
                                    const std::function<Status(std::string_view body)>& check_body) {
  uint64_t position = 0;
  return read_input(
      [&](char* into, size_t room) -> Result<size_t> {
        CS_ASSIGN_OR_RETURN(const size_t got, file.read_at(position, into, room));
        position += got;
        return got;
      },
      endpoint, check_body);
}

}  // namespace cellserve::fleet
