// POST /v1/embeddings (and /embeddings): OpenAI's embeddings API over the server's
// EmbeddingService (server/embeddings/), on when `serve --embeddings` is given, as llama-server.
// docs/embeddings.md describes the fields, limits and errors.
//
// The parsing and encoding functions are pure and safe from any thread; they return an OK Status
// on success and otherwise the failure to answer (net::api_error_from_status()), naming the field.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <boost/json/object.hpp>

#include "base/status.h"
#include "net/http_types.h"
#include "server/api/api_context.h"
#include "server/embeddings/embedder.h"

namespace cellserve::server {

// OpenAI's limit on the inputs of one request.
inline constexpr size_t kMaxEmbeddingInputs = 2048;
// The tokens of all inputs together, in units of the longest one input may have: what bounds
// the work of one request.
inline constexpr int64_t kMaxEmbeddingContexts = 8;

// One input: text to tokenize, or token ids taken as they are.
struct EmbeddingInput {
  std::optional<std::string> text;
  std::vector<int32_t> ids;
};

struct EmbeddingRequest {
  std::vector<EmbeddingInput> inputs;  // 1..kMaxEmbeddingInputs
  bool base64 = false;                 // "encoding_format": "base64"
};

// The body's fields: "input" (required: a non-empty string, an array of them, an array of
// token ids, or an array of token-id arrays; ids in [0, ctx.n_vocab)), "model" (ctx.model_id;
// another name is model_not_found() unless ctx.accept_any_model; an adapter's name is a 400,
// adapters do not apply), "encoding_format" ("float", the default, or "base64") and
// "dimensions" (accepted only when equal to `width`). Errors name the field as `param`.
Status parse_embedding_request(const boost::json::object& body, const ApiContext& ctx, int64_t width,
                               EmbeddingRequest* out);

// Each input's token ids: text tokenized as llama-server does (BOS/EOS as the model's
// metadata says, special-token text parsed), ids as given. 400 `input` (code
// context_length_exceeded) for an input longer than `n_ctx` tokens or inputs longer than
// kMaxEmbeddingContexts * n_ctx together; 400 for text that gives no token.
Status tokenize_embedding_inputs(const ApiContext& ctx, const EmbeddingRequest& req, int64_t n_ctx,
                                 std::vector<std::vector<int32_t>>* out);

// `values` as little-endian float32 bytes, in base64 (OpenAI's "encoding_format": "base64").
std::string encode_embedding_base64(std::span<const float> values);

// The response body: {"object": "list", "data": [{"object": "embedding", "index", "embedding"}],
// "model", "usage": {"prompt_tokens", "total_tokens"}}. Floats are written in their shortest form
// that reads back as the same float32. REQUIRES: every embedding has one row. 500 for a
// non-finite value (JSON has no NaN).
Status embeddings_response(std::string_view model, std::span<const embeddings::Embedding> data, bool base64,
                           int64_t prompt_tokens, std::string* out);

// POST /v1/embeddings. 501 not_supported_error when the server runs without --embeddings
// (ctx.embeddings null); 400 when its pooling is none (one vector per token is not OpenAI's
// shape); 503 when another request holds the embedder past this one's deadline; 504 when the
// deadline passes while computing. Counted under "/v1/embeddings".
void handle_embeddings(const ApiContext& ctx, const net::HttpRequest& req, net::ResponseWriter& writer);

}  // namespace cellserve::server
