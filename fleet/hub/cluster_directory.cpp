#include "fleet/hub/cluster_directory.h"

namespace cellserve::fleet {

std::vector<PeerHub> ClusterDirectory::live_hubs() {
  Result<ClusterStore::Hubs> read = store_.hubs();
  std::lock_guard lock(mu_);
  const Clock::time_point now = clock_.now();
  if (read.ok()) {
    hubs_.clear();
    for (const HubRecord& h : read->hubs) {
      if (h.heartbeat_ms >= read->db_now_ms - options_.live_within.count()) hubs_.push_back({h.id, h.peer_url});
    }
    hubs_read_ = now;
  } else if (now - hubs_read_ > options_.stale_limit) {
    hubs_.clear();
  }
  return hubs_;
}

std::optional<std::string> ClusterDirectory::hub_of(const std::string& processor_id) {
  std::unique_lock lock(mu_);
  const Clock::time_point now = clock_.now();
  if (!reading_tunnels_ && (!tunnels_tried_ || now - *tunnels_tried_ >= options_.tunnels_every)) {
    reading_tunnels_ = true;
    tunnels_tried_ = now;
    lock.unlock();
    Result<std::vector<TunnelRecord>> read = store_.tunnels();
    lock.lock();
    reading_tunnels_ = false;
    if (read.ok()) {
      owner_.clear();
      for (const TunnelRecord& t : *read) owner_[t.processor_id] = t.hub_id;
      tunnels_read_ = now;
    }
  }
  if (clock_.now() - tunnels_read_ > options_.stale_limit) owner_.clear();
  const auto it = owner_.find(processor_id);
  return it == owner_.end() ? std::nullopt : std::optional<std::string>(it->second);
}

}  // namespace cellserve::fleet
