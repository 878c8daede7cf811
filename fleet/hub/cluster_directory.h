// HubPeers' directory and locator (hub_peers.h) read from the ClusterStore (cluster_store.h): the
// live hubs, judged by the database's clock, and which hub holds each agent's tunnel.
//
// Routing asks for the locator once per replica at every request, so the tunnel records are read
// at most once per `tunnels_every`, by one caller while the others use the last read. When the
// database cannot be read, the last good answers serve for at most `stale_limit` (counted from
// their read), then none: a hub never routes by memory for longer than that.
#pragma once

#include <chrono>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "base/clock.h"
#include "fleet/hub/hub_peers.h"
#include "fleet/store/cluster_store.h"

namespace cellserve::fleet {

struct ClusterDirectoryOptions {
  // A hub whose heartbeat is older than this (by the database's now) is not live.
  std::chrono::milliseconds live_within{5000};
  std::chrono::milliseconds tunnels_every{1000};
  std::chrono::milliseconds stale_limit{5000};
};

class ClusterDirectory {
 public:
  // `store` and `clock` must outlive this.
  ClusterDirectory(ClusterStore& store, const Clock& clock, ClusterDirectoryOptions options = {})
      : store_(store), clock_(clock), options_(options) {}

  // The live hubs with their peer URLs (HubPeers::Directory).
  std::vector<PeerHub> live_hubs();
  // The hub holding `processor_id`'s tunnel (HubPeers::Locator).
  std::optional<std::string> hub_of(const std::string& processor_id);

  HubPeers::Directory directory() {
    return [this] { return live_hubs(); };
  }
  HubPeers::Locator locator() {
    return [this](const std::string& processor_id) { return hub_of(processor_id); };
  }

 private:
  ClusterStore& store_;
  const Clock& clock_;
  const ClusterDirectoryOptions options_;

  std::mutex mu_;
  std::vector<PeerHub> hubs_;                       // guarded by mu_: the last good read
  Clock::time_point hubs_read_{};                   // guarded by mu_ (epoch: never)
  std::map<std::string, std::string> owner_;        // guarded by mu_: processor → hub, the last good read
  Clock::time_point tunnels_read_{};                // guarded by mu_ (epoch: never)
  std::optional<Clock::time_point> tunnels_tried_;  // guarded by mu_: the last attempt, good or not
  bool reading_tunnels_ = false;                    // guarded by mu_
};

}  // namespace cellserve::fleet
