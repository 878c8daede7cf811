// The deployment endpoint: /d/<deployment>/v1/... (or Host <deployment>.<domain>) answers the
// OpenAI API of the whole deployment. Each request goes to the replica with the lowest estimated
// completion time (route_choice.h), waits in the deployment's queue at the hub while every
// replica is at capacity (waiting_line.h), and is retried on another replica when the one chosen
// fails or refuses before its first response byte (failover_writer.h). Reads only the registry.
#include <algorithm>
#include <charconv>
#include <condition_variable>
#include <cstdio>
#include <memory>
#include <mutex>
#include <set>
#include <thread>

#include <boost/json.hpp>

#include "fleet/hub/buffered_writer.h"
#include "fleet/hub/failover_writer.h"
#include "fleet/hub/first_byte_deadline.h"
#include "fleet/hub/gateway_request.h"
#include "fleet/hub/hub_impl.h"
#include "fleet/hub/metered_writer.h"
#include "fleet/hub/relay_writer.h"
#include "fleet/hub/route_choice.h"
#include "fleet/hub/token_reservation.h"
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

// What is left until `deadline`, as X-Request-Timeout's seconds (at least a millisecond: a
// deadline that passed while the request was being sent still reaches the device as one).
std::string remaining_seconds(Clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
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

// One replica's attempt at a hedged request, answered into a buffer on its own thread.
struct HedgeLeg {
  Reservation reservation;
  BufferedWriter out;
  Status status;
  bool done = false;  // guarded by the hedge's mutex
  std::thread thread;
  // A whole answer that settles the request (a 502/503 refusal does not).
  bool answered() const {
    return done && status.ok() && out.status() != 0 && out.status() != 502 && out.status() != 503;
  }
};

// The wait before a hedge: the spec's, else twice the first replica's estimate (at least 50 ms).
std::chrono::milliseconds hedge_delay(const GatewaySettings& g, double estimate_s) {
  if (g.hedge_delay_ms > 0) return std::chrono::milliseconds(g.hedge_delay_ms);
  return std::chrono::milliseconds(std::max<int64_t>(50, static_cast<int64_t>(estimate_s * 2000)));
}

}  // namespace

WaitingLine& Hub::Impl::waiting_line(const std::string& deployment) {
  std::lock_guard lock(lines_mu);
  std::unique_ptr<WaitingLine>& line = lines[deployment];
  if (!line) line = std::make_unique<WaitingLine>();
  return *line;
}

std::map<std::string, size_t> Hub::Impl::queue_lengths() {
  std::lock_guard lock(lines_mu);
  std::map<std::string, size_t> out;
  for (const auto& [name, line] : lines) out[name] = line->waiting();
  return out;
}

std::vector<ReplicaView> Hub::Impl::routable_replicas(const std::string& deployment,
                                                      const std::set<std::string>& excluded) {
  std::vector<ReplicaView> out;
  for (ReplicaView& r : registry.replicas(deployment)) {
    if (r.state != ReplicaState::Ready || r.ejected || r.draining || !r.secrets_current || r.device_paused ||
        excluded.contains(r.processor_id)) {
      continue;
    }
    const std::shared_ptr<AgentLink> link = links.find(r.processor_id);
    // A closed tunnel stays in `links` until the next reconcile; it would fail every request sent
    // to it in microseconds, so it is passed over from the moment it closes.
    if (!link || link->tunnel->closed() || link->silent_for(heartbeat_limit())) continue;
    out.push_back(std::move(r));
  }
  return out;
}

bool Hub::Impl::reserve_replica(const std::string& deployment, const RequestWork& work,
                                const std::set<std::string>& excluded, Reservation& out) {
  const std::vector<ReplicaView> candidates = routable_replicas(deployment, excluded);
  const std::optional<size_t> pick = choose_replica(candidates, work);
  if (!pick) return false;
  const ReplicaView& r = candidates[*pick];
  Reservation got{r.index, r.processor_id, links.find(r.processor_id), registry.begin_request(deployment, r.index),
                  estimated_seconds(r, work)};
  if (!got.link || !got.in_flight) return false;  // gone since the candidates were read
  out = std::move(got);
  return true;
}

