#include "fleet/hub/metered_writer.h"

#include <boost/json.hpp>
#include <charconv>

namespace cellserve::fleet {

void MeteredWriter::note_headers(int status, const net::HeaderList& headers) {
  status_ = status;
  for (const auto& [name, value] : headers) {
    if (name != "X-Cellserve-Replica") continue;
    int index = -1;
    const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), index);
    if (ec == std::errc() && end == value.data() + value.size()) replica_ = index;
  }
}

// The answer's usage.completion_tokens, when `json_text` is an object that has it.
void MeteredWriter::note_usage(std::string_view json_text) {
  if (json_text.find("\"usage\"") == std::string_view::npos) return;  // most stream chunks: skip the parse
  boost::system::error_code ec;
  const boost::json::value v = boost::json::parse(json_text, ec);
  if (ec || !v.is_object()) return;
  const boost::json::value* usage = v.as_object().if_contains("usage");
  if (usage == nullptr || !usage->is_object()) return;
  const boost::json::value* n = usage->as_object().if_contains("completion_tokens");
  if (n != nullptr && n->is_int64()) completion_tokens_ += n->as_int64();
  const boost::json::value* total = usage->as_object().if_contains("total_tokens");
  if (total != nullptr && total->is_int64() && total->as_int64() > 0) total_tokens_ += total->as_int64();
}

void MeteredWriter::send(int status, std::string_view type, std::string body, const net::HeaderList& headers) {
  note_headers(status, headers);
  first_byte_ = Clock::now();
  if (status == 200) note_usage(body);
  out_.send(status, type, std::move(body), headers);
}

bool MeteredWriter::begin_stream(int status, std::string_view type, const net::HeaderList& headers) {
  note_headers(status, headers);
  return out_.begin_stream(status, type, headers);
}

// A data event; the last carries the usage (stream_options.include_usage): "data: {...}".
void MeteredWriter::note_line(std::string_view line) {
  if (!line.starts_with("data: {")) return;
  ++chunks_;
  note_usage(line.substr(6));
}

bool MeteredWriter::write(std::string_view data) {
  if (!first_byte_) first_byte_ = Clock::now();
  // Whole lines are read wherever the writes split them (a tunnel's read may hold several events).
  for (std::string_view rest = data; !rest.empty();) {
    const size_t end = rest.find('\n');
    const std::string_view piece = rest.substr(0, end);
    rest = end == std::string_view::npos ? std::string_view() : rest.substr(end + 1);
    if (!line_too_long_ && line_.size() + piece.size() <= kMaxLineBytes) {
      line_.append(piece);
    } else {
      line_.clear();
      line_too_long_ = true;
    }
    if (end == std::string_view::npos) break;
    if (!line_too_long_) note_line(line_);
    line_.clear();
    line_too_long_ = false;
  }
  return out_.write(data);
}

}  // namespace cellserve::fleet
