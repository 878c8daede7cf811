// GET /api/v1/traffic[?deployment=NAME][&since_ms=T]: each deployment's traffic time series
// (traffic_series.h) as JSON, and GET /api/v1/traffic/stream: the same as server-sent events, a
// snapshot and then each finished interval's point per deployment. docs/fleet.md, "Traffic time
// series".
#include <charconv>
#include <set>

#include <boost/json.hpp>

#include "fleet/hub/admin_api.h"
#include "fleet/spec/replica_address.h"
#include "net/url_text.h"

namespace cellserve::fleet {
namespace {

namespace json = boost::json;

// At most this many streams at once (503 beyond), each for at most kStreamLifetime: a stream
// holds its connection's thread.
constexpr int kMaxStreams = 16;
constexpr std::chrono::minutes kStreamLifetime{10};
// How often a stream looks at whether its client left, between intervals.
constexpr std::chrono::milliseconds kStreamCheck{1000};

json::value ms_or_null(const std::optional<double>& v) { return v ? json::value(*v) : json::value(nullptr); }

json::object point_json(const TrafficPoint& p) {
  return json::object{{"t_ms", p.t_ms},
                      {"requests_2xx", p.requests_2xx},
                      {"requests_4xx", p.requests_4xx},
                      {"requests_5xx", p.requests_5xx},
                      {"latency_p50_ms", ms_or_null(p.latency_p50_ms)},
                      {"latency_p95_ms", ms_or_null(p.latency_p95_ms)},
                      {"ttft_p50_ms", ms_or_null(p.ttft_p50_ms)},
                      {"ttft_p95_ms", ms_or_null(p.ttft_p95_ms)},
                      {"completion_tokens", p.completion_tokens},
                      {"tokens_per_s", p.tokens_per_s},
                      {"queue_length", p.queue_length},
                      {"hedges", p.hedges},
                      {"retries", p.retries}};
}

json::array points_json(const std::vector<TrafficPoint>& points) {
  json::array out;
  out.reserve(points.size());
  for (const TrafficPoint& p : points) out.push_back(point_json(p));
  return out;
}

// The request's query: a deployment name and since_ms, validated.
struct TrafficQuery {
  std::string deployment;  // "": every deployment
  int64_t since_ms = -1;   // -1: every point
};

Result<TrafficQuery> parse_traffic_query(std::string_view query) {
  TrafficQuery q;
  while (!query.empty()) {
    const size_t amp = query.find('&');
    const std::string_view pair = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    if (pair.empty()) continue;
    const size_t eq = pair.find('=');
    const std::string_view key = pair.substr(0, eq);
    const std::optional<std::string> value =
        net::percent_decode(eq == std::string_view::npos ? std::string_view() : pair.substr(eq + 1));
    if (key == "deployment") {
      if (!value || !valid_deployment_name(*value)) {
        return Status::invalid_argument("deployment must be a deployment name").with_param("deployment");
      }
      q.deployment = *value;
    } else if (key == "since_ms") {
      int64_t v = -1;
      const char* end = value ? value->data() + value->size() : nullptr;
      if (!value || std::from_chars(value->data(), end, v).ptr != end || value->empty() || v < 0) {
        return Status::invalid_argument("since_ms must be Unix milliseconds (a non-negative integer)")
            .with_param("since_ms");
      }
      q.since_ms = v;
    } else {
      const std::string shown(key.substr(0, 40));
      return Status::invalid_argument("unknown traffic parameter '" + shown + "'").with_param(shown);
    }
  }
  return q;
}

}  // namespace

void AdminApi::add_traffic_routes(net::RouteTable& routes) {
  routes.add("GET", "/api/v1/traffic", admin(plain(&AdminApi::traffic)));
  routes.add("GET", "/api/v1/traffic/stream", admin(plain(&AdminApi::traffic_stream)));
}

// Every deployment that exists gets a series (so its chart starts now, even before a request),
// with its queue's length now; the series of removed deployments are dropped. Returns the names,
// or nullopt on a store error.
std::optional<std::set<std::string>> AdminApi::sample_traffic() {
  auto ds = state_.store->deployments();
  if (!ds.ok()) return std::nullopt;
  std::set<std::string> names;
  for (const Deployment& d : *ds) names.insert(d.spec.name);
  state_.traffic.retain(names);
  const std::map<std::string, size_t> queues = forwarder_.queue_lengths();
  for (const std::string& name : names) {
    const auto q = queues.find(name);
    state_.traffic.observe_queue(name, q == queues.end() ? 0 : q->second);
  }
  return names;
}

std::string AdminApi::traffic_json(const std::string& deployment, int64_t since_ms) {
  json::object deployments;
  if (!deployment.empty()) {
    deployments[deployment] = points_json(state_.traffic.points(deployment, since_ms));
  } else {
    for (const auto& [name, points] : state_.traffic.all_points(since_ms)) deployments[name] = points_json(points);
  }
  return json::serialize(json::object{{"interval_ms", state_.traffic.interval_ms()},
                                      {"window_ms", state_.traffic.window_ms()},
                                      {"now_ms", state_.traffic.now_ms()},
                                      {"deployments", std::move(deployments)}});
}

void AdminApi::traffic(const net::HttpRequest& req, net::ResponseWriter& w) {
  const Result<TrafficQuery> q = parse_traffic_query(req.query);
  if (!q.ok()) return w.send(400, "application/json", net::error_body(net::api_error_from_status(q.status())));
  const std::optional<std::set<std::string>> names = sample_traffic();
  if (!names) return send_error(w, 500, "store error");
  if (!q->deployment.empty() && !names->contains(q->deployment)) {
    return send_error(w, 404, "no deployment named '" + q->deployment + "'");
  }
  send_json(w, 200, traffic_json(q->deployment, q->since_ms));
}

// A snapshot event, then at each interval boundary one point event per deployment for each
// interval that finished (a point with a t_ms already received replaces it).
void AdminApi::traffic_stream(const net::HttpRequest& req, net::ResponseWriter& w) {
  if (!req.query.empty()) return send_error(w, 400, "/api/v1/traffic/stream takes no parameters");
  if (traffic_streams_.fetch_add(1) >= kMaxStreams) {
    --traffic_streams_;
    return send_error(w, 503, "too many traffic streams open; poll GET /api/v1/traffic instead",
                      {{"Retry-After", "10"}});
  }
  struct Release {
    std::atomic<int>& n;
    ~Release() { --n; }
  } release{traffic_streams_};
  if (!sample_traffic()) return send_error(w, 500, "store error");
  const Clock& clock = state_.clock;
  const int64_t interval = state_.traffic.interval_ms();
  int64_t current = state_.traffic.now_ms() / interval;
  if (!w.begin_stream(200, "text/event-stream", {{"Cache-Control", "no-cache"}})) return;
  if (!w.write("event: snapshot\ndata: " + traffic_json("", -1) + "\n\n")) return;
  const Clock::time_point end = clock.now() + kStreamLifetime;
  while (clock.now() < end && !w.client_gone()) {
    const int64_t until_next = (current + 1) * interval - state_.traffic.now_ms();
    const auto step =
        std::min<std::chrono::milliseconds>(std::chrono::milliseconds(std::max<int64_t>(until_next, 1)), kStreamCheck);
    clock.sleep_until(std::min(clock.now() + step, end));
    const int64_t now_interval = state_.traffic.now_ms() / interval;
    if (now_interval <= current) continue;
    if (!sample_traffic()) break;
    std::string events;
    for (const auto& [name, points] : state_.traffic.all_points(current * interval - 1)) {
      for (const TrafficPoint& p : points) {
        if (p.t_ms >= now_interval * interval) continue;  // unfinished: sent when it ends
        events +=
            "event: point\ndata: " + json::serialize(json::object{{"deployment", name}, {"point", point_json(p)}}) +
            "\n\n";
      }
    }
    current = now_interval;
    if (!events.empty() && !w.write(events)) return;
  }
  w.end_stream();
}

}  // namespace cellserve::fleet
