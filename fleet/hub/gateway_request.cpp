#include "fleet/hub/gateway_request.h"

#include <algorithm>

#include <boost/json.hpp>

#include "fleet/crypto/sha256.h"
#include "server/api/token_limit.h"

namespace cellserve::fleet {
namespace {

namespace json = boost::json;

// The text of a message's content: a string, or the text parts of an array of parts.
void append_content(const json::value& content, std::string& out) {
  if (content.is_string()) {
    out += content.as_string();
  } else if (content.is_array()) {
    for (const json::value& part : content.as_array()) {
      if (!part.is_object()) continue;
      if (const json::value* text = part.as_object().if_contains("text"); text != nullptr && text->is_string()) {
        out += text->as_string();
      }
    }
  }
}

// A chat message, or a Responses input item ("output" is a function_call_output's text): its
// role and text, each on a line.
void append_message(const json::value& m, std::string& out) {
  if (!m.is_object()) return;
  const json::object& o = m.as_object();
  if (const json::value* role = o.if_contains("role"); role != nullptr && role->is_string()) out += role->as_string();
  out += '\n';
  if (const json::value* content = o.if_contains("content")) append_content(*content, out);
  if (const json::value* output = o.if_contains("output")) append_content(*output, out);
  out += '\n';
}

// As deep as the replica's own parser accepts (server/api/request_parsing.cpp), so the hub never
// refuses a body the replica would take.
json::value parse(std::string_view body, boost::system::error_code& ec) {
  json::parse_options opts;
  opts.max_depth = 64;
  return json::parse(body, ec, {}, opts);
}

}  // namespace

Result<json::object> parse_request_body(std::string_view body) {
  boost::system::error_code ec;
  json::value v = parse(body, ec);
  if (ec) return Status::invalid_argument("the request body is not valid JSON: " + ec.message());
  if (!v.is_object()) return Status::invalid_argument("the request body must be a JSON object");
  return std::move(v.as_object());
}

Result<GatewayRequest> read_gateway_request(std::string_view body, std::string_view endpoint) {
  CS_ASSIGN_OR_RETURN(const json::object o, parse_request_body(body));
  return read_gateway_request(o, endpoint);
}

Result<GatewayRequest> read_gateway_request(const json::object& o, std::string_view endpoint) {
  GatewayRequest g;
  if (const json::value* model = o.if_contains("model"); model != nullptr && !model->is_null()) {
    if (!model->is_string()) return Status::invalid_argument("'model' must be a string");
    g.model = std::string(model->as_string());
  }
  if (const json::value* stream = o.if_contains("stream"); stream != nullptr && stream->is_bool()) {
    g.stream = stream->as_bool();
  }
  g.work.max_tokens = kDefaultMaxTokens;  // also for n_predict -1: until the end is not known here
  CS_ASSIGN_OR_RETURN(const server::TokenLimit limit,
                      server::read_token_limit(o, server::token_limit_fields(endpoint)));
  if (limit.tokens) g.work.max_tokens = static_cast<double>(*limit.tokens);
  // "n" choices generate n times the tokens (the replica refuses more than it allows).
  if (const json::value* n = o.if_contains("n"); n != nullptr && n->is_int64() && n->as_int64() > 1) {
    g.work.max_tokens *= static_cast<double>(std::min<int64_t>(n->as_int64(), kMaxChoices));
  }
  std::string prompt;
  if (const json::value* messages = o.if_contains("messages"); messages != nullptr && messages->is_array()) {
    for (const json::value& m : messages->as_array()) append_message(m, prompt);
  } else if (const json::value* input = o.if_contains("input"); input != nullptr) {
    // The Responses API: its instructions are the system turn, its input the messages, so a case
    // sent either way lands on the replica that holds its prefix.
    if (const json::value* in = o.if_contains("instructions"); in != nullptr && in->is_string()) {
      prompt += "system\n";
      prompt += in->as_string();
      prompt += '\n';
    }
    if (input->is_string()) {
      prompt += "user\n";
      prompt += input->as_string();
      prompt += '\n';
    } else if (input->is_array()) {
      for (const json::value& item : input->as_array()) append_message(item, prompt);
    }
  } else if (const json::value* p = o.if_contains("prompt"); p != nullptr) {
    if (p->is_string()) {
      prompt = std::string(p->as_string());
    } else if (p->is_array() && !p->as_array().empty() && p->as_array().front().is_string()) {
      prompt = std::string(p->as_array().front().as_string());
    }
  }
  g.work.prompt_tokens = static_cast<double>(prompt.size()) / kBytesPerToken;
  if (prompt.size() >= kAffinityPrefixBytes) {
    g.work.prefix_hash = fnv1a(std::string_view(prompt).substr(0, kAffinityPrefixBytes));
  }
  return g;
}

void address_to_replica(net::HttpRequest& request, const std::string& replica_key) {
  for (const char* name : {"authorization", "x-api-key", "cookie"}) request.headers.erase(name);
  request.headers["authorization"] = "Bearer " + replica_key;
}

void set_cache_partition(net::HttpRequest& request, const std::string& key_id) {
  if (key_id.empty()) return;
  // A digest, not the key's id: the device learns which requests share a key, not which key.
  request.headers["x-cellserve-cache-partition"] = sha256_hex("cache-partition " + key_id).substr(0, 32);
}

std::string with_model(json::object body, const std::string& model) {
  body["model"] = model;
  return json::serialize(body);
}

std::string with_model(std::string_view body, const std::string& model) {
  Result<json::object> parsed = parse_request_body(body);
  return parsed.ok() ? with_model(std::move(parsed).value(), model) : std::string(body);
}

}  // namespace cellserve::fleet
