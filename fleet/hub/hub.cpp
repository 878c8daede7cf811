#include "fleet/hub/hub.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>

#include <boost/asio/ip/address.hpp>
#include <boost/json.hpp>

#include "fleet/crypto/identity.h"
#include "fleet/download/file_server.h"
#include "fleet/hub/files_access.h"
#include "fleet/hub/hub_impl.h"
#include "fleet/spec/agent_protocol.h"
#include "net/bearer.h"
#include "net/host_check.h"

namespace cellserve::fleet {
namespace {

namespace fs = std::filesystem;

// 127.0.0.0/8, ::1 and "localhost": only this machine can reach the hub.
bool loopback_host(const std::string& host) {
  if (host == "localhost") return true;
  boost::system::error_code ec;
  const boost::asio::ip::address a = boost::asio::ip::make_address(host, ec);
  return !ec && a.is_loopback();
}

}  // namespace

int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

void send_json(net::ResponseWriter& w, int status, const std::string& body) {
  w.send(status, "application/json", body);
}

void Hub::Impl::log(const std::string& line) const {
  if (options.log) {
    options.log(line);
  } else {
    std::fprintf(stderr, "cellserve hub: %s\n", line.c_str());
    std::fflush(stderr);
  }
}

void Hub::Impl::request_reconcile() {
  std::lock_guard lock(mu);
  wake_requested = true;
  wake.notify_all();
}

void Hub::Impl::refresh_registry() {
  auto deployments = store->deployments();
  auto rows = store->replicas("");
  if (!deployments.ok() || !rows.ok()) {
    return log("store: " + (deployments.ok() ? rows.status() : deployments.status()).message());
  }
  std::map<std::string, std::string> replica_keys;
  for (const Deployment& d : *deployments) replica_keys[d.spec.name] = replica_key(d.spec.name, d.created_ms);
  registry.refresh(*deployments, *rows, replica_keys);
}

bool Hub::Impl::spools_upload(const net::HttpRequest& head) const {
  static constexpr std::string_view kPrefix = "/d/";
  static constexpr std::string_view kSuffix = "/v1/files";
  if (head.method != "POST" || !head.path.starts_with(kPrefix) || !head.path.ends_with(kSuffix)) return false;
  const std::string deployment = head.path.substr(kPrefix.size(), head.path.size() - kPrefix.size() - kSuffix.size());
  if (deployment.empty() || deployment.find('/') != std::string::npos) return false;
  if (open_data_path()) return true;
  const std::string presented = net::request_api_key(head);
  const std::optional<DeploymentView> d = registry.deployment(deployment);
  return is_admin_key(presented) || (d && keys.opens(presented, deployment, d->created_ms));
}

std::string Hub::Impl::replica_key(const std::string& deployment, int64_t created_ms) const {
  // Tied to the creation time too: a deployment deleted and created again gets a new key.
  return secrets.derive("replica-key " + deployment + " " + std::to_string(created_ms));
}

bool Hub::Impl::user_allowed(const net::HttpRequest& req, net::ResponseWriter& w, const std::string& deployment,
                             std::string* key_id) {
  key_id->clear();
  if (open_data_path()) return true;
  const std::string presented = net::request_api_key(req);
  if (is_admin_key(presented)) return true;
  const auto refuse = [&](int status, const std::string& type, const std::string& code, const std::string& message,
                          net::HeaderList headers) {
    w.send(status, "application/json", net::error_body(net::ApiError{status, message, type, "", code}), headers);
    return false;
  };
  // A deployment's keys open only the deployment created with them (-1: none by that name now).
  const std::optional<DeploymentView> d = registry.deployment(deployment);
  const KeyBook::Check c = keys.admit(presented, deployment, d ? d->created_ms : -1, now_ms());
  using Kind = KeyBook::Check::Kind;
  switch (c.kind) {
    case Kind::Allowed:
      *key_id = c.key_id;
      return true;
    case Kind::Unknown:
      return refuse(401, "authentication_error", "invalid_api_key",
                    "invalid or missing API key: send 'Authorization: Bearer <key>'", {{"WWW-Authenticate", "Bearer"}});
    case Kind::OtherDeployment:
      return refuse(403, "permission_error", "wrong_deployment",
                    "API key " + c.key_id + " is for deployment '" + c.deployment + "', not this one", {});
    case Kind::RateLimited:
      return refuse(429, "rate_limit_error", "rate_limit_exceeded",
                    "API key " + c.key_id + " is over its " + std::to_string(c.limit) + " requests per minute",
                    {{"Retry-After", std::to_string(c.retry_after_s)}});
    case Kind::OutOfTokens:
      return refuse(429, "rate_limit_error", "tokens_exceeded",
                    "API key " + c.key_id + " has used its " + std::to_string(c.limit) + " tokens for today (UTC)",
                    {{"Retry-After", std::to_string(c.retry_after_s)}});
  }
  return false;
}

bool Hub::Impl::hold_tokens(const std::string& key_id, int64_t tokens, net::ResponseWriter& w) {
  const KeyBook::Check c = keys.hold(key_id, tokens, now_ms());
  if (c.kind == KeyBook::Check::Kind::Allowed) return true;
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

void Hub::Impl::add_routes() {
  using net::HttpRequest;
  using net::PathParams;
  using net::ResponseWriter;
  // The REST API needs the admin key when one is configured.
  const auto admin = [this](auto handler) {
    return [this, handler](const HttpRequest& req, const PathParams& params, ResponseWriter& w) {
      if (!options.api_key.empty() && !net::has_api_key(req, options.api_key)) {
        return send_error(w, 401, "a valid hub API key is required (Authorization: Bearer ...)",
                          {{"WWW-Authenticate", "Bearer"}});
      }
      handler(req, params, w);
    };
  };
  const auto plain = [this](void (Impl::*f)(const HttpRequest&, ResponseWriter&)) {
    return [this, f](const HttpRequest& req, const PathParams&, ResponseWriter& w) { (this->*f)(req, w); };
  };
  const auto by_name = [this](void (Impl::*f)(const std::string&, ResponseWriter&)) {
    return [this, f](const HttpRequest&, const PathParams& params, ResponseWriter& w) {
      (this->*f)(params.get("name"), w);
    };
  };
  routes.add("GET", "/health",
             [](const HttpRequest&, const PathParams&, ResponseWriter& w) { send_json(w, 200, R"({"status":"ok"})"); });
  routes.add("GET", kChallengePath, plain(&Impl::issue_challenge));
  routes.add("GET", kTunnelPath, plain(&Impl::open_tunnel));
  // Models and adapters: on a closed hub only for the admin key, or an agent's download token for
  // the files its current assignments name while it is enrolled (files_access.h).
  routes.add("GET", "/files/{path...}", [this](const HttpRequest& req, const PathParams&, ResponseWriter& w) {
    if (!options.api_key.empty() && !net::has_api_key(req, options.api_key)) {
      const std::optional<std::string> device = files_tokens.verify(net::request_api_key(req), now_ms() / 1000);
      if (!device) {
        return send_error(w, 401, "a hub API key or an agent's download token is required for /files/",
                          {{"WWW-Authenticate", "Bearer"}});
      }
      if (const Status may = device_may_fetch(*store, *device, req.path); !may.ok()) {
        const bool denied = may.code() == StatusCode::PermissionDenied;
        return send_error(w, denied ? 403 : 500, denied ? may.message() : "store error");
      }
    }
    files(req, w);
  });
  routes.add("GET", "/api/v1/processors", admin(plain(&Impl::list_processors)));
  routes.add("GET", "/api/v1/processors/{id}/history",
             admin([this](const HttpRequest& req, const PathParams& params, ResponseWriter& w) {
               processor_history(req, params.get("id"), w);
             }));
  routes.add("GET", "/api/v1/deployments", admin(plain(&Impl::list_deployments)));
  routes.add("POST", "/api/v1/deployments", admin(plain(&Impl::create_deployment)));
  routes.add("GET", "/api/v1/deployments/{name}", admin(by_name(&Impl::show_deployment)));
  routes.add("DELETE", "/api/v1/deployments/{name}", admin(by_name(&Impl::delete_deployment)));
  routes.add("PUT", "/api/v1/deployments/{name}",
             admin([this](const HttpRequest& req, const PathParams& params, ResponseWriter& w) {
               apply_deployment(req, params.get("name"), w);
             }));
  routes.add("POST", "/api/v1/deployments/{name}/scale",
             admin([this](const HttpRequest& req, const PathParams& params, ResponseWriter& w) {
               scale_deployment(req, params.get("name"), w);
             }));
  for (const bool remove : {false, true}) {
    routes.add(remove ? "DELETE" : "PUT", "/api/v1/deployments/{name}/secrets/{secret}",
               admin([this, remove](const HttpRequest& req, const PathParams& params, ResponseWriter& w) {
                 set_secret(req, params.get("name"), params.get("secret"), remove, w);
               }));
  }
  for (const bool drain : {true, false}) {
    routes.add("POST",
               drain ? "/api/v1/deployments/{name}/replicas/{index}/drain"
                     : "/api/v1/deployments/{name}/replicas/{index}/undrain",
               admin([this, drain](const HttpRequest&, const PathParams& params, ResponseWriter& w) {
                 drain_replica(params.get("name"), params.get("index"), drain, w);
               }));
  }
  routes.add("GET", "/api/v1/market", admin(plain(&Impl::market)));
  routes.add("POST", "/api/v1/keys", admin(plain(&Impl::create_api_key)));
  routes.add("GET", "/api/v1/keys", admin(plain(&Impl::list_api_keys)));
  routes.add("POST", "/api/v1/keys/{id}/revoke",
             admin([this](const HttpRequest&, const PathParams& params, ResponseWriter& w) {
               revoke_api_key(params.get("id"), w);
             }));
  routes.add("POST", "/api/v1/enrollment-tokens", admin(plain(&Impl::create_enrollment_token)));
  routes.add("GET", "/api/v1/enrollment-tokens", admin(plain(&Impl::list_enrollment_tokens)));
  routes.add("POST", "/api/v1/enrollment-tokens/{id}/withdraw",
             admin([this](const HttpRequest&, const PathParams& params, ResponseWriter& w) {
               withdraw_enrollment_token(params.get("id"), w);
             }));
  for (const Enrollment e : {Enrollment::Enrolled, Enrollment::Revoked}) {
    routes.add("POST", e == Enrollment::Enrolled ? "/api/v1/processors/{id}/approve" : "/api/v1/processors/{id}/revoke",
               admin([this, e](const HttpRequest& req, const PathParams& params, ResponseWriter& w) {
                 set_processor_enrollment(req, params.get("id"), e, w);
               }));
  }
  routes.add("GET", "/metrics", admin([this](const HttpRequest&, const PathParams&, ResponseWriter& w) {
               w.send(200, "text/plain; version=0.0.4", metrics.prometheus_text(registry, queue_lengths()));
             }));
  routes.add("*", kDeploymentRoute, [this](const HttpRequest& req, const PathParams& params, ResponseWriter& w) {
    const std::string& name = params.get("deployment");
    std::string key_id;
    if (!user_allowed(req, w, name, &key_id)) return;
    if (!valid_deployment_name(name)) return send_error(w, 404, "no deployment named '" + name.substr(0, 64) + "'");
    serve_deployment(req, w, name, key_id, params.get("rest"));
  });
  routes.add("*", kReplicaRoute, [this](const HttpRequest& req, const PathParams& params, ResponseWriter& w) {
    std::string key_id;
    if (!user_allowed(req, w, params.get("deployment"), &key_id)) return;
    const std::optional<ReplicaAddress> address = replica_address(params);
    if (!address) return send_error(w, 404, "no replica at " + req.path);
    proxy_replica(req, w, *address, key_id);
  });
}

bool Hub::Impl::host_allowed(const std::string& host_header) const {
  if (!options.api_key.empty() || net::literal_or_localhost_host(host_header)) return true;
  // The names the operator gave the hub (--domain, --public-url) are its own, not a rebinding
  // page's.
  const std::string name = net::host_name_of(host_header);
  if (!options.domain.empty() && (name == options.domain || name.ends_with("." + options.domain))) return true;
  return std::any_of(options.public_urls.begin(), options.public_urls.end(),
                     [&](const std::string& url) { return public_url_host(url) == name; });
}

void Hub::Impl::handle(const net::HttpRequest& req, net::ResponseWriter& w) {
  if (!host_allowed(req.header("host"))) {
    return send_error(w, 403,
                      "this hub has no admin key and answers only requests to an address, localhost, its --domain "
                      "or its --public-url names "
                      "(Host was '" +
                          net::host_name_of(req.header("host")).substr(0, 64) +
                          "'); set --api-key-file to serve "
                          "other names");
  }
  // A deployment or one replica addressed by host name: <deployment>.<domain>, or
  // <deployment>-<n>.<domain> when no deployment has the whole label as its name.
  if (!options.domain.empty()) {
    std::string host = req.header("host");
    if (const size_t colon = host.rfind(':'); colon != std::string::npos) host.resize(colon);
    const std::string suffix = "." + options.domain;
    if (host.size() > suffix.size() && host.ends_with(suffix)) {
      const std::string label = host.substr(0, host.size() - suffix.size());
      if (valid_deployment_name(label) && registry.deployment(label)) {
        std::string key_id;
        if (!user_allowed(req, w, label, &key_id)) return;
        if (!req.path.starts_with("/v1/")) return send_error(w, 404, "a deployment's API is under /v1/");
        return serve_deployment(req, w, label, key_id, req.path.substr(3));
      }
      if (auto address = replica_address_from_host_label(label)) {
        std::string key_id;
        if (!user_allowed(req, w, address->deployment, &key_id)) return;
        net::HttpRequest rewritten = req;
        rewritten.path = "/d/" + address->deployment + "/r/" + std::to_string(address->index) + req.path;
        address->rest = req.path;
        return proxy_replica(rewritten, w, *address, key_id);
      }
    }
  }
  routes.dispatch(req, w);
}

Hub::Hub(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Hub::~Hub() { stop(); }

int Hub::port() const { return impl_->tls ? impl_->tls->port() : impl_->http->port(); }

Status Hub::reload_tls() {
  if (!impl_ || !impl_->tls) return Status::invalid_argument("the hub does not serve HTTPS");
  CS_ASSIGN_OR_RETURN(std::shared_ptr<TlsContext> ctx,
                      TlsContext::server(impl_->options.tls_cert, impl_->options.tls_key));
  impl_->tls->set_context(std::move(ctx));
  impl_->log("TLS certificate reloaded from " + impl_->options.tls_cert);
  return {};
}

void Hub::stop() {
  if (!impl_ || !impl_->http) return;
  {
    std::lock_guard lock(impl_->mu);
    impl_->stopping = true;
    impl_->wake.notify_all();
  }
  if (impl_->reconcile_thread.joinable()) impl_->reconcile_thread.join();
  impl_->batch_workers.stop();
  if (impl_->tls) impl_->tls->stop();
  impl_->links.close_all();  // forwarded requests end first, so the HTTP server's handlers return
  // Batch lines in flight fail with their tunnels and are pending again for the next start.
  if (impl_->batch_thread.joinable()) impl_->batch_thread.join();
  impl_->http->stop();
  impl_->links.close_all();  // and any tunnel opened meanwhile
  impl_->http.reset();
  impl_->flush_key_usage();  // the last requests' usage
  impl_->store.reset();
}

Result<std::unique_ptr<Hub>> Hub::start(HubOptions options) {
  if (options.data_dir.empty()) return Status::invalid_argument("--data-dir is required");
  for (const std::string& url : options.public_urls) {
    if (normalized_origin(url).empty()) {
      return Status::invalid_argument("--public-url " + url.substr(0, 200) + ": expected http(s)://HOST[:PORT]");
    }
  }
  std::error_code ec;
  fs::create_directories(fs::path(options.data_dir) / "files", ec);
  if (ec) return Status::internal(options.data_dir + ": cannot create: " + ec.message());
  if (!sodium_ready()) return Status::internal("libsodium could not be initialised");
  if (options.api_key.empty() && !options.insecure && !loopback_host(options.host)) {
    return Status::invalid_argument("refusing to listen on " + options.host +
                                    " without an admin key (--api-key-file or $CELLSERVE_HUB_KEY): anyone who "
                                    "reaches it could read the models and use the replicas; pass --insecure to "
                                    "run an open hub anyway");
  }
  auto impl = std::make_unique<Impl>();
  impl->options = options;
  CS_ASSIGN_OR_RETURN(
      impl->attestation,
      DeviceAttestation::create(options.attestation_roots, options.attestation_status, options.attestation_min_patch));
  CS_ASSIGN_OR_RETURN(impl->store, open_sqlite_store((fs::path(options.data_dir) / "hub.db").string()));
  CS_ASSIGN_OR_RETURN(impl->secrets, SecretBox::open_or_create((fs::path(options.data_dir) / "secrets.key").string()));
  {
    // [env] values stored in plain text by an older hub are sealed now.
    CS_ASSIGN_OR_RETURN(std::vector<Deployment> deployments, impl->store->deployments());
    for (Deployment& d : deployments) {
      DeploymentSpec sealed = d.spec;
      impl->seal_env(sealed);
      if (sealed.env != d.spec.env) CS_RETURN_IF_ERROR(impl->store->update_deployment_spec(sealed));
    }
  }
  impl->files = make_file_handler((fs::path(options.data_dir) / "files").string(), "/files/");
  impl->batch_files_dir = (fs::path(options.data_dir) / "batch" / "files").string();
  fs::create_directories(impl->batch_files_dir, ec);
  if (ec) return Status::internal(impl->batch_files_dir + ": cannot create: " + ec.message());
  CS_ASSIGN_OR_RETURN(impl->batch_store, BatchStore::open((fs::path(options.data_dir) / "batch.db").string()));
  // Lines that were running when the hub stopped never had their answers recorded: run again.
  if (auto released = impl->batch_store->release_all_leases(); released.ok() && *released > 0) {
    impl->log("batches: " + std::to_string(*released) + " lines that were running when the hub stopped run again");
  }
  impl->add_batch_routes();
  CS_ASSIGN_OR_RETURN(std::vector<ApiKey> stored_keys, impl->store->api_keys());
  impl->keys.load(std::move(stored_keys));
  {
    // Keys, files and batches stored before they carried their deployment's creation time are
    // bound to the deployment of their name now; those of a name with no deployment open nothing.
    CS_ASSIGN_OR_RETURN(std::vector<Deployment> deployments, impl->store->deployments());
    for (const Deployment& d : deployments) {
      impl->keys.bind_unbound(d.spec.name, d.created_ms);
      CS_RETURN_IF_ERROR(impl->batch_store->bind_unbound(d.spec.name, d.created_ms));
    }
    impl->flush_key_usage();
  }
  impl->add_routes();
  {
    std::lock_guard lock(impl->state_mu);
    impl->refresh_registry();
  }
  const bool tls = !options.tls_cert.empty() || !options.tls_key.empty();
  std::shared_ptr<TlsContext> tls_context;
  if (tls) {
    if (options.tls_cert.empty() || options.tls_key.empty()) {
      return Status::invalid_argument("--tls-cert and --tls-key go together");
    }
    CS_ASSIGN_OR_RETURN(tls_context, TlsContext::server(options.tls_cert, options.tls_key));
  }
  net::HttpServerOptions ho;
  // With TLS the HTTP server listens on loopback only, behind the terminator.
  ho.host = tls ? "127.0.0.1" : options.host;
  ho.port = tls ? 0 : options.port;
  if (options.max_connections < 1 || options.max_connections > kMaxHubConnections ||
      options.max_connections_per_address < 0) {
    return Status::invalid_argument("--max-connections must be in [1, " + std::to_string(kMaxHubConnections) +
                                    "] and --max-connections-per-ip 0 or positive");
  }
  ho.max_connections = options.max_connections;
  ho.max_connections_per_address = options.max_connections_per_address;
  ho.cors.origins = options.cors_origins;
  // Behind the terminator every connection comes from 127.0.0.1: the terminator caps them by the
  // real client address instead (TlsTerminatorOptions), so the server must not count them as one,
  // and it names each client in a PROXY header, so per-address limits (challenges) still see them.
  if (tls) {
    ho.max_connections_per_address = 0;
    ho.proxy_protocol = true;
  }
  ho.idle_timeout = std::chrono::seconds(120);
  // Batch uploads (POST /d/<deployment>/v1/files) go to disk, not memory, and only for a caller
  // the route would admit: anyone else's body stays within the in-memory limit and gets its 401.
  ho.spool_dir = impl->batch_files_dir;
  ho.max_spooled_body_bytes = Impl::kMaxBatchFileBytes + (1 << 20);  // the form's own bytes
  {
    Impl* self = impl.get();
    ho.spool_body = [self](const net::HttpRequest& head) { return self->spools_upload(head); };
  }
  Impl* raw = impl.get();
  CS_ASSIGN_OR_RETURN(impl->http, net::HttpServer::start(ho, [raw](const net::HttpRequest& req,
                                                                   net::ResponseWriter& w) { raw->handle(req, w); }));
  if (tls) {
    TlsTerminatorOptions to;
    to.send_proxy_header = true;
    to.max_connections = options.max_connections;
    to.max_connections_per_address = options.max_connections_per_address;
    auto terminator = TlsTerminator::start(
        options.host, options.port, tls_context, impl->http->port(), [raw](const std::string& line) { raw->log(line); },
        to);
    if (!terminator.ok()) {
      impl->http->stop();
      return terminator.status();
    }
    impl->tls = std::move(terminator).value();
  }
  impl->origins =
      HubOrigins{tls, options.host, impl->tls ? impl->tls->port() : impl->http->port(), options.public_urls};
  if (options.public_urls.empty() && (options.host == "0.0.0.0" || options.host == "::")) {
    raw->log(
        "listening on a wildcard address without --public-url: agents' tunnel signatures are bound to the port "
        "only; name the URLs agents dial with --public-url to bind them to this hub");
  }
  impl->reconcile_thread = std::thread([raw] { raw->reconcile_loop(); });
  impl->batch_thread = std::thread([raw] { raw->batch_loop(); });
  const int port = impl->tls ? impl->tls->port() : impl->http->port();
  raw->log(std::string("listening on ") + (tls ? "https://" : "http://") + options.host + ":" + std::to_string(port) +
           ", data in " + options.data_dir);
  return std::unique_ptr<Hub>(new Hub(std::move(impl)));
}

}  // namespace cellserve::fleet
