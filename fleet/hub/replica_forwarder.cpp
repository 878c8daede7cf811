#include "fleet/hub/replica_forwarder.h"

#include <cstdio>

#include "fleet/hub/first_byte_deadline.h"
#include "fleet/hub/gateway_request.h"
#include "fleet/hub/speed_probe.h"
#include "fleet/spec/replica_address.h"

namespace cellserve::fleet {

WaitingLine& ReplicaForwarder::line(const std::string& deployment) {
  std::lock_guard lock(lines_mu_);
  std::unique_ptr<WaitingLine>& line = lines_[deployment];
  if (!line) {
    line = std::make_unique<WaitingLine>(
        state_.clock, [this, deployment](size_t waiting) { state_.traffic.observe_queue(deployment, waiting); });
  }
  return *line;
}

std::map<std::string, size_t> ReplicaForwarder::queue_lengths() {
  std::lock_guard lock(lines_mu_);
  std::map<std::string, size_t> out;
  for (const auto& [name, line] : lines_) out[name] = line->waiting();
  return out;
}

std::map<std::string, ReplicaForwarder::QueueWait> ReplicaForwarder::queue_waits() {
  std::lock_guard lock(lines_mu_);
  std::map<std::string, QueueWait> out;
  for (const auto& [name, line] : lines_) {
    out[name] = {line->waiting(), std::chrono::duration<double>(line->longest_wait()).count()};
  }
  return out;
}

bool ReplicaForwarder::eligible(const ReplicaView& r, const std::set<std::string>& excluded) const {
  return r.state == ReplicaState::Ready && !r.ejected && !r.draining && r.secrets_current && !r.device_paused &&
         !excluded.contains(r.processor_id) && !state_.agreement.quarantined(r.processor_id);
}

std::vector<ReplicaView> ReplicaForwarder::routable(const std::string& deployment,
                                                    const std::set<std::string>& excluded) {
  std::vector<ReplicaView> out;
  for (ReplicaView& r : state_.registry.replicas(deployment)) {
    if (!eligible(r, excluded) || !transport_of_(r.processor_id, true)) continue;
    out.push_back(std::move(r));
  }
  return out;
}

bool ReplicaForwarder::only_transports_missing(const std::string& deployment, const std::set<std::string>& excluded) {
  for (const ReplicaView& r : state_.registry.replicas(deployment)) {
    if (eligible(r, excluded) && !transport_of_(r.processor_id, true)) return true;
  }
  return false;
}

bool ReplicaForwarder::reserve(const std::string& deployment, const RequestWork& work,
                               const std::set<std::string>& excluded, Reservation& out) {
  const std::vector<ReplicaView> candidates = routable(deployment, excluded);
  const std::optional<size_t> pick = choose_replica(candidates, work);
  if (!pick) return false;
  const ReplicaView& r = candidates[*pick];
  Reservation got{r.index, r.processor_id, transport_of_(r.processor_id, true),
                  state_.registry.begin_request(deployment, r.index), estimated_seconds(r, work)};
  if (!got.transport || !got.in_flight) return false;  // gone since the candidates were read
  out = std::move(got);
  return true;
}

bool ReplicaForwarder::reserve_replica(const std::string& deployment, const ReplicaView& replica, Reservation& out) {
  Reservation got{replica.index, replica.processor_id, transport_of_(replica.processor_id, false),
                  ReplicaRegistry::InFlight(), 0};
  if (!got.transport) return false;
  got.in_flight = state_.registry.begin_request(deployment, replica.index);
  out = std::move(got);
  return true;
}

void ReplicaForwarder::release(Reservation& r, const std::string& deployment) {
  r = Reservation();  // the slot is free again before anyone is woken
  line(deployment).wake();
}

Attempt ReplicaForwarder::send(Reservation& r, const DeploymentView& deployment, net::HttpRequest request,
                               std::string_view rest, net::ResponseWriter& out, std::chrono::milliseconds first_byte) {
  Attempt a;
  a.index = r.index;
  a.processor_id = r.processor_id;
  request.path = replica_path(deployment.name, r.index, rest);
  address_to_replica(request, deployment.replica_key);
  FirstByteDeadlineWriter timed(out, state_.clock.now() + first_byte, state_.clock);
  SpeedProbe probe(timed, state_.clock);
  a.status = r.transport->forward(request, probe, &a.responded);
  a.expired = timed.expired();
  if (a.status.ok() && !a.expired) measure(deployment.name, r, probe.answer_sample(request.body.size()));
  return a;
}

void ReplicaForwarder::measure(const std::string& deployment, const Reservation& r,
                               const std::optional<AnswerSample>& sample) {
  if (!sample || !state_.registry.record_speed(deployment, r.index, r.processor_id, *sample)) return;
  const ReplicaRegistry::Lookup l = state_.registry.find(deployment, r.index);
  if (l.kind != ReplicaRegistry::Lookup::Kind::Found) return;
  const ReplicaView& v = l.replica;
  char figures[256];
  std::snprintf(figures, sizeof(figures),
                "claims prompt %.1f and generation %.1f tok/s, measured %.1f and %.1f; its answers took %.1fx the "
                "time its claim predicts",
                v.claimed.prefill_tps, v.claimed.decode_tps, v.measured.prefill().value, v.measured.decode().value,
                v.measured.speed_claim_ratio());
  state_.log("replica " + deployment + "/" + std::to_string(r.index) + " on " + r.processor_id.substr(0, 16) +
             ": speed claim inflated (" + figures + "); routed on its measured speed");
}

void ReplicaForwarder::record(const std::string& deployment, int index, bool ok, Metrics metrics) {
  const bool ejected = state_.registry.record_result(deployment, index, ok);
  if (metrics == Metrics::Uncounted) return;
  if (ejected) state_.metrics.count_ejection(deployment, index);
  if (!ok) state_.metrics.count_failure(deployment, index);
}

bool ReplicaForwarder::hold_tokens(const std::string& key_id, int64_t tokens, net::ResponseWriter& w) {
  const KeyBook::Check c = state_.keys.hold(key_id, tokens, state_.now_ms());
  if (c.kind == KeyBook::Check::Kind::Allowed) return true;
  if (c.kind == KeyBook::Check::Kind::Unavailable) {
    state_.log("api key " + key_id + ": tokens not held: " + c.error);
    w.send(503, "application/json",
           net::error_body(net::ApiError{503, "the hub cannot count API key " + key_id + "'s tokens now; retry shortly",
                                         "server_error", "", "quota_unavailable"}),
           {{"Retry-After", "1"}});
    return false;
  }
  if (c.kind != KeyBook::Check::Kind::OutOfTokens) {
    w.send(401, "application/json",
           net::error_body(net::ApiError{401, "API key " + key_id + " was revoked", "authentication_error", "",
                                         "invalid_api_key"}));
    return false;
  }
  const std::string message = "this request may use up to " + std::to_string(tokens) +
                              " tokens (its prompt and max_tokens, or the whole context when max_tokens is unset) "
                              "and API key " +
                              key_id + " has " + std::to_string(c.left) + " of its " + std::to_string(c.limit) +
                              " tokens for today (UTC) neither used nor held by requests in flight";
  w.send(429, "application/json",
         net::error_body(net::ApiError{429, message, "rate_limit_error", "", "tokens_exceeded"}),
         {{"Retry-After", std::to_string(c.retry_after_s)}});
  return false;
}

void ReplicaForwarder::settle(const std::string& key_id, int64_t held, bool answered, const MeteredWriter& metered,
                              size_t request_bytes) {
  if (key_id.empty()) return;
  state_.saved(state_.keys.settle(key_id, held, answered ? metered.tokens_used(request_bytes) : 0, state_.now_ms()),
               "api key " + key_id + ": settling its tokens");
}

}  // namespace cellserve::fleet
