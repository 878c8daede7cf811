// The common generation fields, /v1/completions prompts, and the context arithmetic. The chat
// messages are in chat_request.cpp.
#include "server/api/request_parsing.h"

#include <charconv>
#include <cmath>
#include <limits>
#include <random>

#include <boost/json/parse.hpp>

#include "engine/grammar/output_constraint.h"
#include "server/api/json_fields.h"
#include "server/api/token_limit.h"

namespace cellserve::server {

namespace json = boost::json;

namespace {

constexpr size_t kMaxStops = 4;         // as OpenAI
constexpr double kLogitBiasBan = -100;  // a bias of -100 bans the token outright
// How much of an unknown model name the error repeats: the name is the client's, of any length.
constexpr size_t kMaxEchoedModelName = 256;

int64_t vocab_size(const ApiContext& ctx) {
  if (ctx.n_vocab > 0) return ctx.n_vocab;
  return ctx.tokenizer != nullptr ? ctx.tokenizer->n_vocab() : 0;
}

uint64_t random_seed() {
  static thread_local std::mt19937_64 rng(std::random_device{}());
  return rng();
}

Status parse_stop(const json::object& body, std::vector<std::string>* out) {
  const json::value* v = field(body, "stop");
  if (v == nullptr) return {};
  std::vector<std::string> stops;
  if (v->is_string()) {
    stops.emplace_back(v->get_string());
  } else if (v->is_array()) {
    for (const json::value& s : v->get_array()) {
      if (!s.is_string()) return Status::invalid_param("stop", "'stop' must be a string or an array of strings");
      stops.emplace_back(s.get_string());
    }
  } else {
    return Status::invalid_param(
        "stop", std::string("'stop' must be a string or an array of strings, got ") + json_kind_name(*v));
  }
  if (stops.size() > kMaxStops) {
    return Status::invalid_param("stop", "'stop' may hold at most " + std::to_string(kMaxStops) + " sequences, got " +
                                             std::to_string(stops.size()));
  }
  for (const std::string& s : stops) {
    if (s.empty()) return Status::invalid_param("stop", "'stop' sequences must not be empty");
  }
  *out = std::move(stops);
  return {};
}

Status parse_logit_bias(const json::object& body, int64_t n_vocab, std::vector<std::pair<int32_t, float>>* out) {
  const json::value* v = field(body, "logit_bias");
  if (v == nullptr) return {};
  if (!v->is_object()) {
    return Status::invalid_param(
        "logit_bias",
        std::string("'logit_bias' must be an object mapping token ids to biases, got ") + json_kind_name(*v));
  }
  out->clear();
  for (const auto& [key, bias] : v->get_object()) {
    int64_t id = -1;
    const auto r = std::from_chars(key.data(), key.data() + key.size(), id);
    if (r.ec != std::errc() || r.ptr != key.data() + key.size() || id < 0 || id >= n_vocab) {
      return Status::invalid_param("logit_bias", "'logit_bias' key '" + std::string(key) +
                                                     "' is not a token id in [0, " + std::to_string(n_vocab) + ")");
    }
    if (!bias.is_number()) {
      return Status::invalid_param("logit_bias",
                                   "'logit_bias' value for token " + std::string(key) + " must be a number");
    }
    const double b = bias.to_number<double>();
    if (!(b >= -100 && b <= 100)) {
      return Status::invalid_param("logit_bias", "'logit_bias' value for token " + std::string(key) +
                                                     " must be in [-100, 100], got " + format_number(b));
    }
    const float f = b <= kLogitBiasBan ? -std::numeric_limits<float>::infinity() : static_cast<float>(b);
    out->emplace_back(static_cast<int32_t>(id), f);
  }
  // A request that bans the whole vocabulary could never produce a token: say so up front.
  if (static_cast<int64_t>(out->size()) >= n_vocab) {
    std::vector<bool> banned(static_cast<size_t>(n_vocab), false);
    int64_t n_banned = 0;
    for (const auto& [id, f] : *out) {
      if (std::isinf(f) && !banned[static_cast<size_t>(id)]) {
        banned[static_cast<size_t>(id)] = true;
        ++n_banned;
      }
    }
    if (n_banned == n_vocab) {
      return Status::invalid_param("logit_bias", "'logit_bias' bans every token of the vocabulary (" +
                                                     std::to_string(n_vocab) + "), so nothing could be generated");
    }
  }
  return {};
}

Status schema_error(const Status& s) {
  return Status::invalid_param("response_format", "response_format json_schema: " + s.message());
}

Status parse_response_format(const json::object& body, std::shared_ptr<const engine::grammar::OutputConstraint>* out) {
  const json::value* v = field(body, "response_format");
  if (v == nullptr) return {};
  if (!v->is_object()) {
    return Status::invalid_param("response_format",
                                 std::string("'response_format' must be an object, got ") + json_kind_name(*v));
  }
  const json::object& rf = v->get_object();
  std::string type;
  if (Status s = read_string(rf, "type", &type); !s.ok()) return s.with_param("response_format.type");
  if (type.empty() || type == "text") {
    out->reset();
    return {};
  }
  // llama.cpp also accepts {"type": "json_object", "schema": {...}}.
  const json::value* schema = nullptr;
  if (type == "json_object") {
    schema = field(rf, "schema");
  } else if (type == "json_schema") {
    const json::value* js = field(rf, "json_schema");
    if (js == nullptr || !js->is_object()) {
      return Status::invalid_param("response_format",
                                   "response_format of type 'json_schema' needs a 'json_schema' object");
    }
    schema = field(js->get_object(), "schema");
  } else if (type == "regex") {
    // cellserve's own: the whole answer matches `pattern` (docs/api.md), e.g. "RISK_LEVEL: [1-9]".
    const json::value* pattern = field(rf, "pattern");
    if (pattern == nullptr || !pattern->is_string()) {
      return Status::invalid_param("response_format.pattern",
                                   "response_format of type 'regex' needs a 'pattern' string");
    }
    auto compiled = engine::grammar::OutputConstraint::from_regex(pattern->get_string());
    if (!compiled.ok()) return Status::invalid_param("response_format.pattern", compiled.status().message());
    *out = std::move(compiled).value();
    return {};
  } else {
    return Status::invalid_param("response_format", "unknown response_format type '" + type +
                                                        "'; expected 'text', 'json_object', 'json_schema' or 'regex'");
  }
  if (schema == nullptr) {
    *out = engine::grammar::OutputConstraint::any_object();
    return {};
  }
  if (!schema->is_object() && !schema->is_bool()) {
    return Status::invalid_param("response_format", "response_format json_schema: 'schema' must be an object");
  }
  auto compiled = engine::grammar::OutputConstraint::from_schema(*schema);
  if (!compiled.ok()) return schema_error(compiled.status());
  *out = std::move(compiled).value();
  return {};
}

// llama.cpp's `grammar`: GBNF text. An empty string is no grammar, as in llama-server.
Status parse_grammar(const json::object& body, std::shared_ptr<const engine::grammar::OutputConstraint>* out) {
  const json::value* v = field(body, "grammar");
  if (v == nullptr) return {};
  if (!v->is_string()) {
    return Status::invalid_param("grammar",
                                 std::string("'grammar' must be a string (GBNF), got ") + json_kind_name(*v));
  }
  if (v->get_string().empty()) return {};
  if (*out != nullptr) {
    return Status::invalid_param("grammar", "give one of 'grammar', 'response_format' and 'json_schema', not several");
  }
  auto compiled = engine::grammar::OutputConstraint::from_gbnf(v->get_string());
  if (!compiled.ok()) return Status::invalid_param("grammar", "grammar: " + compiled.status().message());
  *out = std::move(compiled).value();
  return {};
}

Status parse_sampling(const json::object& body, const ApiContext& ctx, engine::SamplingParams* s) {
  double d = 0;
  int64_t i = 0;
  if (has_field(body, "temperature")) {
    CS_RETURN_IF_ERROR(read_number(body, "temperature", 0, 2, &d));
    s->temperature = static_cast<float>(d);
  }
  if (has_field(body, "top_p")) {
    CS_RETURN_IF_ERROR(read_number(body, "top_p", 0, 1, &d, /*min_exclusive=*/true));
    s->top_p = static_cast<float>(d);
  }
  if (has_field(body, "top_k")) {
    CS_RETURN_IF_ERROR(read_int(body, "top_k", -1, std::numeric_limits<int32_t>::max(), &i));
    s->top_k = static_cast<int32_t>(std::max<int64_t>(i, 0));
  }
  if (has_field(body, "min_p")) {
    CS_RETURN_IF_ERROR(read_number(body, "min_p", 0, 1, &d));
    s->min_p = static_cast<float>(d);
  }
  if (has_field(body, "presence_penalty")) {
    CS_RETURN_IF_ERROR(read_number(body, "presence_penalty", -2, 2, &d));
    s->presence_penalty = static_cast<float>(d);
  }
  if (has_field(body, "frequency_penalty")) {
    CS_RETURN_IF_ERROR(read_number(body, "frequency_penalty", -2, 2, &d));
    s->frequency_penalty = static_cast<float>(d);
  }
  for (const char* key : {"repetition_penalty", "repeat_penalty"}) {
    if (!has_field(body, key)) continue;
    CS_RETURN_IF_ERROR(read_number(body, key, 0, 10, &d, /*min_exclusive=*/true));
    s->repeat_penalty = static_cast<float>(d);
  }
  if (has_field(body, "repeat_last_n")) {  // llama.cpp: -1 = the whole context
    CS_RETURN_IF_ERROR(read_int(body, "repeat_last_n", -1, std::numeric_limits<int32_t>::max(), &i));
    s->penalty_last_n = static_cast<int32_t>(i < 0 ? std::max<int64_t>(ctx.n_ctx, 0) : i);
  }
  s->seed = ctx.defaults.seed ? *ctx.defaults.seed : random_seed();
  if (has_field(body, "seed")) {
    CS_RETURN_IF_ERROR(
        read_int(body, "seed", std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max(), &i));
    s->seed = static_cast<uint64_t>(i);
  }
  CS_RETURN_IF_ERROR(parse_logit_bias(body, vocab_size(ctx), &s->logit_bias));
  // A backstop for ranges the checks above may not cover.
  const Status valid = s->validate(vocab_size(ctx));
  if (!valid.ok()) return Status::invalid_param("", valid.message());
  return {};
}

}  // namespace

Status parse_lora_scales(const json::value& v, std::string_view param, LoraRegistry::Scales* out) {
  const std::string p(param);
  if (!v.is_array()) return Status::invalid_param(p, "'" + p + "' must be an array of {\"id\", \"scale\"} objects");
  for (const json::value& item : v.get_array()) {
    if (!item.is_object()) return Status::invalid_param(p, "'" + p + "' entries must be objects with 'id' and 'scale'");
    const json::object& o = item.get_object();
    if (!has_field(o, "id")) return Status::invalid_param(p, "'" + p + "' entries need an 'id'");
    int64_t id = 0;
    double scale = 1.0;
    for (const Status& s : {read_int(o, "id", 0, 1 << 20, &id), read_number(o, "scale", -1e6, 1e6, &scale)}) {
      if (!s.ok()) return s.with_param(p + "." + s.param());
    }
    out->emplace_back(id, static_cast<float>(scale));
  }
  return {};
}

namespace {

// "lora": [{"id": 0, "scale": 0.5}, ...] (llama.cpp's per-request adapter list; unlisted
// adapters get scale 0). Without it: the adapter named by "model", else the global scales.
Status parse_lora(const json::object& body, const ApiContext& ctx,
                  const std::optional<std::shared_ptr<const engine::LoraSet>>& named,
                  std::shared_ptr<const engine::LoraSet>* out) {
  const json::value* list = field(body, "lora");
  if (list == nullptr) {
    if (named) {
      *out = *named;
    } else if (ctx.lora != nullptr) {
      *out = ctx.lora->default_set();
    }
    return {};
  }
  if (named) return Status::invalid_param("lora", "give either 'lora' or an adapter name as 'model', not both");
  LoraRegistry::Scales scales;
  CS_RETURN_IF_ERROR(parse_lora_scales(*list, "lora", &scales));
  if (ctx.lora == nullptr) {
    if (scales.empty()) return {};
    return Status::invalid_param("lora", "this server has no LoRA adapters (start it with --lora FILE)");
  }
  auto set = ctx.lora->request_set(scales);
  if (!set.ok()) return Status::invalid_param("lora", set.status().message());
  *out = *set;
  return {};
}

}  // namespace

Status model_not_found(std::string_view requested, std::string_view served) {
  std::string name(requested);
  if (name.size() > kMaxEchoedModelName) {
    size_t cut = kMaxEchoedModelName;
    while (cut > 0 && (static_cast<unsigned char>(name[cut]) & 0xC0) == 0x80) --cut;  // not inside a UTF-8 character
    name.resize(cut);
    name += "...";
  }
  // OpenAI's status, type, code and wording (it sends "param": null; naming the field is clearer,
  // and a failure naming a field is an invalid_request_error, as OpenAI types this one).
  return Status::not_found("The model `" + name +
                           "` does not exist or you do not have access to it. This server "
                           "serves `" +
                           std::string(served) + "`.")
      .with_param("model")
      .with_api_code("model_not_found");
}

Status parse_json_object(std::string_view body, json::object* out) {
  boost::system::error_code ec;
  json::parse_options opts;
  opts.max_depth = 64;  // JSON schemas nest deeper than the default 32
  json::value v = json::parse(body, ec, {}, opts);
  if (ec) return Status::invalid_param("", "invalid JSON: " + ec.message());
  if (!v.is_object()) return Status::invalid_param("", "the request body must be a JSON object");
  *out = std::move(v.get_object());
  return {};
}

Status parse_generation_fields(const json::object& body, const ApiContext& ctx, GenerationRequest* out) {
  std::string model;
  CS_RETURN_IF_ERROR(read_string(body, "model", &model));
  std::optional<std::shared_ptr<const engine::LoraSet>> named;  // "model" names an adapter
  if (has_field(body, "model") && model != ctx.model_id) {
    if (ctx.lora != nullptr) named = ctx.lora->named_set(model);
    if (!named && !ctx.accept_any_model) return model_not_found(model, ctx.model_id);
  }
  CS_RETURN_IF_ERROR(parse_lora(body, ctx, named, &out->job.lora));
  CS_RETURN_IF_ERROR(read_int(body, "n", 1, kMaxChoices, &out->n));

  CS_RETURN_IF_ERROR(read_bool(body, "stream", &out->stream));
  if (const json::value* so = field(body, "stream_options")) {
    if (!so->is_object()) return Status::invalid_param("stream_options", "'stream_options' must be an object");
    if (Status s = read_bool(so->get_object(), "include_usage", &out->include_usage); !s.ok())
      return s.with_param("stream_options.include_usage");
  }
  // The server's defaults first (serve --temp ...); parse_sampling() overrides what the body sets.
  out->job.sampling = ctx.defaults.sampling;
  CS_ASSIGN_OR_RETURN(const TokenLimit limit, read_token_limit(body, TokenLimitFields::Chat));
  if (limit.tokens) out->max_tokens = limit.tokens;
  CS_RETURN_IF_ERROR(parse_sampling(body, ctx, &out->job.sampling));
  CS_RETURN_IF_ERROR(parse_stop(body, &out->job.stop));
  CS_RETURN_IF_ERROR(read_bool(body, "ignore_eos", &out->job.ignore_eos));
  CS_RETURN_IF_ERROR(parse_response_format(body, &out->job.constraint));
  return parse_grammar(body, &out->job.constraint);
}

Status parse_completion_request(const json::object& body, const ApiContext& ctx, CompletionRequest* out) {
  CS_RETURN_IF_ERROR(parse_generation_fields(body, ctx, out));
  CS_RETURN_IF_ERROR(read_bool(body, "echo", &out->echo));
  if (const json::value* suffix = field(body, "suffix"); suffix != nullptr) {
    if (!suffix->is_string() || !suffix->get_string().empty())
      return Status::invalid_param("suffix", "'suffix' is not supported");
  }
  int64_t logprobs = -1;
  CS_RETURN_IF_ERROR(read_int(body, "logprobs", 0, 5, &logprobs));
  if (logprobs >= 0 && out->echo) {
    return Status::invalid_param("echo",
                                 "'echo' together with 'logprobs' is not supported (prompt logprobs are not kept)");
  }
  out->job.logprobs = static_cast<int32_t>(logprobs);
  return parse_prompt(body, ctx, out);
}

Status parse_prompt(const json::object& body, const ApiContext& ctx, CompletionRequest* out) {
  const json::value* p = body.if_contains("prompt");
  if (p == nullptr || p->is_null()) return Status::invalid_param("prompt", "'prompt' is required");
  const int64_t n_vocab = vocab_size(ctx);
  auto take_ids = [&](const json::array& a) -> Status {
    out->prompt_ids.clear();
    for (const json::value& t : a) {
      const std::optional<int64_t> id = as_integer(t);
      if (!id) return Status::invalid_param("prompt", "'prompt' token arrays must hold only integers");
      if (*id < 0 || *id >= n_vocab) {
        return Status::invalid_param(
            "prompt", "prompt token " + std::to_string(*id) + " is out of range [0, " + std::to_string(n_vocab) + ")");
      }
      out->prompt_ids.push_back(static_cast<int32_t>(*id));
    }
    return {};
  };
  const Status batched =
      Status::invalid_param("prompt", "batched prompts are not supported; send one request per prompt");
  if (p->is_string()) {
    out->prompt_text = std::string(p->get_string());
    return {};
  }
  if (!p->is_array()) {
    return Status::invalid_param("prompt", std::string("'prompt' must be a string, an array of token ids, or an array "
                                                       "with one of those, got ") +
                                               json_kind_name(*p));
  }
  const json::array& a = p->get_array();
  if (a.empty()) return Status::invalid_param("prompt", "'prompt' must not be empty");
  if (a[0].is_string()) {
    if (a.size() > 1) return batched;
    out->prompt_text = std::string(a[0].get_string());
    return {};
  }
  if (a[0].is_array()) {
    if (a.size() > 1) return batched;
    return take_ids(a[0].get_array());
  }
  return take_ids(a);
}

Status parse_llama_completion_request(const json::object& body, const ApiContext& ctx, LlamaCompletionRequest* out) {
  CS_RETURN_IF_ERROR(parse_generation_fields(body, ctx, out));
  // n_predict wins over max_tokens, as in llama-server.
  CS_ASSIGN_OR_RETURN(const TokenLimit limit, read_token_limit(body, TokenLimitFields::Llama));
  out->until_end = limit.until_end;
  out->max_tokens = limit.tokens;
  // llama.cpp's convention: seed -1 draws a random one (for this request, whatever --seed says).
  if (const std::optional<int64_t> seed = has_field(body, "seed") ? as_integer(body.at("seed")) : std::nullopt;
      seed && *seed == -1) {
    out->job.sampling.seed = random_seed();
  }
  CS_RETURN_IF_ERROR(read_bool(body, "return_tokens", &out->return_tokens));
  CS_RETURN_IF_ERROR(read_int(body, "n_probs", 0, kMaxNProbs, &out->n_probs));
  if (out->n_probs > 0) out->job.logprobs = static_cast<int32_t>(out->n_probs);
  bool post_sampling = false;
  CS_RETURN_IF_ERROR(read_bool(body, "post_sampling_probs", &post_sampling));
  if (post_sampling) {
    return Status::invalid_param("post_sampling_probs",
                                 "'post_sampling_probs' is not supported: n_probs gives the model's log-probabilities "
                                 "before sampling");
  }
  // llama-server's own field for a schema; "response_format" (read above) works too.
  if (const json::value* schema = field(body, "json_schema")) {
    if (out->job.constraint != nullptr) {
      return Status::invalid_param("json_schema",
                                   "give one of 'json_schema', 'grammar' and 'response_format', not several");
    }
    if (!schema->is_object() && !schema->is_bool()) {
      return Status::invalid_param("json_schema",
                                   std::string("'json_schema' must be an object, got ") + json_kind_name(*schema));
    }
    auto compiled = engine::grammar::OutputConstraint::from_schema(*schema);
    if (!compiled.ok()) return Status::invalid_param("json_schema", "json_schema: " + compiled.status().message());
    out->job.constraint = std::move(compiled).value();
  }
  return parse_prompt(body, ctx, out);
}

Status query_flag(std::string_view query, std::string_view key, bool* out) {
  while (!query.empty()) {
    const size_t amp = query.find('&');
    const std::string_view pair = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    const size_t eq = pair.find('=');
    if (pair.substr(0, eq) != key) continue;
    const std::string_view value = eq == std::string_view::npos ? std::string_view() : pair.substr(eq + 1);
    if (value == "1" || value == "true") {
      *out = true;
    } else if (value == "0" || value == "false") {
      *out = false;
    } else {
      return Status::invalid_param(std::string(key), "'" + std::string(key) + "' must be 1, 0, true or false");
    }
  }
  return {};
}

int64_t default_max_tokens(const ApiContext& ctx, int64_t endpoint_default) {
  return ctx.defaults.n_predict.value_or(endpoint_default);
}

Status build_completion_prompt(const ApiContext& ctx, CompletionRequest* req) {
  if (req->prompt_text) {
    // As llama.cpp's server: BOS per the vocabulary, special tokens written in the text parsed.
    req->job.prompt = ctx.tokenizer->tokenize(*req->prompt_text, /*add_special=*/true, /*parse_special=*/true);
  } else {
    req->job.prompt = req->prompt_ids;
  }
  if (req->job.prompt.empty()) return Status::invalid_param("prompt", "the prompt is empty (it has no tokens)");
  return {};
}

Status fit_context(int64_t n_prompt, std::optional<int64_t> requested, int64_t default_tokens, int64_t n_ctx,
                   std::string_view param, int64_t* max_tokens) {
  const bool chat = param == "messages";
  auto too_long = [&](const std::string& message) {
    return Status::invalid_param(std::string(param), message).with_api_code("context_length_exceeded");
  };
  const std::string head = "This model's maximum context length is " + std::to_string(n_ctx) + " tokens. ";
  if (requested) {
    if (n_prompt + *requested <= n_ctx) {
      *max_tokens = *requested;
      return {};
    }
    return too_long(head + "However, you requested " + std::to_string(n_prompt + *requested) + " tokens (" +
                    std::to_string(n_prompt) + (chat ? " in the messages, " : " in your prompt, ") +
                    std::to_string(*requested) + " in the completion). Please reduce the length of the " +
                    (chat ? "messages" : "prompt") + " or completion.");
  }
  const int64_t room = n_ctx - n_prompt;
  if (room < 1) {
    return too_long(head + "However, your " + (chat ? "messages" : "prompt") + " resulted in " +
                    std::to_string(n_prompt) + " tokens, which leaves no room for the completion. Please reduce the " +
                    "length of the " + (chat ? "messages." : "prompt."));
  }
  *max_tokens = default_tokens < 0 ? room : std::min(default_tokens, room);
  return {};
}

}  // namespace cellserve::server
