#include "server/api/embeddings.h"

#include <openssl/evp.h>

#include <bit>
#include <charconv>
#include <chrono>
#include <cmath>

#include <boost/json/serialize.hpp>
#include <boost/json/string.hpp>

#include "server/api/job_io.h"
#include "server/api/json_fields.h"
#include "server/api/reply.h"
#include "server/api/request_parsing.h"
#include "server/embeddings/embedding_service.h"
#include "server/lora_registry.h"

namespace cellserve::server {

namespace json = boost::json;
using embeddings::EmbeddingService;

namespace {

constexpr std::string_view kEndpoint = "/v1/embeddings";
constexpr std::string_view kInputShapes =
    "'input' must be a string, an array of strings, an array of token ids or an array of token-id arrays";

net::ApiError not_enabled() {
  // llama-server's words and status (501, its not_supported_error type).
  net::ApiError e;
  e.http_status = 501;
  e.type = "not_supported_error";
  e.message = "This server does not support embeddings. Start it with `--embeddings`";
  return e;
}

// Token ids from a JSON array of integers in [0, n_vocab); `where` names it in messages.
Status read_ids(const json::array& a, int64_t n_vocab, const std::string& where, std::vector<int32_t>* out) {
  if (a.empty()) return Status::invalid_param("input", where + " is an empty array of token ids");
  out->reserve(a.size());
  for (const json::value& v : a) {
    const std::optional<int64_t> id = as_integer(v);
    if (!id)
      return Status::invalid_param("input", std::string(kInputShapes) + "; " + where + " holds " + json_kind_name(v));
    if (*id < 0 || *id >= n_vocab) {
      return Status::invalid_param("input", where + ": token id " + std::to_string(*id) + " is out of range [0, " +
                                                std::to_string(n_vocab) + ")");
    }
    out->push_back(static_cast<int32_t>(*id));
  }
  return {};
}

Status parse_input(const json::value& v, int64_t n_vocab, std::vector<EmbeddingInput>* out) {
  if (v.is_string()) {
    if (v.get_string().empty()) return Status::invalid_param("input", "'input' must not be an empty string");
    out->push_back(EmbeddingInput{std::string(v.get_string()), {}});
    return {};
  }
  if (!v.is_array()) return Status::invalid_param("input", std::string(kInputShapes) + ", got " + json_kind_name(v));
  const json::array& a = v.get_array();
  if (a.empty()) return Status::invalid_param("input", "'input' must not be an empty array");
  // An array of token ids is one input.
  if (as_integer(a.front())) {
    EmbeddingInput in;
    CS_RETURN_IF_ERROR(read_ids(a, n_vocab, "'input'", &in.ids));
    out->push_back(std::move(in));
    return {};
  }
  if (a.size() > kMaxEmbeddingInputs) {
    return Status::invalid_param("input", "'input' holds " + std::to_string(a.size()) + " inputs; at most " +
                                              std::to_string(kMaxEmbeddingInputs) + " are allowed");
  }
  const bool strings = a.front().is_string();
  for (size_t i = 0; i < a.size(); ++i) {
    const std::string where = "'input[" + std::to_string(i) + "]'";
    const json::value& item = a[i];
    if (strings && item.is_string()) {
      if (item.get_string().empty()) return Status::invalid_param("input", where + " is an empty string");
      out->push_back(EmbeddingInput{std::string(item.get_string()), {}});
    } else if (!strings && item.is_array()) {
      EmbeddingInput in;
      CS_RETURN_IF_ERROR(read_ids(item.get_array(), n_vocab, where, &in.ids));
      out->push_back(std::move(in));
    } else {
      return Status::invalid_param(
          "input", std::string(kInputShapes) + " (one kind throughout); " + where + " is " + json_kind_name(item));
    }
  }
  return {};
}

void append_float(float x, std::string* out) {
  char buf[32];
  const std::to_chars_result r = std::to_chars(buf, buf + sizeof(buf), x);
  out->append(buf, r.ptr);
}

}  // namespace

Status parse_embedding_request(const json::object& body, const ApiContext& ctx, int64_t width, EmbeddingRequest* out) {
  std::string model;
  CS_RETURN_IF_ERROR(read_string(body, "model", &model));
  if (has_field(body, "model") && model != ctx.model_id) {
    if (ctx.lora != nullptr && ctx.lora->named_set(model)) {
      return Status::invalid_param("model", "'" + model + "' is a LoRA adapter; embeddings come from the base model `" +
                                                ctx.model_id + "` only");
    }
    if (!ctx.accept_any_model) return model_not_found(model, ctx.model_id);
  }
  const json::value* input = field(body, "input");
  if (input == nullptr) return Status::invalid_param("input", "'input' is required");
  CS_RETURN_IF_ERROR(parse_input(*input, ctx.n_vocab, &out->inputs));

  std::string format = "float";
  CS_RETURN_IF_ERROR(read_string(body, "encoding_format", &format));
  if (format != "float" && format != "base64")
    return Status::invalid_param("encoding_format", "'encoding_format' must be \"float\" or \"base64\"");
  out->base64 = format == "base64";

  int64_t dimensions = width;
  CS_RETURN_IF_ERROR(read_int(body, "dimensions", 1, int64_t{1} << 31, &dimensions));
  if (dimensions != width) {
    return Status::invalid_param("dimensions", "'dimensions' must be " + std::to_string(width) +
                                                   ", the model's embedding width (cellserve does not shorten "
                                                   "embeddings), got " +
                                                   std::to_string(dimensions));
  }
  return {};
}

Status tokenize_embedding_inputs(const ApiContext& ctx, const EmbeddingRequest& req, int64_t n_ctx,
                                 std::vector<std::vector<int32_t>>* out) {
  const int64_t max_total = kMaxEmbeddingContexts * n_ctx;
  int64_t total = 0;
  out->reserve(req.inputs.size());
  for (size_t i = 0; i < req.inputs.size(); ++i) {
    const EmbeddingInput& in = req.inputs[i];
    std::vector<int32_t> ids =
        in.text ? ctx.tokenizer->tokenize(*in.text, /*add_special=*/true, /*parse_special=*/true) : in.ids;
    const auto n = static_cast<int64_t>(ids.size());
    if (n == 0) return Status::invalid_param("input", "input " + std::to_string(i) + " gives no tokens");
    if (n > n_ctx) {
      return Status::invalid_param("input", "input " + std::to_string(i) + " has " + std::to_string(n) +
                                                " tokens; one input may have at most " + std::to_string(n_ctx))
          .with_api_code("context_length_exceeded");
    }
    total += n;
    if (total > max_total) {
      return Status::invalid_param("input", "the inputs hold more than " + std::to_string(max_total) +
                                                " tokens together (input " + std::to_string(i) +
                                                " passes it); one request may have at most " +
                                                std::to_string(kMaxEmbeddingContexts) + " x " + std::to_string(n_ctx))
          .with_api_code("context_length_exceeded");
    }
    out->push_back(std::move(ids));
  }
  return {};
}

std::string encode_embedding_base64(std::span<const float> values) {
  std::string bytes;
  bytes.reserve(values.size() * 4);
  for (float v : values) {
    const auto bits = std::bit_cast<uint32_t>(v);
    for (int b = 0; b < 4; ++b) bytes.push_back(static_cast<char>((bits >> (8 * b)) & 0xFF));  // little-endian
  }
  std::string out(4 * ((bytes.size() + 2) / 3) + 1, '\0');  // EVP_EncodeBlock writes a final NUL
  const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(bytes.data()), static_cast<int>(bytes.size()));
  out.resize(n > 0 ? static_cast<size_t>(n) : 0);
  return out;
}