bool Hub::Impl::forward_hedged(const net::HttpRequest& forwarded, Reservation first, const DeploymentView& dep,
                               const RequestWork& work, const std::string& rest, std::set<std::string>& failed,
                               std::string& last_failure, net::ResponseWriter& w) {
  const std::string& name = dep.name;
  std::mutex mu;
  std::condition_variable cv;
  std::vector<std::unique_ptr<HedgeLeg>> legs;
  auto launch = [&](Reservation r) {
    auto leg = std::make_unique<HedgeLeg>();
    leg->reservation = std::move(r);
    HedgeLeg* raw = leg.get();
    legs.push_back(std::move(leg));
    raw->thread = std::thread([&, raw] {
      net::HttpRequest mine = forwarded;
      mine.path = "/d/" + name + "/r/" + std::to_string(raw->reservation.index) + "/v1" + rest;
      FirstByteDeadlineWriter timed(raw->out, Clock::now() + first_byte_limit(dep.gateway, work, false));
      Status s = raw->reservation.link->tunnel->forward(mine, timed, nullptr);
      if (timed.expired()) s = Status::unavailable("no first byte within the hub's deadline");
      std::lock_guard lock(mu);
      raw->status = s;
      raw->done = true;
      cv.notify_all();
    });
  };
  const auto delay = hedge_delay(dep.gateway, first.estimate_s);
  const std::string first_device = first.processor_id;
  launch(std::move(first));

  std::unique_lock lock(mu);
  cv.wait_for(lock, delay, [&] { return legs[0]->done; });
  if (!legs[0]->answered() && !w.client_gone()) {
    // No answer within the delay: a second replica, if one is free now (a hedge never queues).
    lock.unlock();
    std::set<std::string> excluded = failed;
    excluded.insert(first_device);
    Reservation second;
    if (waiting_line(name).try_now([&] { return reserve_replica(name, work, excluded, second); })) {
      metrics.count_hedge(name);
      lock.lock();
      launch(std::move(second));
    } else {
      lock.lock();
    }
  }
  HedgeLeg* winner = nullptr;
  for (;;) {
    for (auto& leg : legs) {
      if (leg->answered()) winner = leg.get();
    }
    const bool all_done = std::all_of(legs.begin(), legs.end(), [](const auto& l) { return l->done; });
    if (winner != nullptr || all_done) break;
    lock.unlock();
    const bool gone = w.client_gone();
    lock.lock();
    if (gone) break;
    cv.wait_for(lock, std::chrono::milliseconds(100));
  }
  // The other legs are cancelled: their streams are reset, and their devices free the slots.
  for (auto& leg : legs) {
    if (leg.get() != winner) leg->out.cancel();
  }
  lock.unlock();
  // The answer goes out first: a cancelled leg may take its tunnel's poll interval to return.
  const int winner_index = winner != nullptr ? winner->reservation.index : -1;
  if (winner != nullptr) {
    FailoverWriter tagged(w, /*may_retry=*/false, winner_index);
    RelayWriter allowed(tagged);  // only the device headers a user may see
    winner->out.replay(allowed);
  }
  for (auto& leg : legs) leg->thread.join();
  for (auto& leg : legs) {
    const int index = leg->reservation.index;
    const std::string device = leg->reservation.processor_id;
    leg->reservation = Reservation();
    if (leg.get() == winner) {
      registry.record_result(name, index, true);
    } else if (leg->done && !leg->out.client_gone()) {
      // It finished without a usable answer (a failure, not a cancellation).
      if (registry.record_result(name, index, false)) metrics.count_ejection(name, index);
      metrics.count_failure(name, index);
      failed.insert(device);
      last_failure = "replica " + std::to_string(index) + ": " +
                     (leg->status.ok() ? "answered " + std::to_string(leg->out.status()) : leg->status.message());
    }
  }
  waiting_line(name).wake();
  return winner != nullptr;
}

void Hub::Impl::serve_deployment(const net::HttpRequest& req, net::ResponseWriter& w, const std::string& name,
                                 const std::string& key_id, const std::string& rest) {
  const std::optional<DeploymentView> dep = registry.deployment(name);
  if (!dep) return send_error(w, 404, "no deployment named '" + name + "'");
  if (serve_batch_api(req, w, name, key_id, rest)) return;
  // An API key's daily tokens: the request's most is held now and settled to its use at the end.
  int64_t held = 0;
  if (!key_id.empty() && req.method == "POST") {
    held = token_reservation(req.body, rest, dep->ctx_size);
    if (!hold_tokens(key_id, held, w)) return;
  }
  const auto started = Clock::now();
  MeteredWriter metered(w);
  if (key_id.empty()) {
    route_request(req, metered, *dep, rest);
  } else {
    net::HttpRequest keyed = req;
    set_cache_partition(keyed, key_id);
    route_request(keyed, metered, *dep, rest);
  }
  const int status = metered.status() != 0 ? metered.status() : 499;  // nothing sent: the client left
  metrics.count_request(name, metered.replica(), status);
  metrics.observe_latency(name, std::chrono::duration<double>(Clock::now() - started).count());
  if (metered.first_byte()) {
    metrics.observe_first_byte(name, std::chrono::duration<double>(*metered.first_byte() - started).count());
  }
  if (metered.completion_tokens() > 0) metrics.add_completion_tokens(name, metered.completion_tokens());
  if (!key_id.empty()) keys.settle(key_id, held, status == 200 ? metered.tokens_used(req.body.size()) : 0, now_ms());
}

