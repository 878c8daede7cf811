// The Responses API's answer: the `output` items (an assistant "message" with its "output_text",
// and a "function_call" item per tool call) built from the generated text as it arrives, the
// stream events that announce them, and the whole "response" object. One builder serves a whole
// answer (its events are dropped) and a stream (its events are sent), so both give the same items.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>

#include "server/api/completion_bodies.h"
#include "server/scheduler/job.h"

namespace cellserve::server {

// One answer's output items. Each call returns the stream events it causes, without
// "sequence_number" (the stream numbers them as it sends).
class ResponseOutput {
 public:
  // Generated text for the assistant's message (opened when none is).
  std::vector<boost::json::object> text(std::string_view piece);
  // A tool call begins (the open item, if any, ends); its arguments follow in pieces.
  std::vector<boost::json::object> call_start(std::string_view call_id, std::string_view name);
  std::vector<boost::json::object> call_arguments(std::string_view piece);
  // The answer ended: the open item ends with `status` ("completed" or "incomplete"); an answer
  // with no item at all gets an empty message, so every answer has its output_text.
  std::vector<boost::json::object> finish(std::string_view status);

  const boost::json::array& items() const { return items_; }

 private:
  enum class Open { None, Message, Call };
  std::vector<boost::json::object> open_message();
  std::vector<boost::json::object> close(std::string_view status);

  boost::json::array items_;  // the finished items, in order
  Open open_ = Open::None;
  boost::json::object item_;  // the open item
  std::string body_;          // its text, or its arguments
};

// What the response object repeats from the request (OpenAI echoes its settings).
struct ResponseSettings {
  boost::json::value instructions = nullptr;
  boost::json::value max_output_tokens = nullptr;
  bool parallel_tool_calls = true;
  double temperature = 0;
  double top_p = 0;
  boost::json::object text_format{{"type", "text"}};
  boost::json::value tool_choice = "auto";
  boost::json::array tools;
  boost::json::object metadata;
  boost::json::value user = nullptr;
};

// {"id": "resp_...", "object": "response", "created_at", "status", "error": null,
// "incomplete_details", "model", "output", the settings, "previous_response_id": null,
// "store": false, "truncation": "disabled", "usage"}. `status` "in_progress" (no usage yet),
// "completed", or "incomplete" (incomplete_details {"reason": "max_output_tokens"}).
boost::json::object response_object(const ResponseMeta& meta, const ResponseSettings& settings, std::string_view status,
                                    const boost::json::array& output, const Usage* usage);

// {"input_tokens", "input_tokens_details": {"cached_tokens"}, "output_tokens",
// "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens"}.
boost::json::object responses_usage_json(const Usage& u);

// One Server-Sent Event of a Responses stream: "event: <type>" and the data line, with
// "sequence_number" set to `sequence`.
std::string response_event(boost::json::object event, int64_t sequence);

}  // namespace cellserve::server
