// Response JSON for the OpenAI endpoints: whole chat/text completions, Server-Sent-Events chunks,
// logprobs objects (chat and the legacy completions shape) and usage. Pure functions; every
// string they put into JSON is valid UTF-8 (token texts may be partial UTF-8 sequences, see
// sanitize_utf8).
#pragma once

#include <cstdint>
#include <ctime>
#include <span>
#include <string>
#include <string_view>

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include "server/scheduler/job.h"

namespace cellserve::server {

struct SlotState;

// `s` with every ill-formed UTF-8 sequence replaced by U+FFFD (one per maximal ill-formed
// subpart, as WHATWG / Python's errors="replace").
std::string sanitize_utf8(std::string_view s);
bool is_valid_utf8(std::string_view s);

// `prefix` + 24 random hex digits, e.g. "chatcmpl-3f9a...". Thread-safe.
std::string make_response_id(std::string_view prefix);

// What every response object of one request repeats.
struct ResponseMeta {
  std::string id;  // "chatcmpl-..." / "cmpl-..."
  std::time_t created = 0;
  std::string model;
};

// "stop" / "length" (Cancelled and Error never reach a response body; they map to "stop").
const char* openai_finish_reason(FinishReason r);

// {"prompt_tokens", "completion_tokens", "total_tokens", "prompt_tokens_details": {"cached_tokens"}}.
boost::json::object usage_json(const Usage& u);

// Chat logprobs: {"content": [{"token", "logprob", "bytes", "top_logprobs": [{"token", "logprob",
// "bytes"}]}]}. "token" is the sanitized text, "bytes" the raw bytes.
boost::json::object chat_logprobs_json(std::span<const GeneratedToken> tokens);

// Legacy completions logprobs: {"tokens", "token_logprobs", "top_logprobs": [{text: logprob}],
// "text_offset"}. *text_offset is the byte offset of the first token in the choice's text and
// is advanced past the tokens (so consecutive stream chunks continue the count).
boost::json::object legacy_logprobs_json(std::span<const GeneratedToken> tokens, int64_t* text_offset);

// llama-server's "timings": {"cache_n", "prompt_n", "prompt_ms", "prompt_per_token_ms",
// "prompt_per_second", "predicted_n", "predicted_ms", "predicted_per_token_ms",
// "predicted_per_second"}. A rate whose count or time is 0 is 0 (never inf or NaN).
boost::json::object timings_json(const Timings& t);

// {"role": "assistant", "content": content} (content made valid UTF-8).
boost::json::object plain_message(std::string_view content);

// One choice of a whole chat.completion: `message` (plain_message() or one with tool_calls), its
// finish_reason, `logprobs` null or chat_logprobs_json().
boost::json::object chat_choice(int64_t index, boost::json::object message, const char* finish_reason,
                                boost::json::value logprobs);
// One choice of a whole text_completion.
boost::json::object text_choice(int64_t index, std::string_view text, FinishReason finish, boost::json::value logprobs);
// A whole chat.completion or text_completion with these choices (n of them for "n": n);
// "timings" when `timings` is set.
std::string chat_completion_body(const ResponseMeta& meta, boost::json::array choices, const Usage& usage,
                                 const Timings* timings = nullptr);
std::string text_completion_body(const ResponseMeta& meta, boost::json::array choices, const Usage& usage,
                                 const Timings* timings = nullptr);
// The usage of n choices of one prompt: the prompt counted once, the completions summed.
Usage choices_usage(std::span<const Usage> each);

// A whole chat.completion with one choice (chat_choice(0, ...)).
std::string chat_completion_body(const ResponseMeta& meta, boost::json::object message, const char* finish_reason,
                                 boost::json::value logprobs, const Usage& usage, const Timings* timings = nullptr);

// A whole text_completion; `logprobs` null or legacy_logprobs_json(); "timings" when set.
std::string text_completion_body(const ResponseMeta& meta, std::string_view text, FinishReason finish,
                                 boost::json::value logprobs, const Usage& usage, const Timings* timings = nullptr);

// llama-server's stop_type: "eos" (end-of-generation token, or no token left), "word" (a stop
// string), "limit" (n_predict or the context).
const char* llama_stop_type(FinishReason finish, std::string_view stopping_word);

// The job's settings as /completion's "generation_settings" (llama-server's names).
boost::json::object generation_settings_json(const GenerationJob& job, bool stream);

// What /completion's final object repeats from the request.
struct LlamaCompletionMeta {
  std::string model;
  std::string prompt;                       // the prompt text (token ids detokenized)
  int64_t n_prompt = 0;                     // tokens_evaluated
  boost::json::object generation_settings;  // generation_settings_json()
};

// /completion's "completion_probabilities" (n_probs): per generated token {"id", "token",
// "bytes", "logprob", "top_logprobs": [{"id", "token", "bytes", "logprob"}]}, llama-server's shape.
boost::json::array llama_probabilities_json(std::span<const GeneratedToken> tokens);

// One /completion stream chunk: {"index": 0, "content", "tokens", "stop": false, "id_slot": -1,
// "tokens_predicted", "tokens_evaluated"}.
boost::json::object llama_completion_chunk(std::string_view content, std::span<const int32_t> ids, int64_t n_predicted,
                                           int64_t n_evaluated);

// /completion's whole answer (or, with content "" and no ids, a stream's last chunk):
// {"index", "content", "tokens", "id_slot", "stop": true, "model", "tokens_predicted",
// "tokens_evaluated", "generation_settings", "prompt", "truncated", "stop_type",
// "stopping_word", "timings"}.
boost::json::object llama_completion_final(const LlamaCompletionMeta& meta, std::string_view content,
                                           std::span<const int32_t> ids, const JobEvent& done);

// GET /slots: [{"id", "is_processing", "n_ctx", and while processing "id_task",
// "n_prompt_tokens", "n_prompt_tokens_processed", "n_prompt_tokens_cache", "params",
// "next_token": [{"has_next_token", "n_remain", "n_decoded"}]}].
boost::json::array slots_json(std::span<const SlotState> states);

// One chat.completion.chunk with a single choice, number `index`. `finish_reason` null or a
// string. With `include_usage` the chunk carries "usage": null.
boost::json::object chat_chunk(const ResponseMeta& meta, boost::json::object delta, boost::json::value logprobs,
                               boost::json::value finish_reason, bool include_usage, int64_t index = 0);

// One text_completion chunk with a single choice, number `index`.
boost::json::object text_completion_chunk(const ResponseMeta& meta, std::string_view text, boost::json::value logprobs,
                                          boost::json::value finish_reason, bool include_usage, int64_t index = 0);

// The final usage chunk: "choices": [] and "usage". `object` is "chat.completion.chunk" or
// "text_completion".
boost::json::object usage_chunk(const ResponseMeta& meta, std::string_view object, const Usage& usage);

// "data: <json>\n\n".
std::string sse_data(const boost::json::value& v);
inline constexpr std::string_view kSseDone = "data: [DONE]\n\n";

}  // namespace cellserve::server