void Hub::Impl::route_request(const net::HttpRequest& req, net::ResponseWriter& w, const DeploymentView& deployment,
                              const std::string& rest) {
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
    auto parsed = read_gateway_request(req.body, rest);
    if (!parsed.ok())
      return w.send(400, "application/json", net::error_body(net::api_error_from_status(parsed.status())));
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
      body = with_model(req.body, name);  // the replicas know the deployment by its name
    }
  }

  auto own_timeout = request_timeout_ms(req);
  if (!own_timeout.ok()) return send_error(w, 400, own_timeout.status().message());
  std::chrono::milliseconds wait_limit(dep->gateway.queue_timeout_ms);
  if (*own_timeout) wait_limit = std::min(wait_limit, **own_timeout);
  const Clock::time_point deadline = Clock::now() + wait_limit;
  const Clock::time_point request_deadline = Clock::now() + own_timeout->value_or(std::chrono::milliseconds(0));

  if (routable_replicas(name, {}).empty()) {
    int ready = 0;
    int paused = 0;  // ready, but its device takes no new requests (a low battery)
    for (const ReplicaView& r : registry.replicas(name)) {
      ready += r.state == ReplicaState::Ready;
      paused += r.state == ReplicaState::Ready && r.device_paused;
    }
    const std::string paused_text = paused > 0 ? ", " + std::to_string(paused) + " of them on a paused device" : "";
    return send_error(w, 503,
                      "no replica of '" + name + "' can take requests now (" + std::to_string(ready) + " ready" +
                          paused_text + ", the rest starting or failing); retry shortly",
                      {{"Retry-After", "5"}});
  }

  WaitingLine& line = waiting_line(name);
  const std::string key = client_key(req);
  std::set<std::string> failed;  // devices that failed this request
  std::string last_failure;
  int refused_status = 0;
  bool timed_out = false;  // the last replica tried sent no first byte within the hub's deadline
  for (int attempt = 1; attempt <= kMaxAttempts; ++attempt) {
    Reservation chosen;
    const WaitingLine::TryGrant reserve = [&] { return reserve_replica(name, g.work, failed, chosen); };
    // A retry goes ahead of the line when a replica is free: it waited its turn already.
    WaitingLine::Outcome outcome = WaitingLine::Outcome::Granted;
    if (attempt == 1 || !reserve()) {
      if (attempt > 1 && routable_replicas(name, failed).empty()) break;  // nowhere else to go
      const auto queued = Clock::now();
      outcome = line.wait(
          key, static_cast<size_t>(dep->gateway.queue_max), deadline, [&] { return w.client_gone(); }, reserve);
      metrics.observe_queue_wait(name, std::chrono::duration<double>(Clock::now() - queued).count());
    }
    if (attempt > 1) metrics.count_retry(name);
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
    address_to_replica(forwarded, dep->replica_key);
    // The client's own deadline travels on, less the time spent here, so the device frees the
    // slot when the client has given up.
    if (*own_timeout) forwarded.headers["x-request-timeout"] = remaining_seconds(request_deadline);
    if (dep->gateway.hedge_max_tokens > 0 && !g.stream && req.method == "POST" &&
        g.work.max_tokens <= dep->gateway.hedge_max_tokens) {
      if (forward_hedged(forwarded, std::move(chosen), *dep, g.work, rest, failed, last_failure, w)) return;
      if (w.client_gone()) return;
      continue;
    }
    FailoverWriter failover(w, attempt < kMaxAttempts, chosen.index);
    RelayWriter relay(failover);
    const std::chrono::milliseconds first_byte = first_byte_limit(dep->gateway, g.work, g.stream);
    FirstByteDeadlineWriter timed(relay, Clock::now() + first_byte);
    const Status s = chosen.link->tunnel->forward(forwarded, timed, nullptr);
    const int index = chosen.index;
    const std::string device = chosen.processor_id;
    chosen = Reservation();  // the slot is free again before anyone is woken
    line.wake();
    if (w.client_gone()) return;
    const bool ok = s.ok() && failover.refused_status() == 0 && !timed.expired();
    if (registry.record_result(name, index, ok)) metrics.count_ejection(name, index);
    if (ok) return;
    metrics.count_failure(name, index);
    if (failover.passed_on()) return relay.end_broken(s);  // bytes reached the user: never splice in a second answer
    failed.insert(device);
    refused_status = failover.refused_status();
    timed_out = timed.expired();
    last_failure = "replica " + std::to_string(index) + ": " +
                   (timed_out        ? "no first byte within " + std::to_string(first_byte.count()) + " ms"
                    : refused_status ? "answered " + std::to_string(refused_status)
                                     : s.message());
    log("deployment " + name + ": " + last_failure + "; attempt " + std::to_string(attempt) + " of " +
        std::to_string(kMaxAttempts));
  }
  send_error(w,
             timed_out               ? 504
             : refused_status == 503 ? 503
                                     : 502,
             "every replica tried for '" + name + "' failed before answering (last: " + last_failure + ")",
             {{"Retry-After", "1"}});
}

}  // namespace cellserve::fleet
