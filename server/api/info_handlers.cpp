// GET /v1/models, GET /slots, POST /tokenize, POST /detokenize, POST /apply-template: answers that
// need no generation.
#include <algorithm>

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include "server/api/completion_bodies.h"
#include "server/api/handlers.h"
#include "server/api/json_fields.h"
#include "server/api/reply.h"
#include "server/api/request_parsing.h"
#include "server/lora_registry.h"
#include "server/scheduler/scheduler.h"

namespace cellserve::server {

namespace json = boost::json;

namespace {

constexpr std::string_view kModels = "/v1/models";
constexpr std::string_view kTokenize = "/tokenize";
constexpr std::string_view kDetokenize = "/detokenize";
constexpr std::string_view kLoraAdapters = "/lora-adapters";
constexpr std::string_view kApplyTemplate = "/apply-template";
constexpr std::string_view kSlots = "/slots";

Status no_tokenizer() { return Status::unavailable("the model is not loaded"); }

}  // namespace

void handle_slots(const ApiContext& ctx, const net::HttpRequest& req, net::ResponseWriter& writer) {
  auto fail = [&](const auto& e) { reply_error(ctx, kSlots, writer, e); };
  if (ctx.scheduler == nullptr) return fail(no_tokenizer());
  bool fail_on_no_slot = false;
  if (Status s = query_flag(req.query, "fail_on_no_slot", &fail_on_no_slot); !s.ok()) return fail(s);
  const std::vector<SlotState> states = ctx.scheduler->slot_states();
  if (fail_on_no_slot &&
      std::all_of(states.begin(), states.end(), [](const SlotState& s) { return s.is_processing; })) {
    return fail(Status::unavailable("no slot available"));  // llama-server's words
  }
  reply_json(ctx, kSlots, writer, 200, json::serialize(slots_json(states)));
}

void handle_models(const ApiContext& ctx, const net::HttpRequest& /*req*/, net::ResponseWriter& writer) {
  json::object meta = ctx.model_meta;
  meta["n_ctx_per_request"] = ctx.n_ctx;
  meta["n_vocab"] = ctx.n_vocab;
  json::object model{{"id", ctx.model_id},
                     {"object", "model"},
                     {"created", static_cast<int64_t>(ctx.created)},
                     {"owned_by", ctx.owned_by},
                     {"meta", std::move(meta)}};
  json::array data{std::move(model)};
  // Each adapter is also a model id (as vLLM lists LoRA modules): it selects that adapter alone.
  if (ctx.lora != nullptr) {
    for (const LoraRegistry::Entry& e : ctx.lora->entries()) {
      data.push_back(json::object{{"id", e.adapter->name()},
                                  {"object", "model"},
                                  {"created", static_cast<int64_t>(ctx.created)},
                                  {"owned_by", ctx.owned_by},
                                  {"parent", ctx.model_id},
                                  {"root", e.adapter->path()}});
    }
  }
  json::object body{{"object", "list"}, {"data", std::move(data)}};
  reply_json(ctx, kModels, writer, 200, json::serialize(body));
}

namespace {

json::array lora_listing(const LoraRegistry* lora) {
  json::array out;
  if (lora == nullptr) return out;
  for (const LoraRegistry::Entry& e : lora->entries()) {
    out.push_back(json::object{{"id", e.id},
                               {"name", e.adapter->name()},
                               {"path", e.adapter->path()},
                               {"scale", e.scale},
                               {"alpha", e.adapter->alpha()},
                               {"n_tensors", static_cast<int64_t>(e.adapter->tensors().size())}});
  }
  return out;
}

}  // namespace

void handle_lora_adapters_get(const ApiContext& ctx, const net::HttpRequest& /*req*/, net::ResponseWriter& writer) {
  reply_json(ctx, kLoraAdapters, writer, 200, json::serialize(lora_listing(ctx.lora)));
}

void handle_lora_adapters_post(const ApiContext& ctx, const net::HttpRequest& req, net::ResponseWriter& writer) {
  auto fail = [&](const auto& e) { reply_error(ctx, kLoraAdapters, writer, e); };
  boost::system::error_code ec;
  const json::value v = json::parse(req.body, ec);
  if (ec) return fail(Status::invalid_param("", "invalid JSON: " + ec.message()));
  LoraRegistry::Scales scales;
  if (Status s = parse_lora_scales(v, "body", &scales); !s.ok()) return fail(s);
  if (ctx.lora == nullptr) {
    if (!scales.empty())
      return fail(Status::invalid_param("body", "this server has no LoRA adapters (start it with --lora FILE)"));
  } else if (Status s = ctx.lora->set_scales(scales); !s.ok()) {
    return fail(Status::invalid_param("body", s.message()));
  }
  reply_json(ctx, kLoraAdapters, writer, 200, json::serialize(lora_listing(ctx.lora)));
}

void handle_tokenize(const ApiContext& ctx, const net::HttpRequest& req, net::ResponseWriter& writer) {
  auto fail = [&](const auto& e) { reply_error(ctx, kTokenize, writer, e); };
  if (ctx.tokenizer == nullptr) return fail(no_tokenizer());
  json::object body;
  if (Status s = parse_json_object(req.body, &body); !s.ok()) return fail(s);
  std::string content;
  bool add_special = false, parse_special = true, with_pieces = false;
  if (!has_field(body, "content")) return fail(Status::invalid_param("content", "'content' is required"));
  for (const Status& s :
       {read_string(body, "content", &content), read_bool(body, "add_special", &add_special),
        read_bool(body, "parse_special", &parse_special), read_bool(body, "with_pieces", &with_pieces)}) {
    if (!s.ok()) return fail(s);
  }
  const std::vector<int32_t> ids = ctx.tokenizer->tokenize(content, add_special, parse_special);
  json::array tokens;
  for (int32_t id : ids) {
    if (!with_pieces) {
      tokens.push_back(id);
      continue;
    }
    // As llama.cpp: the piece as a string when it is valid UTF-8, else its bytes.
    const std::string& piece = ctx.tokenizer->token_to_piece(id, /*special=*/true);
    json::value p;
    if (is_valid_utf8(piece)) {
      p = json::string(piece);
    } else {
      json::array bytes;
      for (unsigned char c : piece) bytes.push_back(static_cast<int64_t>(c));
      p = std::move(bytes);
    }
    tokens.push_back(json::object{{"id", id}, {"piece", std::move(p)}});
  }
  reply_json(ctx, kTokenize, writer, 200, json::serialize(json::object{{"tokens", std::move(tokens)}}));
}

void handle_detokenize(const ApiContext& ctx, const net::HttpRequest& req, net::ResponseWriter& writer) {
  auto fail = [&](const auto& e) { reply_error(ctx, kDetokenize, writer, e); };
  if (ctx.tokenizer == nullptr) return fail(no_tokenizer());
  json::object body;
  if (Status s = parse_json_object(req.body, &body); !s.ok()) return fail(s);
  const json::value* tokens = field(body, "tokens");
  if (tokens == nullptr) return fail(Status::invalid_param("tokens", "'tokens' is required"));
  if (!tokens->is_array()) return fail(Status::invalid_param("tokens", "'tokens' must be an array of token ids"));
  const int64_t n_vocab = ctx.tokenizer->n_vocab();
  std::vector<int32_t> ids;
  for (const json::value& t : tokens->get_array()) {
    const std::optional<int64_t> id = as_integer(t);
    if (!id) return fail(Status::invalid_param("tokens", "'tokens' must be an array of token ids"));
    if (*id < 0 || *id >= n_vocab) {
      return fail(Status::invalid_param(
          "tokens", "token " + std::to_string(*id) + " is out of range [0, " + std::to_string(n_vocab) + ")"));
    }
    ids.push_back(static_cast<int32_t>(*id));
  }
  const std::string text = ctx.tokenizer->detokenize(ids, /*remove_special=*/false, /*unparse_special=*/true);
  reply_json(ctx, kDetokenize, writer, 200, json::serialize(json::object{{"content", sanitize_utf8(text)}}));
}

void handle_apply_template(const ApiContext& ctx, const net::HttpRequest& req, net::ResponseWriter& writer) {
  auto fail = [&](const auto& e) { reply_error(ctx, kApplyTemplate, writer, e); };
  json::object body;
  engine::chat::ChatRequest chat;
  if (Status s = parse_json_object(req.body, &body); !s.ok()) return fail(s);
  if (Status s = parse_chat_messages(body, &chat); !s.ok()) return fail(s);
  engine::chat::MarkedText prompt;
  if (Status s = render_chat_prompt(ctx, &chat, &prompt); !s.ok()) return fail(s);
  reply_json(ctx, kApplyTemplate, writer, 200, json::serialize(json::object{{"prompt", sanitize_utf8(prompt.text)}}));
}

}  // namespace cellserve::server
