// The OpenAI-compatible endpoints (and llama.cpp's /tokenize, /detokenize). The router calls
// them after authentication, on the connection's thread; they may block while the scheduler
// generates. Each answers exactly once (send, or a stream it ends), counts the request into
// ctx.metrics (when set) under its endpoint name, and cancels the job when the client goes away.
// docs/api.md describes the fields and the differences from OpenAI.
#pragma once

#include "net/http_types.h"
#include "server/api/api_context.h"

namespace cellserve::server {

// POST /v1/chat/completions (streamed as Server-Sent Events when "stream": true).
void handle_chat_completions(const ApiContext& ctx, const net::HttpRequest& req, net::ResponseWriter& writer);
// POST /v1/responses (OpenAI's Responses API, served as a chat completion; nothing is stored):
// a "response" object, or its typed events ("event: response.output_text.delta", ...) with
// "stream": true. server/api/responses_request.h says how a request maps onto chat.
void handle_responses(const ApiContext& ctx, const net::HttpRequest& req, net::ResponseWriter& writer);
// POST /v1/completions (legacy text completions).
void handle_completions(const ApiContext& ctx, const net::HttpRequest& req, net::ResponseWriter& writer);
// POST /completion (llama-server's native endpoint): "prompt", "n_predict" and the sampling fields
// under llama.cpp's names -> {"content", "stop", "tokens_predicted", "tokens_evaluated",
// "timings", ...}; streamed as SSE chunks {"content", "stop": false, ...} ending with one
// "stop": true and no [DONE], as llama-server.
void handle_llama_completion(const ApiContext& ctx, const net::HttpRequest& req, net::ResponseWriter& writer);
// GET /slots[?fail_on_no_slot=1]: every slot's state (slots_json()); with fail_on_no_slot=1,
// 503 when no slot is idle.
void handle_slots(const ApiContext& ctx, const net::HttpRequest& req, net::ResponseWriter& writer);
// GET /v1/models: the model this server serves, and each LoRA adapter as a model of its own.
void handle_models(const ApiContext& ctx, const net::HttpRequest& req, net::ResponseWriter& writer);
// GET /lora-adapters: [{"id", "name", "path", "scale", "alpha", "n_tensors"}] of the --lora adapters.
void handle_lora_adapters_get(const ApiContext& ctx, const net::HttpRequest& req, net::ResponseWriter& writer);
// POST /lora-adapters [{"id", "scale"}]: sets every global scale (unlisted adapters: 0).
void handle_lora_adapters_post(const ApiContext& ctx, const net::HttpRequest& req, net::ResponseWriter& writer);
// POST /tokenize {"content", "add_special", "parse_special", "with_pieces"} -> {"tokens": [...]}.
void handle_tokenize(const ApiContext& ctx, const net::HttpRequest& req, net::ResponseWriter& writer);
// POST /detokenize {"tokens": [...]} -> {"content": "..."}.
void handle_detokenize(const ApiContext& ctx, const net::HttpRequest& req, net::ResponseWriter& writer);
// POST /apply-template (llama-server's): a chat request's messages, tools, chat_template_kwargs and
// add_generation_prompt -> {"prompt": "<the rendered template>"}, without generating. The other
// chat fields (model included) are not read. Errors as the chat endpoint's.
void handle_apply_template(const ApiContext& ctx, const net::HttpRequest& req, net::ResponseWriter& writer);

}  // namespace cellserve::server
