// The hub's internals. One concept a file:
//   hub.cpp              lifecycle and the route table
//   agent_admission.cpp  challenges, tunnels and registration of agents
//   agent_heartbeat.cpp  each agent's heartbeat: pushing assignments, polling its status
//   reconcile.cpp        the reconcile loop: offline agents, matching, promotions
//   api_processors.cpp, api_deployments.cpp, api_market.cpp   the REST API, per resource
//   replica_proxy.cpp    forwarding a user's request to a replica
//   replica_registry.h   the in-memory view of replicas that the request path reads
#pragma once

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "fleet/hub/agent_links.h"
#include "fleet/hub/hub.h"
#include "fleet/hub/replica_registry.h"
#include "fleet/spec/replica_address.h"
#include "fleet/store/store.h"
#include "fleet/tls/tls.h"
#include "net/http_server.h"
#include "net/http_types.h"
#include "net/json_error.h"
#include "net/route_table.h"

namespace cellserve::fleet {

int64_t now_ms();

struct Hub::Impl {
  HubOptions options;
  std::unique_ptr<Store> store;
  ReplicaRegistry registry;
  net::Handler files;
  net::RouteTable routes;
  std::unique_ptr<net::HttpServer> http;
  std::unique_ptr<TlsTerminator> tls;  // in front of `http` (on loopback) when TLS is on

  std::thread reconcile_thread;
  std::mutex mu;  // guards stopping and wake_requested
  std::condition_variable wake;
  bool stopping = false;
  bool wake_requested = false;

  // Serializes every change to processor and replica rows (heartbeats, matching, the REST API)
  // with the registry refresh that follows it. Never held across network I/O.
  std::mutex state_mu;

  // Declared last so that it is destroyed first: a link's destructor joins its heartbeat, which
  // uses the members above.
  AgentLinks links;

  void log(const std::string& line) const;
  void request_reconcile();
  // Reloads the registry from the store. Call with state_mu held.
  void refresh_registry();

  // hub.cpp
  void add_routes();
  void handle(const net::HttpRequest& req, net::ResponseWriter& w);

  // agent_admission.cpp
  void issue_challenge(const net::HttpRequest& req, net::ResponseWriter& w);
  void open_tunnel(const net::HttpRequest& req, net::ResponseWriter& w);

  // agent_heartbeat.cpp
  void heartbeat(AgentLink& link);
  void push_assignments(AgentLink& link);
  void poll_agent(AgentLink& link);

  // reconcile.cpp
  void reconcile_loop();
  void reconcile_once();

  // api_*.cpp; each needs the admin key (checked in hub.cpp).
  void list_processors(const net::HttpRequest& req, net::ResponseWriter& w);
  void list_deployments(const net::HttpRequest& req, net::ResponseWriter& w);
  void create_deployment(const net::HttpRequest& req, net::ResponseWriter& w);
  void show_deployment(const std::string& name, net::ResponseWriter& w);
  void delete_deployment(const std::string& name, net::ResponseWriter& w);
  void market(const net::HttpRequest& req, net::ResponseWriter& w);

  // replica_proxy.cpp
  void proxy_replica(const net::HttpRequest& req, net::ResponseWriter& w, const ReplicaAddress& address);
};

using net::send_error;
void send_json(net::ResponseWriter& w, int status, const std::string& body);

}  // namespace cellserve::fleet
