// /api/v1/deployments[/{name}]: create, list, show, scale and delete deployments, and drain
// replicas.
#include <algorithm>
#include <charconv>
#include <set>

#include <boost/json.hpp>

#include "fleet/hub/admin_api.h"
#include "fleet/matcher/rollout.h"
#include "fleet/spec/agent_protocol.h"
#include "fleet/spec/deployment_spec.h"

namespace cellserve::fleet {
namespace {

namespace json = boost::json;

// What the hub knows live across the fleet, read once per answer (a listing of every deployment
// reads the store's processors and the agent links once, not once per deployment).
struct FleetLive {
  std::map<std::string, size_t> queues;
  const HubMetrics* metrics = nullptr;
  std::map<std::string, Processor> devices;          // by id: whether a row's device still qualifies
  std::set<std::string> silent;                      // processors that missed their heartbeats
  std::map<std::string, DeviceAgreement> agreement;  // spot checks, by device
  std::map<std::pair<std::string, int>, HubState::ReportedTuning> tuned;  // the settings devices run replicas with
};

FleetLive fleet_live(std::map<std::string, size_t> queues, HubState& state) {
  FleetLive f;
  f.queues = std::move(queues);
  f.metrics = &state.metrics;
  f.agreement = state.agreement.all();
  for (const auto& link : state.links.all()) {
    if (link->silent_for(state.heartbeat_limit())) f.silent.insert(link->processor_id);
  }
  if (auto processors = state.store->processors(); processors.ok()) {
    for (Processor& p : *processors) f.devices.emplace(p.id, std::move(p));
  }
  std::lock_guard lock(state.state_mu);
  f.tuned = state.tuned_settings;
  return f;
}

// What the hub knows live of one deployment: the registry's load view and its queue.
struct Live {
  std::map<int, ReplicaView> replicas;
  size_t queue = 0;
  const FleetLive* fleet = nullptr;
};

Live live_of(const std::string& name, const ReplicaRegistry& registry, const FleetLive& fleet) {
  Live live;
  live.fleet = &fleet;
  for (ReplicaView& r : registry.replicas(name)) live.replicas[r.index] = std::move(r);
  if (const auto q = fleet.queues.find(name); q != fleet.queues.end()) live.queue = q->second;
  return live;
}

// Whether row `r` still serves an older spec (a rolling update replaces it).
bool row_outdated(const Replica& r, const Deployment& d, const Live& live) {
  const auto device = live.fleet->devices.find(r.processor_id);
  return outdated(r, d.spec, device == live.fleet->devices.end() ? nullptr : &device->second);
}

// Beside the device's claimed speeds (prefill_tps, decode_tps): what the hub measured of its
// answers, what routing uses, and whether the claim is inflated (fleet/hub/replica_speed.h).
void add_speed_json(json::object& o, const ReplicaView& v) {
  o["measured_prefill_tps"] = v.measured.prefill().value;
  o["measured_decode_tps"] = v.measured.decode().value;
  o["measured_answers"] = v.measured.answers();
  o["routed_prefill_tps"] = v.prefill_tps;
  o["routed_decode_tps"] = v.decode_tps;
  o["speed_claim_ratio"] = v.measured.speed_claim_ratio();
  o["speed_claim_inflated"] = v.speed_claim_inflated;
}

json::object replica_json(const Replica& r, const Deployment& d, const Store& store, int64_t now, const Live& live) {
  const bool surge = r.index >= kSurgeIndexBase;
  const bool spare = !surge && r.index >= d.spec.replicas;
  json::object o{{"index", r.index},
                 {"role", surge   ? "surge"
                          : spare ? "spare"
                                  : "replica"},
                 {"processor", r.processor_id},
                 {"state", replica_state_name(r.state)},
                 {"progress", r.progress},
                 {"detail", r.detail},
                 {"price_per_day", r.price_per_day},
                 {"prefill_tps", r.prefill_tps},
                 {"decode_tps", r.decode_tps},
                 {"matched_ms", r.matched_ms},
                 {"cost", store.replica_cost(r, now)}};
  if (!spare && !surge) o["path"] = "/d/" + d.spec.name + "/r/" + std::to_string(r.index) + "/v1";
  if (surge) o["replaces"] = r.index - kSurgeIndexBase;
  o["draining"] = r.draining;
  o["reloading"] = r.reloading;
  o["model_sha256"] = r.serving.model_sha256;
  // The secrets version its device acknowledged opening; below the deployment's, no traffic.
  o["secrets_version"] = r.secrets_version;
  o["outdated"] = row_outdated(r, d, live);
  if (const auto v = live.replicas.find(r.index); v != live.replicas.end()) {
    o["in_flight"] = v->second.in_flight;
    o["busy"] = v->second.busy;
    o["slots"] = v->second.slots;
    o["ejected"] = v->second.ejected;
    // The prompts its device is reading now (its last status report): a long prefill in progress.
    o["prefill"] = json::object{{"done", v->second.prefill.done}, {"total", v->second.prefill.total}};
    add_speed_json(o, v->second);
    o["heartbeat_missed"] = live.fleet->silent.contains(r.processor_id);
  }
  o["failures"] = live.fleet->metrics->failures(d.spec.name, r.index);
  o["completed_last_hour"] = live.fleet->metrics->completed_last_hour(d.spec.name, r.index);
  const auto agreement = live.fleet->agreement.find(r.processor_id);
  o["agreement"] = agreement != live.fleet->agreement.end() ? json::value(agreement_json(agreement->second)) : nullptr;
  o["quarantined"] = agreement != live.fleet->agreement.end() && agreement->second.quarantined;
  // What its device runs it with (autotune's choice), while that device serves it.
  const auto tuned = live.fleet->tuned.find({d.spec.name, r.index});
  const bool current = tuned != live.fleet->tuned.end() && tuned->second.processor_id == r.processor_id;
  o["tuned"] = current ? to_json(tuned->second.settings) : json::value(nullptr);
  return o;
}

json::object deployment_json(const Deployment& d, const std::vector<Replica>& rows, const Store& store, int64_t now,
                             const Live& live) {
  json::object o{{"name", d.spec.name}, {"created_ms", d.created_ms}, {"spec", deployment_spec_json(d.spec, false)}};
  json::array replicas;
  double cost = 0;
  int ready = 0;
  int outdated_rows = 0;
  for (const Replica& r : rows) {
    if (r.deployment != d.spec.name) continue;
    replicas.push_back(replica_json(r, d, store, now, live));
    cost += store.replica_cost(r, now);
    if (r.state == ReplicaState::Ready && r.index < d.spec.replicas) ++ready;
    if (r.index < d.spec.replicas + d.spec.spares && !r.draining && row_outdated(r, d, live)) ++outdated_rows;
  }
  o["replicas"] = std::move(replicas);
  o["ready"] = ready;
  o["outdated"] = outdated_rows;  // rows a rolling update has yet to replace
  o["cost"] = cost;
  o["queue"] = live.queue;
  o["completed_last_hour"] = live.fleet->metrics->completed_last_hour(d.spec.name);
  o["endpoint"] = "/d/" + d.spec.name + "/v1";
  o["secrets_version"] = d.secrets_version;
  return o;
}

// For an attested_only deployment: how old the attestation status list in use is, or a warning
// that there is none (a revoked chain would never be noticed).
void add_attestation_status(json::object& o, const Deployment& d, DeviceAttestation& attestation, int64_t now) {
  if (!d.spec.requirements.attested_only) return;
  json::array warnings;
  if (AttestationStatusFeed* feed = attestation.status_feed(); feed == nullptr) {
    warnings.emplace_back(
        "attested_only without --attestation-status: a revoked or suspended attestation chain is never noticed");
  } else {
    const Status error = feed->last_error();
    o["attestation_status"] = json::object{{"source", feed->source()},
                                           {"fetched_ms", feed->last_good_ms()},
                                           {"age_seconds", (now - feed->last_good_ms()) / 1000},
                                           {"last_error", error.ok() ? "" : error.message()}};
    if (!error.ok()) warnings.emplace_back("the attestation status list was not refreshed: " + error.message());
  }
  o["warnings"] = std::move(warnings);
}

}  // namespace

void AdminApi::add_deployment_routes(net::RouteTable& routes) {
  routes.add("GET", "/api/v1/deployments", admin(plain(&AdminApi::list_deployments)));
  routes.add("POST", "/api/v1/deployments", admin(plain(&AdminApi::create_deployment)));
  routes.add("GET", "/api/v1/deployments/{name}", admin(by("name", &AdminApi::show_deployment)));
  routes.add("DELETE", "/api/v1/deployments/{name}", admin(by("name", &AdminApi::delete_deployment)));
  routes.add("PUT", "/api/v1/deployments/{name}", admin(by("name", &AdminApi::apply_deployment)));
  routes.add("POST", "/api/v1/deployments/{name}/scale", admin(by("name", &AdminApi::scale_deployment)));
  routes.add("GET", "/api/v1/deployments/{name}/events", admin(by("name", &AdminApi::deployment_events)));
  for (const bool drain : {true, false}) {
    routes.add("POST",
               drain ? "/api/v1/deployments/{name}/replicas/{index}/drain"
                     : "/api/v1/deployments/{name}/replicas/{index}/undrain",
               admin([this, drain](const net::HttpRequest&, const net::PathParams& params, net::ResponseWriter& w) {
                 drain_replica(params.get("name"), params.get("index"), drain, w);
               }));
  }
}

void AdminApi::list_deployments(const net::HttpRequest&, net::ResponseWriter& w) {
  const int64_t now = state_.now_ms();
  auto ds = state_.store->deployments();
  auto rows = state_.store->replicas("");
  if (!ds.ok() || !rows.ok()) return send_error(w, 500, "store error");
  json::array out;
  const FleetLive fleet = fleet_live(forwarder_.queue_lengths(), state_);
  for (const Deployment& d : *ds) {
    out.push_back(deployment_json(d, *rows, *state_.store, now, live_of(d.spec.name, state_.registry, fleet)));
  }
  send_json(w, 200, json::serialize(json::object{{"deployments", std::move(out)}}));
}

void AdminApi::create_deployment(const net::HttpRequest& req, net::ResponseWriter& w) {
  const int64_t now = state_.now_ms();
  auto body = parse_json(req.body, "request body");
  if (!body.ok()) return send_error(w, 400, body.status().message());
  auto spec = parse_deployment_spec(*body);
  if (!spec.ok()) return send_error(w, 400, spec.status().message());
  Deployment d{*spec, now};
  state_.seal_env(d.spec);  // secrets never reach the store in plain text
  {
    std::lock_guard lock(state_.state_mu);
    if (Status s = state_.store->create_deployment(d); !s.ok()) {
      return send_error(w, s.code() == StatusCode::InvalidArgument ? 409 : 500, s.message());
    }
    state_.refresh_registry();
  }
  state_.log("deployment " + spec->name + " created: " + std::to_string(spec->replicas) + " replicas of " +
             spec->model_url + " at <= " + std::to_string(spec->max_price_per_day) + "/day");
  state_.request_reconcile();
  auto rows = state_.store->replicas(spec->name);
  const FleetLive fleet = fleet_live(forwarder_.queue_lengths(), state_);
  send_json(w, 201,
            json::serialize(deployment_json(d, rows.ok() ? *rows : std::vector<Replica>{}, *state_.store, now,
                                            live_of(spec->name, state_.registry, fleet))));
}

namespace {

// The parts of a spec that decide what the replicas load and which devices may serve them:
// changing one starts a rolling update (fleet/matcher/rollout.h).
bool same_serving(const DeploymentSpec& a, const DeploymentSpec& b) {
  const Requirements& x = a.requirements;
  const Requirements& y = b.requirements;
  return serving_of(a) == serving_of(b) && x.min_ram_bytes == y.min_ram_bytes && x.min_cores == y.min_cores &&
         x.arch == y.arch && x.min_decode_tps == y.min_decode_tps && x.attested_only == y.attested_only &&
         x.allow == y.allow;
}

}  // namespace

void AdminApi::apply_deployment(const net::HttpRequest& req, const std::string& name, net::ResponseWriter& w) {
  auto body = parse_json(req.body, "request body");
  if (!body.ok()) return send_error(w, 400, body.status().message());
  auto spec = parse_deployment_spec(*body);
  if (!spec.ok()) return send_error(w, 400, spec.status().message());
  if (spec->name != name) return send_error(w, 400, "the spec's name '" + spec->name + "' is not '" + name + "'");
  auto existing = state_.store->deployment(name);
  if (!existing.ok()) return send_error(w, 500, existing.status().message());
  if (!existing->has_value()) return create_deployment(req, w);
  const DeploymentSpec old = (*existing)->spec;
  // An autoscaled deployment keeps the count its autoscaler chose (within the new bounds) unless
  // the spec names one.
  if (spec->autoscale.enabled() && !body->as_object().contains("replicas")) {
    spec->replicas = std::clamp(old.replicas, spec->autoscale.min_replicas, spec->autoscale.max_replicas);
  }
  state_.seal_env(*spec, &old);
  {
    std::lock_guard lock(state_.state_mu);
    if (Status s = state_.store->update_deployment_spec(*spec); !s.ok()) return send_error(w, 500, s.message());
    if (spec->replicas != old.replicas || spec->spares != old.spares) {
      if (Status s = state_.store->scale_deployment(name, spec->replicas, spec->spares, state_.now_ms()); !s.ok()) {
        return send_error(w, 500, s.message());
      }
    }
    state_.refresh_registry();
  }
  const std::string counts = std::to_string(spec->replicas) + " replicas, " + std::to_string(spec->spares) +
                             " spares, <= " + std::to_string(spec->max_price_per_day) + "/day";
  if (same_serving(old, *spec)) {
    state_.log("deployment " + name + " updated in place: " + counts);
  } else {
    state_.log("deployment " + name + " updated: " + counts +
               "; a rolling update replaces the replicas serving the old spec" +
               (old.model_sha256 != spec->model_sha256
                    ? " (model " + old.model_sha256.substr(0, 12) + " → " + spec->model_sha256.substr(0, 12) + ")"
                    : std::string()));
  }
  state_.request_reconcile();
  show_deployment(name, w);
}

void AdminApi::show_deployment(const std::string& name, net::ResponseWriter& w) {
  auto d = state_.store->deployment(name);
  if (!d.ok()) return send_error(w, 500, d.status().message());
  if (!d->has_value()) return send_error(w, 404, "no deployment named '" + name + "'");
  auto rows = state_.store->replicas(name);
  if (!rows.ok()) return send_error(w, 500, rows.status().message());
  const FleetLive fleet = fleet_live(forwarder_.queue_lengths(), state_);
  json::object o = deployment_json(**d, *rows, *state_.store, state_.now_ms(), live_of(name, state_.registry, fleet));
  if (state_.attestation) add_attestation_status(o, **d, *state_.attestation, state_.now_ms());
  send_json(w, 200, json::serialize(o));
}

void AdminApi::scale_deployment(const net::HttpRequest& req, const std::string& name, net::ResponseWriter& w) {
  auto body = parse_json(req.body, "request body");
  if (!body.ok()) return send_error(w, 400, body.status().message());
  if (!body->is_object()) return send_error(w, 400, "the body must be an object: {\"replicas\": N, \"spares\": M}");
  const json::object& o = body->as_object();
  for (const auto& kv : o) {
    if (kv.key() != "replicas" && kv.key() != "spares") {
      return send_error(w, 400, "unknown key '" + std::string(kv.key()) + "' (replicas, spares)");
    }
  }
  auto d = state_.store->deployment(name);
  if (!d.ok()) return send_error(w, 500, d.status().message());
  if (!d->has_value()) return send_error(w, 404, "no deployment named '" + name + "'");
  // Only the counts the body names are written; the other stays as the store has it when the
  // write happens (not as read here, which another hub's autoscaler may have changed since).
  std::optional<int> counts[2];
  const char* keys[2] = {"replicas", "spares"};
  const int lows[2] = {1, 0};
  const int highs[2] = {kMaxReplicas, kMaxSpares};
  for (int i = 0; i < 2; ++i) {
    const json::value* v = o.if_contains(keys[i]);
    if (v == nullptr) continue;
    if (!v->is_int64() || v->as_int64() < lows[i] || v->as_int64() > highs[i]) {
      return send_error(w, 400,
                        std::string(keys[i]) + " must be an integer in [" + std::to_string(lows[i]) + ", " +
                            std::to_string(highs[i]) + "]");
    }
    counts[i] = static_cast<int>(v->as_int64());
  }
  if (!counts[0] && !counts[1]) return send_error(w, 400, "the body names no count: {\"replicas\": N, \"spares\": M}");
  if (const AutoscaleSettings& a = (*d)->spec.autoscale;
      a.enabled() && counts[0] && (*counts[0] < a.min_replicas || *counts[0] > a.max_replicas)) {
    return send_error(w, 400,
                      "deployment '" + name + "' autoscales between " + std::to_string(a.min_replicas) + " and " +
                          std::to_string(a.max_replicas) +
                          " replicas: scale within them, or change min_replicas and max_replicas with deploy");
  }
  {
    std::lock_guard lock(state_.state_mu);
    if (Status s = state_.store->scale_deployment(name, counts[0], counts[1], state_.now_ms()); !s.ok()) {
      return send_error(w, s.code() == StatusCode::NotFound ? 404 : 500, s.message());
    }
    state_.refresh_registry();
  }
  std::string scaled;
  for (int i = 0; i < 2; ++i) {
    if (counts[i]) scaled += (scaled.empty() ? "" : " and ") + std::to_string(*counts[i]) + " " + keys[i];
  }
  state_.log("deployment " + name + " scaled to " + scaled);
  state_.request_reconcile();
  show_deployment(name, w);
}

void AdminApi::deployment_events(const net::HttpRequest& req, const std::string& name, net::ResponseWriter& w) {
  int limit = 100;
  if (const std::string text = req.query_param("limit"); !text.empty()) {
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), limit);
    if (ec != std::errc() || end != text.data() + text.size() || limit < 1 || limit > kMaxScalingEventsPerDeployment) {
      return send_error(w, 400,
                        "limit must be an integer in [1, " + std::to_string(kMaxScalingEventsPerDeployment) + "]");
    }
  }
  auto d = state_.store->deployment(name);
  if (!d.ok()) return send_error(w, 500, d.status().message());
  if (!d->has_value()) return send_error(w, 404, "no deployment named '" + name + "'");
  auto events = state_.store->scaling_events().latest(name, limit);
  if (!events.ok()) return send_error(w, 500, events.status().message());
  json::array data;
  for (const ScalingEvent& e : *events) {
    data.push_back(json::object{{"at_ms", e.at_ms},
                                {"action", e.action},
                                {"from_replicas", e.from_replicas},
                                {"to_replicas", e.to_replicas},
                                {"reason", e.reason}});
  }
  send_json(w, 200, json::serialize(json::object{{"object", "list"}, {"deployment", name}, {"data", std::move(data)}}));
}