Status embeddings_response(std::string_view model, std::span<const embeddings::Embedding> data, bool base64,
                           int64_t prompt_tokens, std::string* out) {
  std::string& s = *out;
  s = R"({"object":"list","data":[)";
  for (size_t i = 0; i < data.size(); ++i) {
    const std::vector<float>& v = data[i].values;
    for (float x : v) {
      if (!std::isfinite(x)) {
        return Status::internal("embedding " + std::to_string(i) + " holds a non-finite value (" + std::to_string(x) +
                                "): the model's hidden state overflowed");
      }
    }
    if (i > 0) s += ',';
    s += R"({"object":"embedding","index":)" + std::to_string(i) + R"(,"embedding":)";
    if (base64) {
      s += '"' + encode_embedding_base64(v) + '"';
    } else {
      s += '[';
      for (size_t k = 0; k < v.size(); ++k) {
        if (k > 0) s += ',';
        append_float(v[k], &s);
      }
      s += ']';
    }
    s += '}';
  }
  s += R"(],"model":)" + json::serialize(json::string(model));
  s += R"(,"usage":{"prompt_tokens":)" + std::to_string(prompt_tokens) + R"(,"total_tokens":)" +
       std::to_string(prompt_tokens) + "}}";
  return {};
}

void handle_embeddings(const ApiContext& ctx, const net::HttpRequest& req, net::ResponseWriter& writer) {
  auto fail = [&](const auto& e) { reply_error(ctx, kEndpoint, writer, e); };
  const auto received_at = std::chrono::steady_clock::now();
  EmbeddingService* service = ctx.embeddings;
  if (service == nullptr) return fail(not_enabled());
  if (ctx.tokenizer == nullptr) return fail(unavailable("the model is not loaded"));
  if (service->pooling() == embeddings::Pooling::None) {
    return fail(Status::invalid_param("",
                                      "Pooling type 'none' is not OAI compatible. Please use a different pooling type "
                                      "(start the server with --pooling mean, cls or last)"));
  }
  const auto requested = requested_deadline(req, received_at);
  if (!requested.ok()) return fail(net::api_error_from_status(requested.status()));
  json::object body;
  EmbeddingRequest r;
  if (Status s = parse_json_object(req.body, &body); !s.ok()) return fail(s);
  if (Status s = parse_embedding_request(body, ctx, service->width(), &r); !s.ok()) return fail(s);
  std::vector<std::vector<int32_t>> inputs;
  if (Status s = tokenize_embedding_inputs(ctx, r, service->n_ctx(), &inputs); !s.ok()) return fail(s);
  int64_t n_tokens = 0;
  for (const std::vector<int32_t>& ids : inputs) n_tokens += static_cast<int64_t>(ids.size());

  const auto deadline = service->deadline(received_at, *requested);
  EmbeddingService::Answer answer = service->embed(inputs, deadline, [&writer] { return writer.client_gone(); });
  const auto seconds = [&] {
    return format_number(std::chrono::duration<double>(deadline - received_at).count()) + " s";
  };
  switch (answer.outcome) {
    case EmbeddingService::Outcome::Done:
      break;
    case EmbeddingService::Outcome::ClientGone:
      return count_request(ctx, kEndpoint, kClientClosed);
    case EmbeddingService::Outcome::Busy:
      return fail(unavailable("the embedder was busy with other requests until this request's deadline (" + seconds() +
                              ") passed; retry later"));
    case EmbeddingService::Outcome::TimedOut:
      return fail(net::api_error(504, "the request's deadline (" + seconds() + ") passed before its " +
                                          std::to_string(inputs.size()) + " inputs were embedded"));
    case EmbeddingService::Outcome::Failed:
      return fail(net::api_error_from_status(answer.error));
  }
  std::string out;
  if (Status s = embeddings_response(ctx.model_id, answer.embeddings, r.base64, n_tokens, &out); !s.ok())
    return fail(s);
  reply_json(ctx, kEndpoint, writer, 200, std::move(out));
}

}  // namespace cellserve::server
