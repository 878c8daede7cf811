// The deployment endpoint: /d/<deployment>/v1/... (or Host <deployment>.<domain>) answers the
// OpenAI API of the whole deployment. Each request goes to the replica with the lowest estimated
// completion time (route_choice.h), waits in the deployment's queue at the hub while every
// replica is at capacity (waiting_line.h), and is retried on another replica when the one chosen
// fails or refuses before its first response byte (failover_writer.h). Reads only the registry.
#include <set>

#include <boost/json.hpp>

#include "fleet/hub/failover_writer.h"
#include "fleet/hub/gateway_request.h"
#include "fleet/hub/hub_impl.h"
#include "fleet/hub/relay_writer.h"
#include "fleet/hub/route_choice.h"
#include "net/bearer.h"
#include "net/request_timeout.h"

namespace cellserve::fleet {
namespace {

namespace json = boost::json;
using Clock = std::chrono::steady_clock;

// Replicas one request may be sent to before its failure is the answer.
constexpr int kMaxAttempts = 3;

// The request's own deadline from X-Request-Timeout (net/request_timeout.h); nullopt when absent.
Result<std::optional<std::chrono::milliseconds>> request_timeout_ms(const net::HttpRequest& req) {
  CS_ASSIGN_OR_RETURN(const std::optional<std::chrono::duration<double>> seconds, net::request_timeout(req));
  if (!seconds) return std::optional<std::chrono::milliseconds>();
  return std::optional(std::chrono::duration_cast<std::chrono::milliseconds>(*seconds));
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

// The replica a granted request goes to, and its place in the in-flight counts.
struct Reservation {
  int index = -1;
  std::shared_ptr<AgentLink> link;
  ReplicaRegistry::InFlight in_flight;
};

}  // namespace

WaitingLine& Hub::Impl::waiting_line(const std::string& deployment) {
  std::lock_guard lock(lines_mu);
  std::unique_ptr<WaitingLine>& line = lines[deployment];
  if (!line) line = std::make_unique<WaitingLine>();
  return *line;
}

std::vector<ReplicaView> Hub::Impl::routable_replicas(const std::string& deployment, const std::set<int>& excluded) {
  std::vector<ReplicaView> out;
  for (ReplicaView& r : registry.replicas(deployment)) {
    if (r.state != ReplicaState::Ready || r.ejected || excluded.contains(r.index)) continue;
    if (!links.find(r.processor_id)) continue;
    out.push_back(std::move(r));
  }
  return out;
}

void Hub::Impl::serve_deployment(const net::HttpRequest& req, net::ResponseWriter& w, const std::string& name,
                                 const std::string& rest) {
  const std::optional<DeploymentView> dep = registry.deployment(name);
  if (!dep) return send_error(w, 404, "no deployment named '" + name + "'");
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
    auto parsed = read_gateway_request(req.body);
    if (!parsed.ok()) return send_error(w, 400, parsed.status().message());
    g = std::move(parsed).value();
    if (!g.model.empty() && g.model != name) {
      if (g.model != dep->gateway.alias) {
        net::ApiError e = net::api_error(
            404, "The model '" + g.model + "' does not exist: this endpoint serves '" + name + "'" +
                     (dep->gateway.alias.empty() ? std::string() : " (also called '" + dep->gateway.alias + "')"));
        e.param = "model";
        e.code = "model_not_found";
        return w.send(404, "application/json", net::error_body(e));
      }
      body = with_model(req.body, name);  // the replicas know the deployment by its name
    }
  }

  auto own_timeout = request_timeout_ms(req);
  if (!own_timeout.ok()) return send_error(w, 400, own_timeout.status().message());
  std::chrono::milliseconds wait_limit(dep->gateway.queue_timeout_ms);
  if (*own_timeout) wait_limit = std::min(wait_limit, **own_timeout);
  const Clock::time_point deadline = Clock::now() + wait_limit;

  if (routable_replicas(name, {}).empty()) {
    int ready = 0;
    for (const ReplicaView& r : registry.replicas(name)) ready += r.state == ReplicaState::Ready;
    return send_error(w, 503,
                      "no replica of '" + name + "' can take requests now (" + std::to_string(ready) +
                          " ready, the rest starting or failing); retry shortly",
                      {{"Retry-After", "5"}});
  }

  WaitingLine& line = waiting_line(name);
  const std::string key = client_key(req);
  std::set<int> failed;
  std::string last_failure;
  int refused_status = 0;
  for (int attempt = 1; attempt <= kMaxAttempts; ++attempt) {
    Reservation chosen;
    const WaitingLine::TryGrant reserve = [&] {
      const std::vector<ReplicaView> candidates = routable_replicas(name, failed);
      const std::optional<size_t> pick = choose_replica(candidates, g.work);
      if (!pick) return false;
      const ReplicaView& r = candidates[*pick];
      Reservation got{r.index, links.find(r.processor_id), registry.begin_request(name, r.index)};
      if (!got.link || !got.in_flight) return false;  // gone since the candidates were read
      chosen = std::move(got);
      return true;
    };
    // A retry goes ahead of the line when a replica is free: it waited its turn already.
    WaitingLine::Outcome outcome = WaitingLine::Outcome::Granted;
    if (attempt == 1 || !reserve()) {
      if (attempt > 1 && routable_replicas(name, failed).empty()) break;  // nowhere else to go
      outcome = line.wait(
          key, static_cast<size_t>(dep->gateway.queue_max), deadline, [&] { return w.client_gone(); }, reserve);
    }
    if (outcome == WaitingLine::Outcome::Full) {
      return send_error(w, 429,
                        "deployment '" + name + "' is at capacity and its queue is full (" +
                            std::to_string(dep->gateway.queue_max) + " waiting); retry shortly",
                        {{"Retry-After", "1"}});
    }
    if (outcome == WaitingLine::Outcome::TimedOut) {
      net::ApiError e =
          net::api_error(504, "no replica of '" + name + "' became free within " + std::to_string(wait_limit.count()) +
                                  " ms" + (attempt > 1 ? " (after a failed attempt: " + last_failure + ")" : ""));
      e.type = "timeout";
      return w.send(504, "application/json", net::error_body(e));
    }
    if (outcome == WaitingLine::Outcome::Abandoned) return;  // the client left while waiting

    net::HttpRequest forwarded = req;
    forwarded.path = "/d/" + name + "/r/" + std::to_string(chosen.index) + "/v1" + rest;
    forwarded.body = body;
    FailoverWriter failover(w, attempt < kMaxAttempts, chosen.index);
    RelayWriter relay(failover);
    const Status s = chosen.link->tunnel->forward(forwarded, relay, nullptr);
    const int index = chosen.index;
    chosen = Reservation();  // the slot is free again before anyone is woken
    line.wake();
    if (w.client_gone()) return;
    const bool ok = s.ok() && failover.refused_status() == 0;
    registry.record_result(name, index, ok);
    if (ok) return;
    if (failover.passed_on()) return relay.end_broken(s);  // bytes reached the user: never splice in a second answer
    failed.insert(index);
    refused_status = failover.refused_status();
    last_failure = "replica " + std::to_string(index) + ": " +
                   (refused_status ? "answered " + std::to_string(refused_status) : s.message());
    log("deployment " + name + ": " + last_failure + "; attempt " + std::to_string(attempt) + " of " +
        std::to_string(kMaxAttempts));
  }
  send_error(w, refused_status == 503 ? 503 : 502,
             "every replica tried for '" + name + "' failed before answering (last: " + last_failure + ")",
             {{"Retry-After", "1"}});
}

}  // namespace cellserve::fleet
