// The deployment endpoint: /d/<deployment>/v1/... (or Host <deployment>.<domain>) answers the
// OpenAI API of the whole deployment. Each request goes to the replica with the lowest estimated
// completion time (route_choice.h), waits in the deployment's queue at the hub while every
// replica is at capacity (waiting_line.h), and is retried on another replica when the one chosen
// fails or refuses before its first response byte (failover_writer.h). Reads only the registry.
#include "fleet/hub/gateway.h"

#include <algorithm>
#include <charconv>
#include <condition_variable>
#include <cstdio>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

#include <boost/json.hpp>

#include "fleet/hub/failover_writer.h"
#include "fleet/hub/first_byte_deadline.h"
#include "fleet/hub/gateway_request.h"
#include "fleet/hub/metered_writer.h"
#include "fleet/hub/relay_writer.h"
#include "fleet/hub/route_choice.h"
#include "fleet/hub/token_reservation.h"
#include "fleet/hub/user_access.h"
#include "net/bearer.h"
#include "net/request_timeout.h"

namespace cellserve::fleet {
namespace {

namespace json = boost::json;

// The request's own deadline from X-Request-Timeout (net/request_timeout.h); nullopt when absent.
Result<std::optional<std::chrono::milliseconds>> request_timeout_ms(const net::HttpRequest& req) {
  CS_ASSIGN_OR_RETURN(const std::optional<std::chrono::duration<double>> seconds, net::request_timeout(req));
  if (!seconds) return std::optional<std::chrono::milliseconds>();
  return std::optional(std::chrono::duration_cast<std::chrono::milliseconds>(*seconds));
}

// What is left until `deadline`, as X-Request-Timeout's seconds (at least a millisecond: a
// deadline that passed while the request was being sent still reaches the device as one).
std::string remaining_seconds(Clock::time_point deadline, Clock::time_point now) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now);
  char text[32];
  std::snprintf(text, sizeof(text), "%.3f", std::max<int64_t>(left.count(), 1) / 1000.0);
  return text;
}

// Whose turn a queued request waits for: its API key (hashed: the line never holds a secret),
// else its client address.
std::string client_key(const net::HttpRequest& req) {
  const std::string key = net::request_api_key(req);
  if (!key.empty()) return "key:" + std::to_string(fnv1a(key));
  return "address:" + req.remote_address;
}

void send_models(net::ResponseWriter& w, const DeploymentView& d) {
  const int64_t created_s = d.created_ms / 1000;
  json::array data;
  for (const std::string& id : {d.name, d.gateway.alias}) {
    if (id.empty() || (!data.empty() && id == d.name)) continue;
    data.push_back(json::object{{"id", id}, {"object", "model"}, {"created", created_s}, {"owned_by", "cellserve"}});
  }
  send_json(w, 200, json::serialize(json::object{{"object", "list"}, {"data", std::move(data)}}));
}

}  // namespace

void Gateway::add_routes(net::RouteTable& routes) {
  using net::HttpRequest;
  using net::PathParams;
  using net::ResponseWriter;
  routes.add("*", kDeploymentRoute, [this](const HttpRequest& req, const PathParams& params, ResponseWriter& w) {
    const std::string& name = params.get("deployment");
    std::string key_id;
    if (!user_allowed(state_, req, w, name, &key_id)) return;
    if (!valid_deployment_name(name)) return send_error(w, 404, "no deployment named '" + name.substr(0, 64) + "'");
    serve_deployment(req, w, name, key_id, params.get("rest"));
  });
  routes.add("*", kReplicaRoute, [this](const HttpRequest& req, const PathParams& params, ResponseWriter& w) {
    std::string key_id;
    if (!user_allowed(state_, req, w, params.get("deployment"), &key_id)) return;
    const std::optional<ReplicaAddress> address = replica_address(params);
    if (!address) return send_error(w, 404, "no replica at " + req.path);
    proxy_replica(req, w, *address, key_id);
  });
}

