// Enrolment (issue 20, item 2): POST/GET /api/v1/enrollment-tokens, POST
// /api/v1/enrollment-tokens/{id}/withdraw, and
// POST /api/v1/processors/{id}/approve|revoke. On a closed hub only enrolled devices join; a
// revoked device is refused by any hub, and revoking one closes its tunnel so its replicas move.
#include <boost/json.hpp>

#include "fleet/crypto/identity.h"
#include "fleet/download/sha256.h"
#include "fleet/hub/hub_impl.h"
#include "fleet/spec/agent_protocol.h"

namespace cellserve::fleet {
namespace {

namespace json = boost::json;

constexpr int64_t kMaxTokenSeconds = 30LL * 24 * 3600;
constexpr int kMaxTokenUses = 10000;

}  // namespace

void Hub::Impl::create_enrollment_token(const net::HttpRequest& req, net::ResponseWriter& w) {
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
  t.created_ms = now_ms();
  t.expires_ms = t.created_ms + seconds * 1000;
  if (Status s = store->add_enrollment_token(t); !s.ok()) return send_error(w, 500, s.message());
  log("enrollment token " + t.hash.substr(0, 12) + " created: " + std::to_string(t.uses_left) + " use(s), expires in " +
      std::to_string(seconds) + " s" + (t.label.empty() ? "" : " (" + t.label + ")"));
  // The only time the token is shown: the hub keeps its hash.
  send_json(w, 201,
            json::serialize(json::object{{"token", token},
                                         {"id", t.hash.substr(0, 12)},
                                         {"label", t.label},
                                         {"uses_left", t.uses_left},
                                         {"expires_ms", t.expires_ms}}));
}

void Hub::Impl::list_enrollment_tokens(const net::HttpRequest&, net::ResponseWriter& w) {
  auto tokens = store->enrollment_tokens();
  if (!tokens.ok()) return send_error(w, 500, tokens.status().message());
  const int64_t now = now_ms();
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

void Hub::Impl::withdraw_enrollment_token(const std::string& id, net::ResponseWriter& w) {
  if (Status s = store->withdraw_enrollment_token(id); !s.ok()) {
    return send_error(w, s.code() == StatusCode::NotFound ? 404 : 500, s.message());
  }
  log("enrollment token " + id + " withdrawn");
  send_json(w, 200, json::serialize(json::object{{"id", id}, {"uses_left", 0}}));
}

void Hub::Impl::set_processor_enrollment(const std::string& id_text, Enrollment e, net::ResponseWriter& w) {
  const std::optional<std::string> id = canonical_identity(id_text);
  if (!id) return send_error(w, 404, "no processor '" + id_text.substr(0, 80) + "'");
  {
    std::lock_guard lock(state_mu);
    if (Status s = store->set_enrollment(*id, e, now_ms()); !s.ok()) {
      return send_error(w, s.code() == StatusCode::NotFound ? 404 : 500, s.message());
    }
  }
  log("processor " + id->substr(0, 16) + " " + (e == Enrollment::Revoked ? "revoked" : "approved"));
  if (e == Enrollment::Revoked) {
    // Cut it off now: its tunnel closes, and the reconcile loop moves its replicas.
    if (const std::shared_ptr<AgentLink> link = links.find(*id)) link->tunnel->close();
    request_reconcile();
  }
  send_json(w, 200, json::serialize(json::object{{"id", *id}, {"enrollment", enrollment_name(e)}}));
}

Status Hub::Impl::admit(const std::string& id, const std::string& enroll_token, Enrollment* enrollment) {
  std::lock_guard lock(state_mu);
  auto existing = store->processor(id);
  if (!existing.ok()) return existing.status();
  const std::string approve = "cellserve fleet approve " + id;
  if (existing->has_value() && (*existing)->enrollment == Enrollment::Revoked) {
    return Status(StatusCode::PermissionDenied,
                  "this device was revoked; only the operator can re-admit it (" + approve + ")");
  }
  *enrollment = Enrollment::Enrolled;
  if (options.api_key.empty()) return {};  // an open hub enrols whoever joins
  if (existing->has_value() && (*existing)->enrollment == Enrollment::Enrolled) return {};
  std::string refusal =
      "this device is not enrolled: start the agent with --enroll TOKEN (cellserve hub tokens create), "
      "or approve it: " +
      approve;
  if (!enroll_token.empty()) {
    const std::string hash = sha256_hex(enroll_token);
    bool redeemed = false;
    if (enroll_token.size() <= 128) {
      CS_ASSIGN_OR_RETURN(redeemed, store->redeem_enrollment_token(hash, now_ms()));
    }
    if (redeemed) {
      log("processor " + id.substr(0, 16) + " enrolled with token " + hash.substr(0, 12));
      return {};
    }
    refusal = "the enrollment token is unknown, used up or expired; the operator can approve this device: " + approve;
  }
  // Recorded as pending, so the operator can see and approve it; bounded, since keys are free.
  if (!existing->has_value()) {
    auto all = store->processors();
    if (!all.ok()) return all.status();
    size_t pending = 0;
    for (const Processor& p : *all) pending += p.enrollment == Enrollment::Pending;
    if (pending < kMaxPendingProcessors) {
      Processor p;
      p.id = id;
      p.name = id.substr(0, 12);
      p.enrollment = Enrollment::Pending;
      p.registered_ms = p.last_seen_ms = now_ms();
      (void)store->upsert_processor(p);
    }
  }
  return Status(StatusCode::PermissionDenied, refusal);
}

}  // namespace cellserve::fleet
