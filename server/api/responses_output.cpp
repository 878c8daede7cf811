// The Responses API's output items, stream events and response object (responses_output.h).
#include "server/api/responses_output.h"

#include <boost/json/serialize.hpp>

namespace cellserve::server {

namespace json = boost::json;

namespace {

json::object output_text(std::string_view text) {
  return json::object{
      {"type", "output_text"}, {"text", text}, {"annotations", json::array{}}, {"logprobs", json::array{}}};
}

}  // namespace

std::vector<json::object> ResponseOutput::open_message() {
  const auto index = static_cast<int64_t>(items_.size());
  open_ = Open::Message;
  body_.clear();
  item_ = json::object{{"id", make_response_id("msg_")},
                       {"type", "message"},
                       {"status", "in_progress"},
                       {"role", "assistant"},
                       {"content", json::array{}}};
  std::vector<json::object> events;
  events.push_back(json::object{{"type", "response.output_item.added"}, {"output_index", index}, {"item", item_}});
  events.push_back(
      json::object{{"type", "response.content_part.added"},
                   {"item_id", item_.at("id")},
                   {"output_index", index},
                   {"content_index", 0},
                   {"part", json::object{{"type", "output_text"}, {"text", ""}, {"annotations", json::array{}}}}});
  return events;
}

std::vector<json::object> ResponseOutput::text(std::string_view piece) {
  std::vector<json::object> events;
  if (piece.empty()) return events;
  if (open_ == Open::Call) events = close("completed");
  if (open_ == Open::None)
    for (json::object& e : open_message()) events.push_back(std::move(e));
  const auto index = static_cast<int64_t>(items_.size());
  body_ += piece;
  events.push_back(json::object{{"type", "response.output_text.delta"},
                                {"item_id", item_.at("id")},
                                {"output_index", index},
                                {"content_index", 0},
                                {"delta", piece},
                                {"logprobs", json::array{}}});
  return events;
}

std::vector<json::object> ResponseOutput::call_start(std::string_view call_id, std::string_view name) {
  std::vector<json::object> events = close("completed");
  open_ = Open::Call;
  body_.clear();
  item_ = json::object{{"id", make_response_id("fc_")},
                       {"type", "function_call"},
                       {"status", "in_progress"},
                       {"call_id", call_id},
                       {"name", name},
                       {"arguments", ""}};
  events.push_back(json::object{
      {"type", "response.output_item.added"}, {"output_index", static_cast<int64_t>(items_.size())}, {"item", item_}});
  return events;
}

std::vector<json::object> ResponseOutput::call_arguments(std::string_view piece) {
  if (open_ != Open::Call || piece.empty()) return {};
  body_ += piece;
  return {json::object{{"type", "response.function_call_arguments.delta"},
                       {"item_id", item_.at("id")},
                       {"output_index", static_cast<int64_t>(items_.size())},
                       {"delta", piece}}};
}

std::vector<json::object> ResponseOutput::close(std::string_view status) {
  std::vector<json::object> events;
  const auto index = static_cast<int64_t>(items_.size());
  if (open_ == Open::Message) {
    events.push_back(json::object{{"type", "response.output_text.done"},
                                  {"item_id", item_.at("id")},
                                  {"output_index", index},
                                  {"content_index", 0},
                                  {"text", body_},
                                  {"logprobs", json::array{}}});
    events.push_back(json::object{{"type", "response.content_part.done"},
                                  {"item_id", item_.at("id")},
                                  {"output_index", index},
                                  {"content_index", 0},
                                  {"part", output_text(body_)}});
    item_["content"] = json::array{output_text(body_)};
  } else if (open_ == Open::Call) {
    events.push_back(json::object{{"type", "response.function_call_arguments.done"},
                                  {"item_id", item_.at("id")},
                                  {"output_index", index},
                                  {"name", item_.at("name")},
                                  {"arguments", body_}});
    item_["arguments"] = body_;
  } else {
    return events;
  }
  item_["status"] = status;
  events.push_back(json::object{{"type", "response.output_item.done"}, {"output_index", index}, {"item", item_}});
  items_.push_back(std::move(item_));
  item_ = {};
  body_.clear();
  open_ = Open::None;
  return events;
}

std::vector<json::object> ResponseOutput::finish(std::string_view status) {
  std::vector<json::object> events;
  if (open_ == Open::None && items_.empty()) events = open_message();  // nothing generated: an empty message
  for (json::object& e : close(status)) events.push_back(std::move(e));
  return events;
}

json::object responses_usage_json(const Usage& u) {
  return json::object{{"input_tokens", u.prompt_tokens},
                      {"input_tokens_details", json::object{{"cached_tokens", u.cached_tokens}}},
                      {"output_tokens", u.completion_tokens},
                      {"output_tokens_details", json::object{{"reasoning_tokens", 0}}},
                      {"total_tokens", u.prompt_tokens + u.completion_tokens}};
}

json::object response_object(const ResponseMeta& meta, const ResponseSettings& settings, std::string_view status,
                             const json::array& output, const Usage* usage) {
  json::object r{{"id", meta.id},
                 {"object", "response"},
                 {"created_at", static_cast<int64_t>(meta.created)},
                 {"status", status},
                 {"error", nullptr},
                 {"incomplete_details", nullptr},
                 {"instructions", settings.instructions},
                 {"max_output_tokens", settings.max_output_tokens},
                 {"model", meta.model},
                 {"output", output},
                 {"parallel_tool_calls", settings.parallel_tool_calls},
                 {"previous_response_id", nullptr},
                 {"reasoning", json::object{{"effort", nullptr}, {"summary", nullptr}}},
                 {"store", false},
                 {"temperature", settings.temperature},
                 {"text", json::object{{"format", settings.text_format}}},
                 {"tool_choice", settings.tool_choice},
                 {"tools", settings.tools},
                 {"top_p", settings.top_p},
                 {"truncation", "disabled"},
                 {"usage", usage != nullptr ? json::value(responses_usage_json(*usage)) : json::value(nullptr)},
                 {"user", settings.user},
                 {"metadata", settings.metadata}};
  if (status == "incomplete") r["incomplete_details"] = json::object{{"reason", "max_output_tokens"}};
  return r;
}

std::string response_event(json::object event, int64_t sequence) {
  event["sequence_number"] = sequence;
  const json::value* type = event.if_contains("type");
  std::string out = "event: ";
  out += type != nullptr && type->is_string() ? std::string_view(type->as_string()) : std::string_view("message");
  out += "\ndata: ";
  out += json::serialize(event);
  out += "\n\n";
  return out;
}

}  // namespace cellserve::server
