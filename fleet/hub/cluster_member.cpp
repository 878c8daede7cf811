#include "fleet/hub/cluster_member.h"

#include <algorithm>
#include <utility>

#include "fleet/crypto/identity.h"

namespace cellserve::fleet {

std::chrono::milliseconds hub_dead_after(std::chrono::milliseconds poll_interval) {
  return std::max(5 * poll_interval, kMinHubSilence);
}

std::chrono::milliseconds hub_forgotten_after(std::chrono::milliseconds poll_interval) {
  return 12 * hub_dead_after(poll_interval);
}

std::chrono::milliseconds reconcile_lease_ttl(std::chrono::milliseconds poll_interval) { return 4 * poll_interval; }

ClusterMember::ClusterMember(ClusterStore& store, const Clock& clock, std::chrono::milliseconds poll_interval,
                             std::function<void(const std::string&)> log)
    : store_(store), clock_(clock), id_(random_hex(8)), poll_interval_(poll_interval), log_(std::move(log)) {}

void ClusterMember::set_peer_url(std::string url) {
  std::lock_guard lock(mu_);
  peer_url_ = std::move(url);
}

std::string ClusterMember::peer_url() const {
  std::lock_guard lock(mu_);
  return peer_url_;
}

Status ClusterMember::heartbeat() { return store_.heartbeat_hub(id_, peer_url()).status(); }

bool ClusterMember::lead() {
  const std::chrono::milliseconds ttl = reconcile_lease_ttl(poll_interval_);
  // The deadline counts from before the request: however long the database took to answer, the
  // lease it granted lasts at least until then.
  const Clock::time_point asked = clock_.now();
  auto grant = store_.acquire_lease(kReconcileLease, id_, ttl);
  if (!grant.ok()) {
    lose("the store did not answer: " + grant.status().message());
    return false;
  }
  if (!grant->has_value()) {
    lose("another hub holds the lease");
    return false;
  }
  const int64_t token = (*grant)->token;
  bool changed = false;
  {
    std::lock_guard lock(mu_);
    changed = token_ != token;
    token_ = token;
    deadline_ = asked + ttl - ttl / 4;
  }
  if (changed) log_("hub " + id_ + " leads the fleet (reconcile lease, token " + std::to_string(token) + ")");
  return leading();
}

bool ClusterMember::leading() const {
  std::lock_guard lock(mu_);
  return token_ != 0 && clock_.now() < deadline_;
}

int64_t ClusterMember::token() const {
  std::lock_guard lock(mu_);
  return token_;
}

void ClusterMember::lose(const std::string& why) {
  int64_t was = 0;
  {
    std::lock_guard lock(mu_);
    was = token_;
    token_ = 0;
    deadline_ = {};
  }
  if (was != 0) log_("hub " + id_ + " no longer leads (token " + std::to_string(was) + "): " + why);
}

Result<ClusterMember::Members> ClusterMember::members() {
  CS_ASSIGN_OR_RETURN(ClusterStore::Hubs hubs, store_.hubs());
  const int64_t dead_ms = hub_dead_after(poll_interval_).count();
  const int64_t forgotten_ms = hub_forgotten_after(poll_interval_).count();
  Members out;
  for (const HubRecord& h : hubs.hubs) {
    const int64_t silent = hubs.db_now_ms - h.heartbeat_ms;
    if (silent <= dead_ms) {
      out.alive.insert(h.id);
      out.peer_urls[h.id] = h.peer_url;
    } else if (silent > forgotten_ms) {
      out.forgotten.insert(h.id);
    }
  }
  return out;
}

void ClusterMember::leave() {
  lose("the hub stops");
  if (Status s = store_.release_lease(kReconcileLease, id_); !s.ok()) log_("store: release the lease: " + s.message());
  if (Status s = store_.remove_hub(id_); !s.ok()) log_("store: remove hub " + id_ + ": " + s.message());
}

}  // namespace cellserve::fleet
