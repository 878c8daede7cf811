#include "fleet/hub/speed_probe.h"

#include <algorithm>

#include <boost/json.hpp>

#include "fleet/hub/route_choice.h"

namespace cellserve::fleet {
namespace {

namespace json = boost::json;

size_t string_size(const json::object& o, std::string_view key) {
  const json::value* v = o.if_contains(key);
  return v != nullptr && v->is_string() ? v->as_string().size() : 0;
}

// Bytes of generated text in one message or delta: content, reasoning and tool call arguments.
size_t message_text_bytes(const json::object& m) {
  size_t n = string_size(m, "content") + string_size(m, "reasoning_content");
  const json::value* calls = m.if_contains("tool_calls");
  if (calls == nullptr || !calls->is_array()) return n;
  for (const json::value& c : calls->as_array()) {
    const json::value* f = c.is_object() ? c.as_object().if_contains("function") : nullptr;
    if (f != nullptr && f->is_object()) n += string_size(f->as_object(), "arguments");
  }
  return n;
}

// Bytes of generated text in an answer or a stream event (chat completions and completions).
size_t text_bytes(const json::object& answer) {
  const json::value* choices = answer.if_contains("choices");
  if (choices == nullptr || !choices->is_array()) return 0;
  size_t n = 0;
  for (const json::value& c : choices->as_array()) {
    if (!c.is_object()) continue;
    const json::object& choice = c.as_object();
    n += string_size(choice, "text");
    for (const char* key : {"message", "delta"}) {
      const json::value* m = choice.if_contains(key);
      if (m != nullptr && m->is_object()) n += message_text_bytes(m->as_object());
    }
  }
  return n;
}

// A usage count: a non-negative integer, else -1.
double usage_count(const json::object& usage, std::string_view key) {
  const json::value* v = usage.if_contains(key);
  if (v == nullptr) return -1;
  if (v->is_int64() && v->as_int64() >= 0) return static_cast<double>(v->as_int64());
  if (v->is_uint64()) return static_cast<double>(v->as_uint64());
  return -1;
}

}  // namespace

void SpeedProbe::note_event(std::string_view json_text) {
  boost::system::error_code ec;
  const json::value v = json::parse(json_text, ec);
  if (ec || !v.is_object()) return;
  const size_t text = text_bytes(v.as_object());
  text_bytes_ += static_cast<double>(text);
  if (text > 0) {
    ++text_events_;
    if (!first_token_) first_token_ = clock_.now();
  }
  const json::value* usage = v.as_object().if_contains("usage");
  if (usage == nullptr || !usage->is_object()) return;
  usage_prompt_ = usage_count(usage->as_object(), "prompt_tokens");
  usage_completion_ = usage_count(usage->as_object(), "completion_tokens");
}

void SpeedProbe::send(int status, std::string_view type, std::string body, const net::HeaderList& headers) {
  status_ = status;
  ended_ = clock_.now();
  complete_ = true;
  if (status == 200) note_event(body);
  out_.send(status, type, std::move(body), headers);
}

bool SpeedProbe::begin_stream(int status, std::string_view type, const net::HeaderList& headers) {
  status_ = status;
  streamed_ = true;
  return out_.begin_stream(status, type, headers);
}

bool SpeedProbe::write(std::string_view data) {
  // SSE events, "data: {...}\n\n"; a write may carry several (the tunnel coalesces them).
  for (size_t at = data.find("data: {"); at != std::string_view::npos; at = data.find("data: {", at + 1)) {
    const size_t end = data.find('\n', at);
    note_event(data.substr(at + 6, end == std::string_view::npos ? data.npos : end - at - 6));
  }
  return out_.write(data);
}

void SpeedProbe::end_stream() {
  ended_ = clock_.now();
  complete_ = true;
  out_.end_stream();
}

void SpeedProbe::abort_stream() {
  complete_ = false;
  out_.abort_stream();
}

double SpeedProbe::seconds_since_start(Clock::time_point t) const {
  return std::chrono::duration<double>(t - started_).count();
}

std::optional<AnswerSample> SpeedProbe::answer_sample(size_t request_bytes) const {
  if (!complete_ || status_ != 200) return std::nullopt;
  AnswerSample s;
  const double bytes = static_cast<double>(request_bytes);
  s.prompt_tokens = usage_prompt_ >= 0 ? std::min(usage_prompt_, bytes) : bytes / kBytesPerToken;
  const double fallback = streamed_ ? text_events_ : text_bytes_ / kBytesPerToken;
  s.completion_tokens = std::min(usage_completion_ >= 0 ? usage_completion_ : fallback, text_bytes_);
  s.streamed = streamed_;
  if (streamed_) {
    if (!first_token_) return std::nullopt;  // a stream without text shows no speed
    s.first_token_s = seconds_since_start(*first_token_);
  }
  s.total_s = seconds_since_start(ended_);
  return s;
}

}  // namespace cellserve::fleet
