// Enrolment (issue 20, item 2): POST/GET /api/v1/enrollment-tokens, POST
// /api/v1/enrollment-tokens/{id}/withdraw, and
// POST /api/v1/processors/{id}/approve|revoke. On a closed hub only enrolled devices join; a
// revoked device is refused by any hub, and revoking one closes its tunnel so its replicas move.
#include <cctype>

#include <boost/json.hpp>

#include "fleet/crypto/identity.h"
#include "fleet/crypto/sha256.h"
#include "fleet/hub/admin_api.h"
#include "fleet/spec/agent_protocol.h"

namespace cellserve::fleet {
namespace {

namespace json = boost::json;

constexpr int64_t kMaxTokenSeconds = 30LL * 24 * 3600;
constexpr int kMaxTokenUses = 10000;

// A name the operator gives a device at approval: what allow lists may name besides its id.
bool valid_device_label(std::string_view name) {
  if (name.empty() || name.size() > 40) return false;
  for (const char c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != '-') return false;
  }
  return true;
}

}  // namespace

void AdminApi::add_enrollment_routes(net::RouteTable& routes) {
  routes.add("POST", "/api/v1/enrollment-tokens", admin(plain(&AdminApi::create_enrollment_token)));
  routes.add("GET", "/api/v1/enrollment-tokens", admin(plain(&AdminApi::list_enrollment_tokens)));
  routes.add("POST", "/api/v1/enrollment-tokens/{id}/withdraw", admin(by("id", &AdminApi::withdraw_enrollment_token)));
  routes.add("POST", "/api/v1/processors/{id}/approve-key", admin(by("id", &AdminApi::approve_key_change)));
  for (const Enrollment e : {Enrollment::Enrolled, Enrollment::Revoked}) {
    routes.add("POST", e == Enrollment::Enrolled ? "/api/v1/processors/{id}/approve" : "/api/v1/processors/{id}/revoke",
               admin([this, e](const net::HttpRequest& req, const net::PathParams& params, net::ResponseWriter& w) {
                 set_processor_enrollment(req, params.get("id"), e, w);
               }));
  }
}

void AdminApi::create_enrollment_token(const net::HttpRequest& req, net::ResponseWriter& w) {
  auto body = parse_json(req.body.empty() ? std::string_view("{}") : std::string_view(req.body), "request body");
  if (!body.ok()) return send_error(w, 400, body.status().message());
  if (!body->is_object())
    return send_error(w, 400, "the body must be an object: {\"uses\", \"expires_seconds\", \"label\"}");
  EnrollmentToken t;
  int64_t seconds = 24 * 3600;
  for (const auto& kv : body->as_object()) {
    const json::value& v = kv.value();
    if (kv.key() == "uses") {
      if (!v.is_int64() || v.as_int64() < 1 || v.as_int64() > kMaxTokenUses) {
        return send_error(w, 400, "uses must be an integer in [1, " + std::to_string(kMaxTokenUses) + "]");
      }
      t.uses_left = static_cast<int>(v.as_int64());
    } else if (kv.key() == "expires_seconds") {
      if (!v.is_int64() || v.as_int64() < 60 || v.as_int64() > kMaxTokenSeconds) {
        return send_error(w, 400,
                          "expires_seconds must be an integer in [60, " + std::to_string(kMaxTokenSeconds) + "]");
      }
      seconds = v.as_int64();
    } else if (kv.key() == "label") {
      if (!v.is_string() || v.as_string().size() > 100)
        return send_error(w, 400, "label must be a string of <= 100 bytes");
      t.label = std::string(v.as_string());
    } else {
      return send_error(w, 400, "unknown key '" + std::string(kv.key()) + "' (uses, expires_seconds, label)");
    }
  }
  const std::string token = "cse_" + random_hex(16);
  t.hash = sha256_hex(token);
  t.created_ms = state_.now_ms();
  t.expires_ms = t.created_ms + seconds * 1000;
  if (Status s = state_.store->add_enrollment_token(t); !s.ok()) return send_error(w, 500, s.message());
  state_.log("enrollment token " + t.hash.substr(0, 12) + " created: " + std::to_string(t.uses_left) +
             " use(s), expires in " + std::to_string(seconds) + " s" + (t.label.empty() ? "" : " (" + t.label + ")"));
  // The only time the token is shown: the hub keeps its hash.
  send_json(w, 201,
            json::serialize(json::object{{"token", token},
                                         {"id", t.hash.substr(0, 12)},
                                         {"label", t.label},
                                         {"uses_left", t.uses_left},
                                         {"expires_ms", t.expires_ms}}));
}

