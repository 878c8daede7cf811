// GET /api/v1/processors/{id}/history?from_ms=A&until_ms=B: the processor's enrolment now and the
// stretches of time it served which deployment with which model (Store::service_history) that
// overlap [A, B] (default: all time), newest first, at most kMaxIntervals. `cellserve verify
// --hub` accepts a signed answer only when its device served its deployment and model when it
// signed.
#include <charconv>
#include <cstdint>
#include <limits>

#include <boost/json.hpp>

#include "fleet/crypto/identity.h"
#include "fleet/hub/admin_api.h"

namespace cellserve::fleet {
namespace {

namespace json = boost::json;

constexpr int kMaxIntervals = 1000;

// The value of `key` in a query string as milliseconds; `fallback` when absent, nullopt when it
// is not a non-negative integer.
std::optional<int64_t> query_ms(std::string_view query, std::string_view key, int64_t fallback) {
  while (!query.empty()) {
    const size_t amp = query.find('&');
    const std::string_view pair = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    if (!pair.starts_with(key) || pair.size() <= key.size() || pair[key.size()] != '=') continue;
    const std::string_view text = pair.substr(key.size() + 1);
    int64_t v = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (ec != std::errc() || end != text.data() + text.size() || v < 0) return std::nullopt;
    return v;
  }
  return fallback;
}

}  // namespace

void AdminApi::add_history_routes(net::RouteTable& routes) {
  routes.add("GET", "/api/v1/processors/{id}/history", admin(by("id", &AdminApi::processor_history)));
}

void AdminApi::processor_history(const net::HttpRequest& req, const std::string& id_text, net::ResponseWriter& w) {
  const std::optional<std::string> id = canonical_identity(id_text);
  if (!id) return send_error(w, 404, "no processor '" + id_text.substr(0, 80) + "'");
  const std::optional<int64_t> from = query_ms(req.query, "from_ms", 0);
  const std::optional<int64_t> until = query_ms(req.query, "until_ms", std::numeric_limits<int64_t>::max());
  if (!from || !until) return send_error(w, 400, "from_ms and until_ms are Unix milliseconds");
  auto p = state_.store->processor(*id);
  if (!p.ok()) return send_error(w, 500, "store error");
  if (!p->has_value()) return send_error(w, 404, "no processor '" + id->substr(0, 16) + "…'");
  auto intervals = state_.store->service_history(*id, *from, *until, kMaxIntervals);
  if (!intervals.ok()) return send_error(w, 500, "store error");
  json::array service;
  for (const ServiceInterval& i : *intervals) {
    json::object o{{"deployment", i.deployment},
                   {"index", i.index},
                   {"model_sha256", i.model_sha256},
                   {"from_ms", i.from_ms},
                   {"until_ms", nullptr}};
    if (i.until_ms != 0) o["until_ms"] = i.until_ms;
    service.push_back(std::move(o));
  }
  send_json(w, 200,
            json::serialize(json::object{{"id", *id},
                                         {"name", (*p)->name},
                                         {"enrollment", enrollment_name((*p)->enrollment)},
                                         {"now_ms", state_.now_ms()},
                                         {"service", std::move(service)}}));
}

}  // namespace cellserve::fleet
