// Request bodies of /v1/chat/completions and /v1/completions -> a GenerationJob plus the
// response options (stream, include_usage, echo). Parsing is strict about the types of the
// fields it knows (a wrong type or an out-of-range value is a 400 naming the field) and ignores
// fields it does not know, as SDKs send many. docs/api.md lists the fields.
//
// Every function returns an OK Status on success; a failure names the request field (param())
// and OpenAI's error code where there is one, for net::api_error_from_status() to answer. They
// are pure functions of their arguments and safe to call from many threads.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include "base/status.h"
#include "engine/chat/chat_template.h"
#include "server/api/api_context.h"
#include "server/api/tool_use.h"
#include "server/lora_registry.h"
#include "server/scheduler/job.h"

namespace cellserve::server {

// What both endpoints share.
struct GenerationRequest {
  GenerationJob job;                  // prompt empty until built; max_tokens set by fit_context()
  std::optional<int64_t> max_tokens;  // as the client asked; nullopt when not given
  bool stream = false;
  bool include_usage = false;  // stream_options.include_usage
  int64_t n = 1;               // choices, each its own job (1..kMaxChoices)
};

// The most choices ("n") one request may ask for: each is a job of its own in the queue.
inline constexpr int64_t kMaxChoices = 16;

struct ChatCompletionRequest : GenerationRequest {
  engine::chat::ChatRequest chat;  // normalised messages, tools, chat_template_kwargs as extra_vars
  ToolUse tool_use;                // tools, tool_choice, parallel_tool_calls
};

struct CompletionRequest : GenerationRequest {
  // Exactly one of the two is the prompt: text (tokenized by build_completion_prompt) or ids.
  std::optional<std::string> prompt_text;
  std::vector<int32_t> prompt_ids;
  bool echo = false;
};

// llama-server's native POST /completion: the common fields under the same names, plus
// n_predict (-1: until the end), return_tokens, json_schema.
struct LlamaCompletionRequest : CompletionRequest {
  bool until_end = false;  // "n_predict": -1 (overrides --n-predict)
  bool return_tokens = false;
  int64_t n_probs = 0;  // > 0: "completion_probabilities" with that many alternatives per token
};

// The most alternatives "n_probs" may ask for per token (OpenAI's top_logprobs bound).
inline constexpr int64_t kMaxNProbs = 20;

// `body` as a JSON object. Errors: "invalid JSON: ..." or "the request body must be a JSON object".
// A list of {"id": int, "scale": number} (a request's "lora" field, the body of
// POST /lora-adapters); errors name `param`.
Status parse_lora_scales(const boost::json::value& v, std::string_view param, LoraRegistry::Scales* out);

Status parse_json_object(std::string_view body, boost::json::object* out);

// 404 model_not_found (type invalid_request_error, param "model"), as OpenAI answers a model
// that does not exist; the message names `requested` (cut at 256 bytes) and `served`.
Status model_not_found(std::string_view requested, std::string_view served);

// The fields common to both endpoints (model, n, stream, sampling, stop, logit_bias,
// response_format, grammar (GBNF; one of the two), ignore_eos, max_tokens /
// max_completion_tokens), except logprobs. A "model"
// other than ctx.model_id or an adapter's name is model_not_found() unless ctx.accept_any_model.
Status parse_generation_fields(const boost::json::object& body, const ApiContext& ctx, GenerationRequest* out);

// What the chat template sees of a chat request: messages (normalised), tools,
// chat_template_kwargs (as extra_vars) and add_generation_prompt (default true). /apply-template
// reads only these.
Status parse_chat_messages(const boost::json::object& body, engine::chat::ChatRequest* out);

// The whole chat request: common fields, logprobs/top_logprobs, parse_chat_messages(), then
// the tool fields (parse_tool_use(): tool_choice "none" renders no tools; a forced choice sets
// the job's constraint; reading calls keeps control-token text in the answer). Does not render
// the prompt.
Status parse_chat_request(const boost::json::object& body, const ApiContext& ctx, ChatCompletionRequest* out);

// Renders `chat` with ctx's template, after setting its bos/eos texts to the model's. 400
// (param "messages") when ctx has no template or the template fails (e.g. raise_exception()).
Status render_chat_prompt(const ApiContext& ctx, engine::chat::ChatRequest* chat, engine::chat::MarkedText* out);

// The whole completion request: common fields, prompt shapes, echo, legacy logprobs (0..5).
Status parse_completion_request(const boost::json::object& body, const ApiContext& ctx, CompletionRequest* out);

// Only the "prompt" field of a completion request: a string, ["string"], token ids or [[ids]].
Status parse_prompt(const boost::json::object& body, const ApiContext& ctx, CompletionRequest* out);

// A /completion body: the common fields (parse_generation_fields()), "prompt" as
// parse_prompt(), "n_predict" (-1 or >= 1; wins over max_tokens), "seed": -1 (a random seed, as
// llama.cpp), "return_tokens" and "json_schema" (a schema, as response_format's; not with
// "grammar" or "response_format").
Status parse_llama_completion_request(const boost::json::object& body, const ApiContext& ctx,
                                      LlamaCompletionRequest* out);

// The token budget of a request that sets none: --n-predict (ctx.defaults.n_predict) when the
// server has one, else `endpoint_default` (< 0: the rest of the context).
int64_t default_max_tokens(const ApiContext& ctx, int64_t endpoint_default);

// The boolean query parameter `key` of a URL query ("a=1&b=0"): 1/true or 0/false; *out is left
// as it is when absent; any other value is a 400 naming `key`. The last occurrence wins.
Status query_flag(std::string_view query, std::string_view key, bool* out);

// Renders the chat template (render_chat_prompt()) and tokenizes it into req->job.prompt (BOS
// added only when the template did not write it). 400 when rendering fails.
Status build_chat_prompt(const ApiContext& ctx, ChatCompletionRequest* req);

// Tokenizes req->prompt_text (special tokens parsed, BOS per the vocabulary) or takes
// req->prompt_ids into req->job.prompt. 400 for an empty prompt.
Status build_completion_prompt(const ApiContext& ctx, CompletionRequest* req);

// Decides how many tokens may be generated. With `requested`, n_prompt + requested must fit
// n_ctx (else 400 context_length_exceeded); without, `default_tokens` (< 0: the rest of the
// context) clamped to the room left, which must be at least one token. `param` is "messages"
// or "prompt" (it also picks the wording of the message).
Status fit_context(int64_t n_prompt, std::optional<int64_t> requested, int64_t default_tokens, int64_t n_ctx,
                   std::string_view param, int64_t* max_tokens);

}  // namespace cellserve::server
