// The hub's internals, shared by hub.cpp (lifecycle, tunnels, reconcile loop), hub_api.cpp (the
// REST API) and replica_proxy.cpp (forwarding to replicas).
#pragma once

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "fleet/hub/agent_links.h"
#include "fleet/hub/hub.h"
#include "fleet/store/store.h"
#include "fleet/tls/tls.h"
#include "server/api/openai_error.h"
#include "server/http/http_server.h"
#include "server/http/http_types.h"

namespace cellserve::fleet {

int64_t now_ms();

struct Hub::Impl {
  HubOptions options;
  std::unique_ptr<Store> store;
  AgentLinks links;
  server::Handler files;
  std::unique_ptr<server::HttpServer> http;
  std::unique_ptr<TlsTerminator> tls;  // in front of `http` (on loopback) when TLS is on

  std::thread reconcile_thread;
  std::mutex mu;  // guards stopping and serializes reconcile passes
  std::condition_variable wake;
  bool stopping = false;
  bool wake_requested = false;

  void log(const std::string& line) const;
  void request_reconcile();

  // hub.cpp
  void handle(const server::HttpRequest& req, server::ResponseWriter& w);
  void open_tunnel(const server::HttpRequest& req, server::ResponseWriter& w);
  void reconcile_loop();
  void reconcile_once();
  void poll_agent(const std::shared_ptr<AgentLink>& link, int64_t now);
  void push_assignments(const std::shared_ptr<AgentLink>& link, const std::vector<Replica>& rows);

  // hub_api.cpp
  void handle_api(const server::HttpRequest& req, server::ResponseWriter& w);

  // replica_proxy.cpp: `rest` is the path after /d/<deployment>/r/<index>.
  void proxy_replica(const server::HttpRequest& req, server::ResponseWriter& w, const std::string& deployment,
                     int index);
};

// OpenAI-style errors: server::send_error (server/api/openai_error.h).
using server::send_error;
void send_json(server::ResponseWriter& w, int status, const std::string& body);

}  // namespace cellserve::fleet
