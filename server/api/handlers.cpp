// POST /v1/chat/completions and /v1/completions: parse, render/tokenize, fit the context, submit
// to the scheduler, then answer with the whole completion or stream it as Server-Sent Events.
#include "server/api/handlers.h"

#include <chrono>
#include <ctime>
#include <functional>

#include <boost/json/serialize.hpp>

#include "server/api/completion_bodies.h"
#include "server/api/job_io.h"
#include "server/api/json_fields.h"
#include "server/api/reply.h"
#include "server/api/request_parsing.h"
#include "server/api/tool_use.h"
#include "server/scheduler/scheduler.h"

namespace cellserve::server {

namespace json = boost::json;

namespace {

constexpr std::string_view kChatEndpoint = "/v1/chat/completions";
constexpr std::string_view kCompletionsEndpoint = "/v1/completions";
constexpr std::string_view kLlamaCompletionEndpoint = "/completion";
constexpr int64_t kDefaultCompletionTokens = 16;  // OpenAI's default max_tokens for /v1/completions

// What ends an OpenAI stream once every choice has: with stream_options.include_usage, the usage
// chunk (the choices together) carrying llama-server's "timings" (the first choice's); without,
// nothing (each choice's last chunk carried its timings).
std::vector<json::object> closing_chunks(const ResponseMeta& meta, std::string_view object,
                                         const std::vector<JobEvent>& dones, bool include_usage) {
  std::vector<json::object> chunks;
  if (include_usage) {
    std::vector<Usage> usage;
    for (const JobEvent& d : dones) usage.push_back(d.usage);
    chunks.push_back(usage_chunk(meta, object, choices_usage(usage)));
    chunks.back()["timings"] = timings_json(dones.front().timings);
  }
  return chunks;
}

// A chat answer of r.n choices, whole or streamed; each choice's tool-call markup is read on its own.
void answer_chat(const ApiContext& ctx, net::ResponseWriter& writer, ChatCompletionRequest& r) {
  const bool want_logprobs = r.job.logprobs >= 0;
  const bool include_usage = r.include_usage;
  const ResponseMeta meta = response_meta(ctx, "chatcmpl-");
  const std::optional<ChoiceJobs> jobs = submit_choices(ctx, kChatEndpoint, writer, r.job, r.n);
  if (!jobs) return;
  if (!r.stream) {
    std::optional<std::vector<Collected>> all = collect_all(*jobs, writer);
    if (!all) return count_request(ctx, kChatEndpoint, kClientClosed);
    json::array choices;
    std::vector<Usage> usage;
    for (size_t i = 0; i < all->size(); ++i) {
      Collected& c = (*all)[i];
      if (ended_without_answer(c.done.finish)) {
        cancel_all(*jobs);
        return reply_error(ctx, kChatEndpoint, writer, job_error(c.done));
      }
      json::value logprobs = want_logprobs ? json::value(chat_logprobs_json(c.tokens)) : json::value(nullptr);
      const char* finish = openai_finish_reason(c.done.finish);
      json::object message = plain_message(c.text);
      if (r.tool_use.read_calls) {
        const tool_calls::ParsedMessage parsed =
            tool_calls::parse_tool_calls(r.tool_use.format, sanitize_utf8(c.text), r.tool_use.tools);
        message = assistant_message(parsed);
        finish = tool_finish_reason(parsed, finish);
      }
      choices.push_back(chat_choice(static_cast<int64_t>(i), std::move(message), finish, std::move(logprobs)));
      usage.push_back(c.done.usage);
    }
    return reply_json(ctx, kChatEndpoint, writer, 200,
                      chat_completion_body(meta, std::move(choices), choices_usage(usage), &all->front().done.timings));
  }
  std::vector<std::optional<ToolCallDeltas>> calls(jobs->size());
  if (r.tool_use.read_calls)
    for (auto& c : calls) c.emplace(r.tool_use);
  std::vector<std::string> opening;
  for (size_t i = 0; i < jobs->size(); ++i) {
    opening.push_back(sse_data(chat_chunk(meta, json::object{{"role", "assistant"}, {"content", ""}}, nullptr, nullptr,
                                          include_usage, static_cast<int64_t>(i))));
  }
  ChoiceStream s;
  s.text_chunks = [&](size_t i, const JobEvent& e) -> std::vector<json::object> {
    if (e.text.empty() && (!want_logprobs || e.tokens.empty())) return {};
    const auto index = static_cast<int64_t>(i);
    json::value logprobs = want_logprobs ? json::value(chat_logprobs_json(e.tokens)) : json::value(nullptr);
    if (!calls[i]) {
      return {chat_chunk(meta, json::object{{"content", sanitize_utf8(e.text)}}, std::move(logprobs), nullptr,
                         include_usage, index)};
    }
    // The event's logprobs ride on its first delta (or on an empty one while markup is held).
    std::vector<json::object> deltas = calls[i]->feed(sanitize_utf8(e.text));
    if (deltas.empty() && want_logprobs) deltas.emplace_back();
    std::vector<json::object> chunks;
    for (json::object& d : deltas) {
      chunks.push_back(chat_chunk(meta, std::move(d), std::move(logprobs), nullptr, include_usage, index));
      logprobs = nullptr;
    }
    return chunks;
  };
  s.final_chunks = [&](size_t i, const JobEvent& done) {
    std::vector<json::object> chunks;
    const auto index = static_cast<int64_t>(i);
    const char* finish = openai_finish_reason(done.finish);
    if (calls[i]) {
      for (json::object& d : calls[i]->finish())
        chunks.push_back(chat_chunk(meta, std::move(d), nullptr, nullptr, include_usage, index));
      if (calls[i]->saw_calls() && done.finish == FinishReason::Stop) finish = "tool_calls";
    }
    chunks.push_back(chat_chunk(meta, json::object{}, nullptr, finish, include_usage, index));
    if (!include_usage) chunks.back()["timings"] = timings_json(done.timings);  // else on the usage chunk
    return chunks;
  };
  s.closing = [&](const std::vector<JobEvent>& dones) {
    return closing_chunks(meta, "chat.completion.chunk", dones, include_usage);
  };
  stream_choices(ctx, kChatEndpoint, writer, *jobs, opening, s);
}

void answer_completion(const ApiContext& ctx, net::ResponseWriter& writer, CompletionRequest& r) {
  const bool want_logprobs = r.job.logprobs >= 0;
  const bool include_usage = r.include_usage;
  std::string echo;
  if (r.echo) {
    echo = r.prompt_text ? *r.prompt_text
                         : ctx.tokenizer->detokenize(r.prompt_ids, /*remove_special=*/false, /*unparse_special=*/true);
  }
  const ResponseMeta meta = response_meta(ctx, "cmpl-");
  const std::optional<ChoiceJobs> jobs = submit_choices(ctx, kCompletionsEndpoint, writer, r.job, r.n);
  if (!jobs) return;
  // Each choice's logprobs count text offsets from the start of its own text (echo included).
  std::vector<int64_t> text_offset(jobs->size(), static_cast<int64_t>(echo.size()));
  if (!r.stream) {
    std::optional<std::vector<Collected>> all = collect_all(*jobs, writer);
    if (!all) return count_request(ctx, kCompletionsEndpoint, kClientClosed);
    json::array choices;
    std::vector<Usage> usage;
    for (size_t i = 0; i < all->size(); ++i) {
      Collected& c = (*all)[i];
      if (ended_without_answer(c.done.finish)) {
        cancel_all(*jobs);
        return reply_error(ctx, kCompletionsEndpoint, writer, job_error(c.done));
      }
      json::value logprobs =
          want_logprobs ? json::value(legacy_logprobs_json(c.tokens, &text_offset[i])) : json::value(nullptr);
      choices.push_back(text_choice(static_cast<int64_t>(i), echo + c.text, c.done.finish, std::move(logprobs)));
      usage.push_back(c.done.usage);
    }
    return reply_json(ctx, kCompletionsEndpoint, writer, 200,
                      text_completion_body(meta, std::move(choices), choices_usage(usage), &all->front().done.timings));
  }
  std::vector<std::string> opening;
  if (!echo.empty()) {
    for (size_t i = 0; i < jobs->size(); ++i)
      opening.push_back(
          sse_data(text_completion_chunk(meta, echo, nullptr, nullptr, include_usage, static_cast<int64_t>(i))));
  }
  ChoiceStream s;
  s.text_chunks = [&](size_t i, const JobEvent& e) -> std::vector<json::object> {
    if (e.text.empty() && (!want_logprobs || e.tokens.empty())) return {};
    json::value logprobs =
        want_logprobs ? json::value(legacy_logprobs_json(e.tokens, &text_offset[i])) : json::value(nullptr);
    return {text_completion_chunk(meta, e.text, std::move(logprobs), nullptr, include_usage, static_cast<int64_t>(i))};
  };
  s.final_chunks = [&](size_t i, const JobEvent& done) {
    std::vector<json::object> chunks{text_completion_chunk(meta, "", nullptr, openai_finish_reason(done.finish),
                                                           include_usage, static_cast<int64_t>(i))};
    if (!include_usage) chunks.back()["timings"] = timings_json(done.timings);  // else on the usage chunk
    return chunks;
  };
  s.closing = [&](const std::vector<JobEvent>& dones) {
    return closing_chunks(meta, "text_completion", dones, include_usage);
  };
  stream_choices(ctx, kCompletionsEndpoint, writer, *jobs, opening, s);
}

// llama-server's /completion: the whole answer as one object, or a stream of
// llama_completion_chunk()s ending with llama_completion_final() (content "") and no [DONE].
void answer_llama_completion(const ApiContext& ctx, net::ResponseWriter& writer, LlamaCompletionRequest& r) {
  LlamaCompletionMeta meta;
  meta.model = ctx.model_id;
  meta.prompt = r.prompt_text ? *r.prompt_text
                              : ctx.tokenizer->detokenize(r.prompt_ids, /*remove_special=*/false,
                                                          /*unparse_special=*/true);
  meta.n_prompt = static_cast<int64_t>(r.job.prompt.size());
  meta.generation_settings = generation_settings_json(r.job, r.stream);
  const bool return_tokens = r.return_tokens;
  const bool probabilities = r.n_probs > 0;
  std::shared_ptr<JobEvents> events = submit(ctx, kLlamaCompletionEndpoint, writer, std::move(r.job));
  if (!events) return;
  if (!r.stream) {
    std::vector<int32_t> ids;
    std::vector<GeneratedToken> tokens;
    Collected c;
    for (;;) {  // collect(), keeping the token ids
      std::optional<JobEvent> e = next_event(*events, writer);
      if (!e) return count_request(ctx, kLlamaCompletionEndpoint, kClientClosed);
      if (e->kind == JobEvent::Kind::Done) {
        c.done = std::move(*e);
        break;
      }
      c.text += e->text;
      if (return_tokens) ids.insert(ids.end(), e->token_ids.begin(), e->token_ids.end());
      if (probabilities) tokens.insert(tokens.end(), e->tokens.begin(), e->tokens.end());
    }
    if (ended_without_answer(c.done.finish))
      return reply_error(ctx, kLlamaCompletionEndpoint, writer, job_error(c.done));
    json::object answer = llama_completion_final(meta, c.text, ids, c.done);
    if (probabilities) answer["completion_probabilities"] = llama_probabilities_json(tokens);
    return reply_json(ctx, kLlamaCompletionEndpoint, writer, 200, json::serialize(answer));
  }
  stream_job(
      ctx, kLlamaCompletionEndpoint, writer, *events, {},
      [&](const JobEvent& e) -> std::vector<json::object> {
        if (e.text.empty() && e.token_ids.empty()) return {};
        json::object chunk = llama_completion_chunk(e.text, e.token_ids, e.n_generated, meta.n_prompt);
        if (probabilities) chunk["completion_probabilities"] = llama_probabilities_json(e.tokens);
        return {std::move(chunk)};
      },
      [&](const JobEvent& done) { return std::vector<json::object>{llama_completion_final(meta, "", {}, done)}; },
      /*done_marker=*/false);
}

}  // namespace

void handle_chat_completions(const ApiContext& ctx, const net::HttpRequest& req, net::ResponseWriter& writer) {
  auto fail = [&](const auto& e) { reply_error(ctx, kChatEndpoint, writer, e); };
  if (ctx.tokenizer == nullptr) return fail(unavailable("the model is not loaded"));
  const auto received_at = std::chrono::steady_clock::now();
  const auto deadline = requested_deadline(req, received_at);
  if (!deadline.ok()) return fail(net::api_error_from_status(deadline.status()));
  json::object body;
  ChatCompletionRequest r;
  if (Status s = parse_json_object(req.body, &body); !s.ok()) return fail(s);
  if (Status s = parse_chat_request(body, ctx, &r); !s.ok()) return fail(s);
  r.job.deadline = *deadline;
  r.job.received_at = received_at;
  r.job.cache_partition = cache_partition(req);
  if (Status s = build_chat_prompt(ctx, &r); !s.ok()) return fail(s);
  const auto n_prompt = static_cast<int64_t>(r.job.prompt.size());
  if (Status s =
          fit_context(n_prompt, r.max_tokens, default_max_tokens(ctx, -1), ctx.n_ctx, "messages", &r.job.max_tokens);
      !s.ok())
    return fail(s);
  answer_chat(ctx, writer, r);
}

void handle_completions(const ApiContext& ctx, const net::HttpRequest& req, net::ResponseWriter& writer) {
  auto fail = [&](const auto& e) { reply_error(ctx, kCompletionsEndpoint, writer, e); };
  if (ctx.tokenizer == nullptr) return fail(unavailable("the model is not loaded"));
  const auto received_at = std::chrono::steady_clock::now();
  const auto deadline = requested_deadline(req, received_at);
  if (!deadline.ok()) return fail(net::api_error_from_status(deadline.status()));
  json::object body;
  CompletionRequest r;
  if (Status s = parse_json_object(req.body, &body); !s.ok()) return fail(s);
  if (Status s = parse_completion_request(body, ctx, &r); !s.ok()) return fail(s);
  r.job.deadline = *deadline;
  r.job.received_at = received_at;
  r.job.cache_partition = cache_partition(req);
  if (Status s = build_completion_prompt(ctx, &r); !s.ok()) return fail(s);
  const auto n_prompt = static_cast<int64_t>(r.job.prompt.size());
  if (Status s = fit_context(n_prompt, r.max_tokens, default_max_tokens(ctx, kDefaultCompletionTokens), ctx.n_ctx,
                             "prompt", &r.job.max_tokens);
      !s.ok())
    return fail(s);
  answer_completion(ctx, writer, r);
}

void handle_llama_completion(const ApiContext& ctx, const net::HttpRequest& req, net::ResponseWriter& writer) {
  auto fail = [&](const auto& e) { reply_error(ctx, kLlamaCompletionEndpoint, writer, e); };
  if (ctx.tokenizer == nullptr) return fail(unavailable("the model is not loaded"));
  const auto received_at = std::chrono::steady_clock::now();
  const auto deadline = requested_deadline(req, received_at);
  if (!deadline.ok()) return fail(net::api_error_from_status(deadline.status()));
  json::object body;
  LlamaCompletionRequest r;
  if (Status s = parse_json_object(req.body, &body); !s.ok()) return fail(s);
  if (Status s = parse_llama_completion_request(body, ctx, &r); !s.ok()) return fail(s);
  if (r.n != 1)
    return fail(Status::invalid_param("n", "/completion answers one choice; use /v1/completions for n > 1"));
  r.job.deadline = *deadline;
  r.job.received_at = received_at;
  r.job.cache_partition = cache_partition(req);
  if (Status s = build_completion_prompt(ctx, &r); !s.ok()) return fail(s);
  const auto n_prompt = static_cast<int64_t>(r.job.prompt.size());
  // n_predict -1 asks for the rest of the context, whatever --n-predict says.
  const int64_t default_tokens = r.until_end ? -1 : default_max_tokens(ctx, -1);
  if (Status s = fit_context(n_prompt, r.max_tokens, default_tokens, ctx.n_ctx, "prompt", &r.job.max_tokens); !s.ok())
    return fail(s);
  answer_llama_completion(ctx, writer, r);
}

}  // namespace cellserve::server