void Gateway::serve_deployment(const net::HttpRequest& req, net::ResponseWriter& w, const std::string& name,
                               const std::string& key_id, const std::string& rest) {
  const std::optional<DeploymentView> dep = state_.registry.deployment(name);
  if (!dep) return send_error(w, 404, "no deployment named '" + name + "'");
  // The body is parsed here, once: the quota hold, the model and the work are read from it.
  const Result<json::object> body =
      req.method == "POST" ? parse_request_body(req.body) : Result<json::object>(json::object());
  // An API key's daily tokens: the request's most is held now and settled to its use at the end.
  int64_t held = 0;
  if (!key_id.empty() && req.method == "POST") {
    held = token_reservation(body.ok() ? &*body : nullptr, req.body.size(), rest, dep->ctx_size);
    if (!forwarder_.hold_tokens(key_id, held, w)) return;
  }
  const auto started = state_.clock.now();
  // A copy of the answer is kept when it is drawn for a spot check (it runs after the answer).
  AnswerCapture answer(w, checks_ != nullptr && checks_->draws(*dep, rest, body));
  MeteredWriter metered(answer);
  std::optional<net::HttpRequest> keyed;  // a copy only where the request changes
  if (!key_id.empty()) set_cache_partition(keyed.emplace(req), key_id);
  const net::HttpRequest& sent = keyed ? *keyed : req;
  route_request(sent, body, metered, *dep, rest);
  if (checks_ != nullptr && req.method == "POST") checks_->after_answer(*dep, sent, rest, metered.replica(), answer);
  const int status = metered.status() != 0 ? metered.status() : 499;  // nothing sent: the client left
  const double latency_s = std::chrono::duration<double>(state_.clock.now() - started).count();
  std::optional<double> first_byte_s;
  if (metered.first_byte()) first_byte_s = std::chrono::duration<double>(*metered.first_byte() - started).count();
  state_.metrics.count_request(name, metered.replica(), status);
  state_.metrics.observe_latency(name, latency_s);
  if (first_byte_s) state_.metrics.observe_first_byte(name, *first_byte_s);
  if (metered.completion_tokens() > 0) state_.metrics.add_completion_tokens(name, metered.completion_tokens());
  state_.traffic.record_request(
      name, {status, latency_s * 1000, first_byte_s ? std::optional(*first_byte_s * 1000) : std::nullopt,
             metered.completion_tokens()});
  forwarder_.settle(key_id, held, status == 200, metered, req.body.size());
}

std::optional<std::chrono::milliseconds> Gateway::line_limit_for(const std::string& name,
                                                                 std::chrono::milliseconds wait_limit,
                                                                 net::ResponseWriter& w) {
  if (!forwarder_.routable(name, {}).empty()) return wait_limit;
  // Ready replicas none of which can be reached this moment (their agents are moving to another
  // hub, or the link to the hub holding them is being dialed again): the request waits in the
  // line for one to come back, a short while at most.
  if (forwarder_.only_transports_missing(name, {})) {
    return std::min(wait_limit, std::chrono::milliseconds(kUnreachableReadyWait));
  }
  int ready = 0;
  int paused = 0;  // ready, but its device takes no new requests (a low battery)
  for (const ReplicaView& r : state_.registry.replicas(name)) {
    ready += r.state == ReplicaState::Ready;
    paused += r.state == ReplicaState::Ready && r.device_paused;
  }
  const std::string paused_text = paused > 0 ? ", " + std::to_string(paused) + " of them on a paused device" : "";
  send_error(w, 503,
             "no replica of '" + name + "' can take requests now (" + std::to_string(ready) + " ready" + paused_text +
                 ", the rest starting or failing); retry shortly",
             {{"Retry-After", "5"}});
  return std::nullopt;
}