void AdminApi::list_enrollment_tokens(const net::HttpRequest&, net::ResponseWriter& w) {
  auto tokens = state_.store->enrollment_tokens();
  if (!tokens.ok()) return send_error(w, 500, tokens.status().message());
  const int64_t now = state_.now_ms();
  json::array out;
  for (const EnrollmentToken& t : *tokens) {
    out.push_back(json::object{{"id", t.hash.substr(0, 12)},
                               {"label", t.label},
                               {"uses_left", t.uses_left},
                               {"expires_ms", t.expires_ms},
                               {"created_ms", t.created_ms},
                               {"usable", t.uses_left > 0 && t.expires_ms > now}});
  }
  send_json(w, 200, json::serialize(json::object{{"tokens", std::move(out)}}));
}

void AdminApi::withdraw_enrollment_token(const std::string& id, net::ResponseWriter& w) {
  if (Status s = state_.store->withdraw_enrollment_token(id); !s.ok()) {
    return send_error(w, s.code() == StatusCode::NotFound ? 404 : 500, s.message());
  }
  state_.log("enrollment token " + id + " withdrawn");
  send_json(w, 200, json::serialize(json::object{{"id", id}, {"uses_left", 0}}));
}

void AdminApi::approve_key_change(const std::string& id_text, net::ResponseWriter& w) {
  const std::optional<std::string> id = canonical_identity(id_text);
  if (!id) return send_error(w, 404, "no processor '" + id_text.substr(0, 80) + "': an id is 64 hex digits");
  auto pin = state_.store->attestation_pin(*id);
  if (!pin.ok()) return send_error(w, 500, pin.status().message());
  if (!pin->has_value()) return send_error(w, 404, "processor " + *id + " is not pinned to an attested key");
  AttestationPin approved = **pin;
  const std::string held = approved.held;
  approved.change_approved = true;
  approved.held.clear();
  if (Status s = state_.store->put_attestation_pin(approved); !s.ok()) return send_error(w, 500, s.message());
  state_.log("processor " + id->substr(0, 16) + ": attested key change approved (was pinned to " +
             approved.key_sha256.substr(0, 16) + (held.empty() ? "" : "; held: " + held) +
             "); its next valid attestation pins the key it presents");
  send_json(w, 200,
            json::serialize(json::object{{"id", *id},
                                         {"attested_key",
                                          "change approved: the next valid attestation "
                                          "pins the key it presents"}}));
}

void AdminApi::set_processor_enrollment(const net::HttpRequest& req, const std::string& id_text, Enrollment e,
                                        net::ResponseWriter& w) {
  const std::optional<std::string> id = canonical_identity(id_text);
  if (!id) return send_error(w, 404, "no processor '" + id_text.substr(0, 80) + "': an id is 64 hex digits");
  // approve may fix the device's name for allow lists: {"name": "dev9"}; unique at this hub.
  std::optional<std::string> label;
  if (e == Enrollment::Enrolled && !req.body.empty()) {
    auto body = parse_json(req.body, "request body");
    if (!body.ok()) return send_error(w, 400, body.status().message());
    const json::object* o = body->if_object();
    if (o == nullptr) return send_error(w, 400, "the body must be an object: {\"name\": \"...\"}");
    for (const auto& kv : *o) {
      if (kv.key() != "name")
        return send_error(w, 400, "unknown key '" + std::string(kv.key()).substr(0, 40) + "' (name)");
      if (!kv.value().is_string() || !valid_device_label(kv.value().as_string())) {
        return send_error(w, 400, "name must be 1..40 of [A-Za-z0-9._-]");
      }
      label = std::string(kv.value().as_string());
    }
  }
  std::shared_ptr<AgentLink> connected;
  {
    // Under state_mu, like registration (agent_admission.cpp): either a registration in flight
    // re-reads the revocation, or its link is already listed here and is closed below.
    std::lock_guard lock(state_.state_mu);
    if (Status s = state_.store->set_enrollment(*id, e, label, state_.now_ms()); !s.ok()) {
      return send_error(w, s.code() == StatusCode::InvalidArgument ? 409 : 500, s.message());
    }
    if (e == Enrollment::Revoked) connected = state_.links.find(*id);
  }
  state_.log("processor " + id->substr(0, 16) + " " + (e == Enrollment::Revoked ? "revoked" : "approved") +
             (label ? " as " + *label : ""));
  if (e == Enrollment::Revoked) {
    // Cut it off now: its tunnel closes, and the reconcile loop moves its replicas.
    if (connected) connected->tunnel->close();
    state_.request_reconcile();
  }
  json::object out{{"id", *id}, {"enrollment", enrollment_name(e)}};
  if (label) out["label"] = *label;
  send_json(w, 200, json::serialize(out));
}

}  // namespace cellserve::fleet
