// The operator's REST API under /api/v1 (and /metrics, /health, /files/): each resource's file
// adds its own routes to the hub's one route table (api_processors.cpp, api_history.cpp,
// api_deployments.cpp, api_secrets.cpp, api_market.cpp, api_keys.cpp, api_enrollment.cpp, api_hubs.cpp), each
// behind the admin key when one is configured.
#pragma once

#include <atomic>
#include <optional>
#include <set>
#include <string>

#include "fleet/hub/batch_service.h"
#include "fleet/hub/hub_state.h"
#include "fleet/hub/replica_forwarder.h"
#include "net/http_server.h"
#include "net/route_table.h"

namespace cellserve::fleet {

class AdminApi {
 public:
  // `files`: the handler of DATA_DIR/files (models and adapters, for agents and the operator).
  AdminApi(HubState& state, ReplicaForwarder& forwarder, BatchService& batches, net::Handler files)
      : state_(state), forwarder_(forwarder), batches_(batches), files_(std::move(files)) {}

  void add_routes(net::RouteTable& routes);

 private:
  // `handler` behind the admin key (401 without it, when one is configured).
  net::RouteHandler admin(net::RouteHandler handler) const;
  // A route's handler from a member function: of the request, or of one path capture `param`
  // (and the request).
  using Handler = void (AdminApi::*)(const net::HttpRequest&, net::ResponseWriter&);
  using ParamHandler = void (AdminApi::*)(const std::string&, net::ResponseWriter&);
  using RequestParamHandler = void (AdminApi::*)(const net::HttpRequest&, const std::string&, net::ResponseWriter&);
  net::RouteHandler plain(Handler f);
  net::RouteHandler by(const char* param, ParamHandler f);
  net::RouteHandler by(const char* param, RequestParamHandler f);

  void add_processor_routes(net::RouteTable& routes);   // api_processors.cpp
  void add_history_routes(net::RouteTable& routes);     // api_history.cpp
  void add_deployment_routes(net::RouteTable& routes);  // api_deployments.cpp
  void add_secret_routes(net::RouteTable& routes);      // api_secrets.cpp
  void add_market_routes(net::RouteTable& routes);      // api_market.cpp
  void add_key_routes(net::RouteTable& routes);         // api_keys.cpp
  void add_enrollment_routes(net::RouteTable& routes);  // api_enrollment.cpp
  void add_spot_check_routes(net::RouteTable& routes);  // api_spot_checks.cpp
  void add_traffic_routes(net::RouteTable& routes);     // api_traffic.cpp
  void add_hub_routes(net::RouteTable& routes);         // api_hubs.cpp

  // GET /api/v1/hubs: the hubs sharing the store and the leases (api_hubs.cpp).
  void list_hubs(const net::HttpRequest& req, net::ResponseWriter& w);

  void list_processors(const net::HttpRequest& req, net::ResponseWriter& w);
  // GET /api/v1/processors/{id}/history, what `verify --hub` checks against.
  void processor_history(const net::HttpRequest& req, const std::string& id, net::ResponseWriter& w);
  void list_deployments(const net::HttpRequest& req, net::ResponseWriter& w);
  void create_deployment(const net::HttpRequest& req, net::ResponseWriter& w);
  void show_deployment(const std::string& name, net::ResponseWriter& w);
  void delete_deployment(const std::string& name, net::ResponseWriter& w);
  void scale_deployment(const net::HttpRequest& req, const std::string& name, net::ResponseWriter& w);
  // GET /api/v1/deployments/{name}/events[?limit=N]: its autoscaling decisions, newest first.
  void deployment_events(const net::HttpRequest& req, const std::string& name, net::ResponseWriter& w);
  // PUT: creates the deployment, or changes in place what may change (counts, price, endpoint).
  void apply_deployment(const net::HttpRequest& req, const std::string& name, net::ResponseWriter& w);
  void drain_replica(const std::string& name, const std::string& index, bool drain, net::ResponseWriter& w);
  void market(const net::HttpRequest& req, net::ResponseWriter& w);
  // Sets (or removes) one secret of deployment `name`.
  void set_secret(const net::HttpRequest& req, const std::string& name, const std::string& secret, bool remove,
                  net::ResponseWriter& w);
  void create_api_key(const net::HttpRequest& req, net::ResponseWriter& w);
  void list_api_keys(const net::HttpRequest& req, net::ResponseWriter& w);
  void revoke_api_key(const std::string& id, net::ResponseWriter& w);
  void create_enrollment_token(const net::HttpRequest& req, net::ResponseWriter& w);
  void list_enrollment_tokens(const net::HttpRequest& req, net::ResponseWriter& w);
  void withdraw_enrollment_token(const std::string& id, net::ResponseWriter& w);
  // POST /api/v1/processors/{id}/approve-key: the device's next valid attestation pins the key it
  // presents (docs/attestation.md, "Pinning").
  void approve_key_change(const std::string& id, net::ResponseWriter& w);
  void set_processor_enrollment(const net::HttpRequest& req, const std::string& id, Enrollment e,
                                net::ResponseWriter& w);

  // POST /api/v1/processors/{id}/release: ends a quarantine (the record starts afresh).
  void release_processor(const std::string& id, net::ResponseWriter& w);
  // PUT /api/v1/deployments/{name}/canaries: {"cases": "<JSONL>", "every": N}.
  void set_canaries(const net::HttpRequest& req, const std::string& name, net::ResponseWriter& w);

  // GET /api/v1/traffic and its server-sent events (api_traffic.cpp).
  void traffic(const net::HttpRequest& req, net::ResponseWriter& w);
  void traffic_stream(const net::HttpRequest& req, net::ResponseWriter& w);
  std::optional<std::set<std::string>> sample_traffic();
  std::string traffic_json(const std::string& deployment, int64_t since_ms);

  HubState& state_;
  ReplicaForwarder& forwarder_;  // the queues' lengths
  BatchService& batches_;        // a deleted deployment's files and batches
  net::Handler files_;
  std::atomic<int> traffic_streams_{0};  // open /api/v1/traffic/stream responses
};

}  // namespace cellserve::fleet
