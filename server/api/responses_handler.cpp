// POST /v1/responses: OpenAI's Responses API served as a chat completion (responses_request.h),
// answered as a "response" object or streamed as its typed events (responses_output.h).
#include <chrono>
#include <cmath>
#include <optional>
#include <variant>

#include <boost/json/serialize.hpp>

#include "server/api/completion_bodies.h"
#include "server/api/handlers.h"
#include "server/api/job_io.h"
#include "server/api/json_fields.h"
#include "server/api/reply.h"
#include "server/api/request_parsing.h"
#include "server/api/responses_output.h"
#include "server/api/responses_request.h"
#include "server/api/tool_use.h"

namespace cellserve::server {

namespace json = boost::json;

namespace {

constexpr std::string_view kResponsesEndpoint = "/v1/responses";

// A float sampling value as the request wrote it: 0.95f reads back as 0.949999988 in double,
// and six decimals are more than any request gives.
double echoed(float v) { return std::round(static_cast<double>(v) * 1e6) / 1e6; }

// What the response object echoes: the request's settings, the sampling values in effect.
ResponseSettings settings_of(const json::object& body, const ChatCompletionRequest& r) {
  ResponseSettings s;
  if (const json::value* v = field(body, "instructions")) s.instructions = *v;
  if (const json::value* v = field(body, "max_output_tokens")) s.max_output_tokens = *v;
  if (const json::value* v = field(body, "parallel_tool_calls"); v != nullptr && v->is_bool())
    s.parallel_tool_calls = v->as_bool();
  s.temperature = echoed(r.job.sampling.temperature);
  s.top_p = echoed(r.job.sampling.top_p);
  if (const json::value* text = field(body, "text"); text != nullptr && text->is_object()) {
    if (const json::value* f = field(text->as_object(), "format"); f != nullptr && f->is_object())
      s.text_format = f->as_object();
  }
  if (const json::value* v = field(body, "tool_choice")) s.tool_choice = *v;
  if (const json::value* v = field(body, "tools"); v != nullptr && v->is_array()) s.tools = v->as_array();
  if (const json::value* v = field(body, "metadata"); v != nullptr && v->is_object()) s.metadata = v->as_object();
  if (const json::value* v = field(body, "user")) s.user = *v;
  return s;
}

const char* status_of(FinishReason finish) { return finish == FinishReason::Length ? "incomplete" : "completed"; }

// The stream events of the tool-call parser's events, through the output builder.
std::vector<json::object> apply(ResponseOutput& out, std::vector<tool_calls::StreamEvent> events) {
  std::vector<json::object> sent;
  const auto add = [&](std::vector<json::object> more) {
    for (json::object& e : more) sent.push_back(std::move(e));
  };
  for (tool_calls::StreamEvent& e : events) {
    if (auto* text = std::get_if<tool_calls::ContentDelta>(&e)) {
      add(out.text(text->text));
    } else if (auto* start = std::get_if<tool_calls::CallStart>(&e)) {
      add(out.call_start(start->id, start->name));
    } else if (auto* args = std::get_if<tool_calls::ArgumentsDelta>(&e)) {
      add(out.call_arguments(args->text));
    }
  }
  return sent;
}

void answer_whole(const ApiContext& ctx, net::ResponseWriter& writer, const ChatCompletionRequest& r,
                  const ResponseMeta& meta, const ResponseSettings& settings) {
  const std::optional<ChoiceJobs> jobs = submit_choices(ctx, kResponsesEndpoint, writer, r.job, 1);
  if (!jobs) return;
  std::optional<std::vector<Collected>> all = collect_all(*jobs, writer);
  if (!all) return count_request(ctx, kResponsesEndpoint, kClientClosed);
  const Collected& c = all->front();
  if (ended_without_answer(c.done.finish)) return reply_error(ctx, kResponsesEndpoint, writer, job_error(c.done));
  ResponseOutput out;
  const std::string text = sanitize_utf8(c.text);
  if (r.tool_use.read_calls) {
    const tool_calls::ParsedMessage parsed = tool_calls::parse_tool_calls(r.tool_use.format, text, r.tool_use.tools);
    (void)out.text(parsed.content);
    for (const tool_calls::ToolCall& call : parsed.tool_calls) {
      (void)out.call_start(call.id, call.name);
      (void)out.call_arguments(call.arguments);
    }
  } else {
    (void)out.text(text);
  }
  const char* status = status_of(c.done.finish);
  (void)out.finish(status);
  json::object body = response_object(meta, settings, status, out.items(), &c.done.usage);
  body["timings"] = timings_json(c.done.timings);  // llama-server's, as on chat
  reply_json(ctx, kResponsesEndpoint, writer, 200, json::serialize(body));
}

void answer_stream(const ApiContext& ctx, net::ResponseWriter& writer, const ChatCompletionRequest& r,
                   const ResponseMeta& meta, const ResponseSettings& settings) {
  const std::optional<ChoiceJobs> jobs = submit_choices(ctx, kResponsesEndpoint, writer, r.job, 1);
  if (!jobs) return;
  int64_t sequence = 0;
  const auto frame = [&sequence](const json::object& event) { return response_event(event, sequence++); };
  ResponseOutput out;
  std::optional<tool_calls::ToolCallStream> calls;
  if (r.tool_use.read_calls) calls.emplace(r.tool_use.format, r.tool_use.tools);
  const json::object started = response_object(meta, settings, "in_progress", json::array{}, nullptr);
  const std::vector<std::string> opening{frame({{"type", "response.created"}, {"response", started}}),
                                         frame({{"type", "response.in_progress"}, {"response", started}})};
  ChoiceStream s;
  s.text_chunks = [&](size_t, const JobEvent& e) {
    const std::string text = sanitize_utf8(e.text);
    return calls ? apply(out, calls->feed(text)) : out.text(text);
  };
  s.final_chunks = [&](size_t, const JobEvent& done) {
    std::vector<json::object> events;
    if (calls) events = apply(out, calls->finish());
    const char* status = status_of(done.finish);
    for (json::object& e : out.finish(status)) events.push_back(std::move(e));
    json::object response = response_object(meta, settings, status, out.items(), &done.usage);
    response["timings"] = timings_json(done.timings);
    const char* type = done.finish == FinishReason::Length ? "response.incomplete" : "response.completed";
    events.push_back(json::object{{"type", type}, {"response", std::move(response)}});
    return events;
  };
  s.frame = frame;
  // OpenAI's stream error event: {"type": "error", "code", "message", "param"}.
  s.error_frame = [&](const net::ApiError& e) {
    return frame({{"type", "error"},
                  {"code", e.code.empty() ? json::value(e.type) : json::value(e.code)},
                  {"message", e.message},
                  {"param", e.param.empty() ? json::value(nullptr) : json::value(e.param)}});
  };
  stream_choices(ctx, kResponsesEndpoint, writer, *jobs, opening, s, /*done_marker=*/false);
}

}  // namespace

void handle_responses(const ApiContext& ctx, const net::HttpRequest& req, net::ResponseWriter& writer) {
  auto fail = [&](const auto& e) { reply_error(ctx, kResponsesEndpoint, writer, e); };
  if (ctx.tokenizer == nullptr) return fail(unavailable("the model is not loaded"));
  const auto received_at = std::chrono::steady_clock::now();
  const auto deadline = requested_deadline(req, received_at);
  if (!deadline.ok()) return fail(net::api_error_from_status(deadline.status()));
  json::object body;
  json::object chat;
  ChatCompletionRequest r;
  if (Status s = parse_json_object(req.body, &body); !s.ok()) return fail(s);
  if (Status s = responses_to_chat(body, &chat); !s.ok()) return fail(s);
  if (Status s = parse_chat_request(chat, ctx, &r); !s.ok()) return fail(responses_error(s));
  r.job.deadline = *deadline;
  r.job.received_at = received_at;
  r.job.cache_partition = cache_partition(req);
  if (Status s = build_chat_prompt(ctx, &r); !s.ok()) return fail(responses_error(s));
  const auto n_prompt = static_cast<int64_t>(r.job.prompt.size());
  if (Status s =
          fit_context(n_prompt, r.max_tokens, default_max_tokens(ctx, -1), ctx.n_ctx, "input", &r.job.max_tokens);
      !s.ok())
    return fail(responses_error(s));
  const ResponseMeta meta = response_meta(ctx, "resp_");
  const ResponseSettings settings = settings_of(body, r);
  if (r.stream) return answer_stream(ctx, writer, r, meta, settings);
  answer_whole(ctx, writer, r, meta, settings);
}

}  // namespace cellserve::server