void Gateway::route_request(const net::HttpRequest& req, const Result<json::object>& parsed_body,
                            net::ResponseWriter& w, const DeploymentView& deployment, const std::string& rest) {
  const std::string& name = deployment.name;
  const DeploymentView* dep = &deployment;
  if (rest == "/models") {
    if (req.method != "GET" && req.method != "HEAD") {
      return w.send(405, "application/json", net::error_body(net::api_error(405, "use GET for /v1/models")),
                    {{"Allow", "GET, HEAD"}});
    }
    return send_models(w, *dep);
  }

  // The body's model and size; a body that is not JSON is refused here, before any queue.
  GatewayRequest g;
  g.work.max_tokens = kDefaultMaxTokens;
  std::string body = req.body;
  if (req.method == "POST") {
    auto parsed =
        parsed_body.ok() ? read_gateway_request(*parsed_body, rest) : Result<GatewayRequest>(parsed_body.status());
    if (!parsed.ok()) {
      return w.send(400, "application/json", net::error_body(net::api_error_from_status(parsed.status())));
    }
    g = std::move(parsed).value();
    if (!g.model.empty() && g.model != name) {
      if (!dep->serves(g.model)) {
        net::ApiError e = net::api_error(
            404, "The model '" + g.model + "' does not exist: this endpoint serves '" + name + "'" +
                     (dep->gateway.alias.empty() ? std::string() : " (also called '" + dep->gateway.alias + "')"));
        e.param = "model";
        e.code = "model_not_found";
        return w.send(404, "application/json", net::error_body(e));
      }
      body = with_model(*parsed_body, name);  // the replicas know the deployment by its name
    }
  }

  auto own_timeout = request_timeout_ms(req);
  if (!own_timeout.ok()) return send_error(w, 400, own_timeout.status().message());
  std::chrono::milliseconds wait_limit(dep->gateway.queue_timeout_ms);
  if (*own_timeout) wait_limit = std::min(wait_limit, **own_timeout);
  const Clock::time_point deadline = state_.clock.now() + wait_limit;
  const Clock::time_point request_deadline = state_.clock.now() + own_timeout->value_or(std::chrono::milliseconds(0));

  // Nothing routable: 503 at once, unless ready replicas only lack their transport this moment.
  const std::optional<std::chrono::milliseconds> line_limit_or = line_limit_for(name, wait_limit, w);
  if (!line_limit_or) return;
  std::chrono::milliseconds line_limit = *line_limit_or;
  Clock::time_point line_deadline = std::min(deadline, state_.clock.now() + line_limit);
  WaitingLine& line = forwarder_.line(name);
  const std::string key = client_key(req);
  Attempts tries;
  for (int attempt = 1; attempt <= kMaxAttempts; ++attempt) {
    Reservation chosen;
    const WaitingLine::TryGrant reserve = [&] { return forwarder_.reserve(name, g.work, tries.failed, chosen); };
    // A retry goes ahead of the line when a replica is free: it waited its turn already.
    WaitingLine::Outcome outcome = WaitingLine::Outcome::Granted;
    if (attempt == 1 || !reserve()) {
      if (attempt > 1 && forwarder_.routable(name, tries.failed).empty()) {
        if (!forwarder_.only_transports_missing(name, tries.failed)) break;  // nowhere else to go
        line_limit = std::min(wait_limit, std::chrono::milliseconds(kUnreachableReadyWait));
        line_deadline = std::min(deadline, state_.clock.now() + line_limit);
      }
      const auto queued = state_.clock.now();
      outcome = line.wait(
          key, static_cast<size_t>(dep->gateway.queue_max), line_deadline, [&] { return w.client_gone(); }, reserve);
      state_.metrics.observe_queue_wait(name, std::chrono::duration<double>(state_.clock.now() - queued).count());
    }
    if (attempt > 1) {
      state_.metrics.count_retry(name);
      state_.traffic.count_retry(name);
    }
    if (outcome == WaitingLine::Outcome::Full) {
      return send_error(w, 429,
                        "deployment '" + name + "' is at capacity and its queue is full (" +
                            std::to_string(dep->gateway.queue_max) + " waiting); retry shortly",
                        {{"Retry-After", "1"}});
    }
    if (outcome == WaitingLine::Outcome::TimedOut) {
      net::ApiError e =
          net::api_error(504, "no replica of '" + name + "' became free within " + std::to_string(line_limit.count()) +
                                  " ms" + (attempt > 1 ? " (after a failed attempt: " + tries.last_failure + ")" : ""));
      e.type = "timeout";
      return w.send(504, "application/json", net::error_body(e));
    }
    if (outcome == WaitingLine::Outcome::Abandoned) return;  // the client left while waiting

    net::HttpRequest forwarded = req;
    forwarded.body = body;
    // The client's own deadline travels on, less the time spent here, so the device frees the
    // slot when the client has given up.
    if (*own_timeout) forwarded.headers["x-request-timeout"] = remaining_seconds(request_deadline, state_.clock.now());
    const std::string replica_rest = "/v1" + rest;
    if (dep->gateway.hedge_max_tokens > 0 && !g.stream && req.method == "POST" &&
        g.work.max_tokens <= dep->gateway.hedge_max_tokens) {
      if (forward_hedged(forwarded, std::move(chosen), *dep, g.work, replica_rest, tries, w)) {
        for (const int refused_by : tries.unconfirmed) forwarder_.record(name, refused_by, false);
        return;
      }
      tries.refused_status = tries.held ? tries.held->status : 0;
      if (w.client_gone()) return;
      continue;
    }
    FailoverWriter failover(w, attempt < kMaxAttempts, chosen.index);
    RelayWriter relay(failover);
    const std::chrono::milliseconds first_byte = first_byte_limit(dep->gateway, g.work, g.stream);
    const Attempt sent = forwarder_.send(chosen, *dep, std::move(forwarded), replica_rest, relay, first_byte);
    forwarder_.release(chosen, name);  // the slot is free again before anyone is woken
    const Status& s = sent.status;
    const int index = sent.index;
    const std::string& device = sent.processor_id;
    if (w.client_gone()) return;
    const int answered = failover.passed_on_status();
    const int refused_now = failover.refused_status() != 0 ? failover.refused_status()
                            : is_replica_failure(answered) ? answered
                                                           : 0;
    const bool ok = s.ok() && refused_now == 0 && !sent.expired;
    if (refused_now != 0) {
      // A replica's own failure answer counts against it only once another replica has answered
      // the same request (below): one that fails everywhere says nothing of any replica, and a
      // client must not be able to eject healthy replicas with requests they all refuse.
      forwarder_.count_refusal(name, index, refused_now);
      tries.unconfirmed.push_back(index);
    } else {
      forwarder_.record(name, index, ok);
    }
    if (ok) {
      for (const int refused_by : tries.unconfirmed) forwarder_.record(name, refused_by, false);
      return;
    }
    if (failover.passed_on()) {  // bytes reached the user: never splice in a second answer
      if (!s.ok()) relay.end_broken(s);
      return;
    }
    // A transport that closed under the request (the agent's tunnel, or the link to the hub that
    // holds it: TunnelClient::forward's "tunnel closed") says nothing of the replica, whose agent
    // may be back through another hub in a moment: it may be tried again once reachable.
    if (!(failover.refused_status() == 0 && !sent.expired && s.message().starts_with("tunnel closed"))) {
      tries.failed.insert(device);
    }
    tries.refused_status = failover.refused_status();
    tries.held = failover.take_held();
    tries.timed_out = sent.expired;
    tries.last_failure = "replica " + std::to_string(index) + ": " +
                         (tries.timed_out        ? "no first byte within " + std::to_string(first_byte.count()) + " ms"
                          : tries.refused_status ? "answered " + std::to_string(tries.refused_status)
                                                 : s.message());
    state_.log("deployment " + name + ": " + tries.last_failure + "; attempt " + std::to_string(attempt) + " of " +
               std::to_string(kMaxAttempts));
  }
  answer_exhausted(name, tries, w);
}

void Gateway::answer_exhausted(const std::string& name, Attempts& tries, net::ResponseWriter& w) {
  std::optional<HeldAnswer>& held = tries.held;
  if (held && held->whole && !tries.timed_out && held->status != 502 && held->status != 503) {
    return w.send(held->status, held->type, std::move(held->body), held->headers);
  }
  const int refused = tries.refused_status;
  send_error(w,
             tries.timed_out                    ? 504
             : refused == 503 || refused == 429 ? refused
                                                : 502,
             "every replica tried for '" + name + "' failed before answering (last: " + tries.last_failure + ")",
             {{"Retry-After", "1"}});
}

}  // namespace cellserve::fleet
