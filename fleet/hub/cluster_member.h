// ClusterMember: this hub as one member of the hubs sharing one store (docs/cluster.md, "How hubs
// share the work"). It chooses the hub's id at start, beats its heartbeat row, holds the
// "reconcile" lease while it can, and reads which hubs are alive and which hub holds each agent's
// tunnel. On a SQLite store it is the only member and always leads: one code path.
//
// Leadership is judged twice: the database grants the lease (its clock, a fencing token raised at
// each change of holder), and this hub stops acting on it by its own monotonic clock, measured
// from before the grant was asked for, a margin before the lease ends: two hubs never act at once.
//
// Thread safety: every member function may be called from any thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>

#include "base/clock.h"
#include "base/status.h"
#include "fleet/store/cluster_store.h"

namespace cellserve::fleet {

// A hub whose heartbeat is older than this is dead: its tunnel records are ignored. Five polls,
// and never under 5 s (a loaded database or a long pause must not end a live hub's membership).
inline constexpr std::chrono::milliseconds kMinHubSilence{5000};
std::chrono::milliseconds hub_dead_after(std::chrono::milliseconds poll_interval);
// The leader removes a dead hub's row (and its tunnel records) after this long: twelve times the
// bound above, so an operator sees a dead hub in `fleet hubs` for a while.
std::chrono::milliseconds hub_forgotten_after(std::chrono::milliseconds poll_interval);
// The reconcile lease lasts four polls (renewed each poll); its holder stops acting a quarter
// before it ends.
std::chrono::milliseconds reconcile_lease_ttl(std::chrono::milliseconds poll_interval);

inline constexpr char kReconcileLease[] = "reconcile";

class ClusterMember {
 public:
  // The id is random, 16 hex digits.
  ClusterMember(ClusterStore& store, const Clock& clock, std::chrono::milliseconds poll_interval,
                std::function<void(const std::string&)> log);

  const std::string& id() const { return id_; }
  // Where the other hubs dial this one: set once the listener's port is known, before the first
  // heartbeat.
  void set_peer_url(std::string url);
  std::string peer_url() const;

  // Beats this hub's heartbeat row.
  Status heartbeat();
  // Takes or renews the reconcile lease; true when this hub leads now. A lost lease, or one the
  // database could not be asked about, ends the leadership at once. Each change is logged with
  // the fencing token.
  bool lead();
  // Whether this hub may still act as the leader: it was granted the lease and its own deadline
  // has not passed. Checked before each write a leader makes.
  bool leading() const;
  // The lease's fencing token while leading (0 otherwise).
  int64_t token() const;

  // The hubs whose heartbeat is fresh by the database's clock (this one included once it beat),
  // and the dead ones silent past hub_forgotten_after().
  struct Members {
    std::set<std::string> alive;
    std::set<std::string> forgotten;
    std::map<std::string, std::string> peer_urls;  // of the live hubs, by id
  };
  Result<Members> members();

  // A clean stop: gives the lease up and removes this hub's row and tunnel records.
  void leave();

 private:
  void lose(const std::string& why);

  ClusterStore& store_;
  const Clock& clock_;
  const std::string id_;
  const std::chrono::milliseconds poll_interval_;
  const std::function<void(const std::string&)> log_;

  mutable std::mutex mu_;
  std::string peer_url_;          // guarded by mu_
  int64_t token_ = 0;             // guarded by mu_; 0: not leading
  Clock::time_point deadline_{};  // guarded by mu_: when this hub stops acting as leader
};

}  // namespace cellserve::fleet
