#include "fleet/signing/answer_signature.h"

#include <boost/json.hpp>

#include "fleet/crypto/identity.h"
#include "fleet/crypto/sha256.h"

namespace cellserve::fleet {
namespace {

namespace json = boost::json;

constexpr size_t kMaxAdapters = 16;
// 9999-12-31T23:59:59.999Z: a bound that keeps time arithmetic (clock skew windows) in range.
constexpr int64_t kMaxTimeMs = 253402300799999;

Status bad(const std::string& what) { return Status::invalid_argument("signature: " + what); }

Result<std::string> hex_field(const json::object& o, std::string_view key, size_t digits) {
  const json::value* v = o.if_contains(key);
  if (v == nullptr || !v->is_string()) return bad(std::string(key) + " is missing");
  std::string s(v->as_string());
  if (s.size() != digits) return bad(std::string(key) + " must be " + std::to_string(digits) + " hex digits");
  for (char c : s) {
    if (!std::isxdigit(static_cast<unsigned char>(c))) return bad(std::string(key) + " must be hex");
  }
  return s;
}

}  // namespace

std::string signed_message(const AnswerSignature& s) {
  std::string adapters;
  for (const std::string& a : s.adapter_sha256) adapters += (adapters.empty() ? "" : ",") + a;
  return "cellserve-answer-v1\ndeployment=" + s.deployment + "\ndevice=" + s.device + "\nmodel=" + s.model_sha256 +
         "\nadapters=" + adapters + "\ntime_ms=" + std::to_string(s.time_ms) + "\nrequest=" + s.request_sha256 +
         "\nresponse=" + s.response_sha256 + "\n";
}

std::string answer_signature_json(const AnswerSignature& s) {
  json::array adapters;
  for (const std::string& a : s.adapter_sha256) adapters.emplace_back(a);
  return json::serialize(json::object{{"v", 1},
                                      {"deployment", s.deployment},
                                      {"device", s.device},
                                      {"model_sha256", s.model_sha256},
                                      {"adapters_sha256", std::move(adapters)},
                                      {"time_ms", s.time_ms},
                                      {"request_sha256", s.request_sha256},
                                      {"response_sha256", s.response_sha256},
                                      {"signature", s.signature}});
}

Result<AnswerSignature> answer_signature_from_json(std::string_view text) {
  if (text.size() > 8192) return bad("too long");
  boost::system::error_code ec;
  const json::value v = json::parse(text, ec);
  if (ec || !v.is_object()) return bad("not a JSON object");
  const json::object& o = v.as_object();
  const json::value* version = o.if_contains("v");
  if (version == nullptr || !version->is_int64() || version->as_int64() != 1) return bad("unknown version");
  AnswerSignature s;
  const json::value* dep = o.if_contains("deployment");
  if (dep == nullptr || !dep->is_string() || dep->as_string().empty() || dep->as_string().size() > 64) {
    return bad("deployment is missing");
  }
  s.deployment = std::string(dep->as_string());
  for (char c : s.deployment) {
    if (c == '\n' || c == '=') return bad("deployment is not a deployment name");
  }
  CS_ASSIGN_OR_RETURN(s.device, hex_field(o, "device", 64));
  CS_ASSIGN_OR_RETURN(s.model_sha256, hex_field(o, "model_sha256", 64));
  CS_ASSIGN_OR_RETURN(s.request_sha256, hex_field(o, "request_sha256", 64));
  CS_ASSIGN_OR_RETURN(s.response_sha256, hex_field(o, "response_sha256", 64));
  CS_ASSIGN_OR_RETURN(s.signature, hex_field(o, "signature", 128));
  const json::value* time = o.if_contains("time_ms");
  if (time == nullptr || !time->is_int64() || time->as_int64() < 0) return bad("time_ms is missing");
  if (time->as_int64() > kMaxTimeMs) return bad("time_ms is past the year 9999");
  s.time_ms = time->as_int64();
  const json::value* adapters = o.if_contains("adapters_sha256");
  if (adapters == nullptr || !adapters->is_array() || adapters->as_array().size() > kMaxAdapters) {
    return bad("adapters_sha256 must be a list of at most " + std::to_string(kMaxAdapters));
  }
  for (const json::value& a : adapters->as_array()) {
    json::object one{{"a", a}};
    CS_ASSIGN_OR_RETURN(std::string hex, hex_field(one, "a", 64));
    s.adapter_sha256.push_back(std::move(hex));
  }
  return s;
}

std::string signature_comment(const AnswerSignature& s) {
  return std::string(kSignatureCommentPrefix) + answer_signature_json(s) + "\n\n";
}

Result<std::pair<std::string_view, AnswerSignature>> split_signed_stream(std::string_view body) {
  // The last line that starts with the prefix.
  size_t at = std::string_view::npos;
  for (size_t from = body.size(); from != 0;) {
    const size_t found = body.rfind(kSignatureCommentPrefix, from - 1);
    if (found == std::string_view::npos) break;
    if (found == 0 || body[found - 1] == '\n') {
      at = found;
      break;
    }
    from = found;
  }
  if (at == std::string_view::npos) return Status::not_found("the stream carries no cellserve-signature comment");
  const size_t end = body.find('\n', at);
  if (end == std::string_view::npos) return bad("the signature comment is cut off");
  const size_t json_at = at + kSignatureCommentPrefix.size();
  CS_ASSIGN_OR_RETURN(AnswerSignature s, answer_signature_from_json(body.substr(json_at, end - json_at)));
  // What follows is not covered by the digest: only the constant end marker may be there.
  std::string rest;
  for (const char c : body.substr(end)) {
    if (c != '\n' && c != '\r') rest += c;
  }
  if (!rest.empty() && rest != "data: [DONE]") return bad("bytes follow the signature comment that it does not cover");
  return std::pair<std::string_view, AnswerSignature>(body.substr(0, at), std::move(s));
}

bool signature_valid(const AnswerSignature& s) { return verify_signature(s.device, signed_message(s), s.signature); }

}  // namespace cellserve::fleet
