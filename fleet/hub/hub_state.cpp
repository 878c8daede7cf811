#include "fleet/hub/hub_state.h"

#include <algorithm>

#include "base/log_if_failed.h"
#include "fleet/tls/tls.h"

namespace cellserve::fleet {

int64_t now_ms() { return Clock::system().wall_ms(); }

void HubState::tunnel_opened(int backend_port) {
  if (TlsTerminator* front = tls_front.load()) front->mark_tunnel(backend_port);
}

void send_json(net::ResponseWriter& w, int status, const std::string& body) {
  w.send(status, "application/json", body);
}

void HubState::log(const std::string& line) const {
  if (stderr_log) {
    stderr_log->write("cellserve hub: " + line);
  } else {
    options.log(line);
  }
}

std::string replica_context(const Replica& r) { return "replica " + r.deployment + "/" + std::to_string(r.index); }

bool HubState::saved(const Status& s, std::string_view context) const {
  return log_if_failed(s, context, [this](const std::string& line) { log(line); });
}

bool HubState::refresh_registry() {
  auto deployments = store->deployments();
  auto rows = store->replicas("");
  if (!deployments.ok() || !rows.ok()) {
    log("store: " + (deployments.ok() ? rows.status() : deployments.status()).message());
    return false;
  }
  std::map<std::string, std::string> replica_keys;
  for (const Deployment& d : *deployments) replica_keys[d.spec.name] = replica_key(d.spec.name, d.created_ms);
  known = {std::move(*deployments), std::move(*rows), std::move(replica_keys)};
  registry.refresh(known.deployments, known.rows, known.replica_keys);
  registry_read_at.store(clock.now().time_since_epoch().count());
  return true;
}

const Replica* HubState::known_row(const std::string& deployment, int index) const {
  for (const Replica& r : known.rows) {
    if (r.index == index && r.deployment == deployment) return &r;
  }
  return nullptr;
}

void HubState::remember_rows(const std::string& deployment, const std::vector<Replica>& rows) {
  std::erase_if(known.rows, [&](const Replica& r) { return r.deployment == deployment; });
  known.rows.insert(known.rows.end(), rows.begin(), rows.end());
  registry.refresh(known.deployments, known.rows, known.replica_keys);
}

bool HubState::routing_fresh() const {
  const Clock::time_point read_at{Clock::duration(registry_read_at.load())};
  return clock.now() - read_at <= options.poll_interval + kMaxStaleRouting;
}

void HubState::attach_device_states(std::vector<Processor>& processors) const {
  for (Processor& p : processors) {
    const auto it = device_states.find(p.id);
    p.device = it != device_states.end() ? it->second : DeviceState{};
  }
}

void HubState::flush_key_usage() {
  for (const ApiKey& k : keys.take_changed()) {
    if (Status s = store->update_api_key(k); !s.ok()) {
      log("store: api key " + k.id + ": " + s.message());
      keys.unwritten(k.id);  // kept, and written at the next round
    }
  }
  // Keys created or revoked on other hubs sharing the store, and the usage every hub counted
  // there (KeyBook keeps what it has not written yet).
  auto stored = store->api_keys();
  if (!stored.ok()) return log("store: api keys: " + stored.status().message());
  keys.load(std::move(*stored));
}

std::string HubState::replica_key(const std::string& deployment, int64_t created_ms) const {
  // Tied to the creation time too: a deployment deleted and created again gets a new key.
  return secrets.derive("replica-key " + deployment + " " + std::to_string(created_ms));
}

void HubState::seal_env(DeploymentSpec& spec, const DeploymentSpec* old) const {
  for (auto& entry : spec.env) {
    const std::string& name = entry.first;  // named, not bound: a lambda below captures them
    std::string& value = entry.second;
    if (SecretBox::is_sealed(value)) continue;
    if (old != nullptr) {
      const auto same = std::find_if(old->env.begin(), old->env.end(), [&](const auto& kv) {
        if (kv.first != name) return false;
        auto opened = secrets.open(kv.second);
        return opened.ok() && *opened == value;
      });
      if (same != old->env.end()) {
        value = same->second;
        continue;
      }
    }
    value = secrets.seal(value);
  }
}

}  // namespace cellserve::fleet