void AdminApi::drain_replica(const std::string& name, const std::string& index_text, bool drain,
                             net::ResponseWriter& w) {
  int index = -1;
  const auto [end, ec] = std::from_chars(index_text.data(), index_text.data() + index_text.size(), index);
  if (ec != std::errc() || end != index_text.data() + index_text.size() || index < 0) {
    return send_error(w, 404, "no replica '" + index_text.substr(0, 16) + "' of '" + name + "'");
  }
  {
    std::lock_guard lock(state_.state_mu);
    auto rows = state_.store->replicas(name);
    if (!rows.ok()) return send_error(w, 500, rows.status().message());
    auto row = std::find_if(rows->begin(), rows->end(), [&](const Replica& r) { return r.index == index; });
    if (row == rows->end()) return send_error(w, 404, "no replica " + std::to_string(index) + " of '" + name + "'");
    row->draining = drain;
    if (Status s = state_.store->update_replica(*row, state_.now_ms()); !s.ok()) return send_error(w, 500, s.message());
    state_.refresh_registry();
  }
  state_.log("replica " + name + "/" + std::to_string(index) +
             (drain ? " draining: no new requests" : " takes requests again"));
  state_.request_reconcile();
  show_deployment(name, w);
}

void AdminApi::delete_deployment(const std::string& name, net::ResponseWriter& w) {
  {
    std::lock_guard lock(state_.state_mu);
    auto d = state_.store->deployment(name);
    if (!d.ok()) return send_error(w, 500, d.status().message());
    if (!d->has_value()) return send_error(w, 404, "no deployment named '" + name + "'");
    if (Status s = state_.store->delete_deployment(name, state_.now_ms()); !s.ok())
      return send_error(w, 500, s.message());
    state_.refresh_registry();
  }
  // Its keys, batches and files go with it (issue 43 item 4); they are bound to its creation
  // time too, so a deployment created again under the name never sees them even if this stops
  // half way.
  const std::vector<std::string> revoked = state_.keys.revoke_deployment(name);
  state_.flush_key_usage();
  const size_t files = batches_.forget_deployment(name);
  state_.log("deployment " + name + " removed, with " + std::to_string(revoked.size()) + " API keys (revoked) and " +
             std::to_string(files) + " files");
  state_.canaries.remove(name);  // the store's went with the deployment
  state_.request_reconcile();
  send_json(w, 200, json::serialize(json::object{{"deleted", name}}));
}

}  // namespace cellserve::fleet
