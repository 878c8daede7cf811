// ClusterStore: what several hubs sharing one database record about each other (issue 46,
// docs/cluster.md): the hubs alive (a heartbeat row each), which hub holds each agent's tunnel,
// and the leases that make work run on one hub at a time (reconcile, batch finalizing).
//
// Both stores implement it (Store::cluster()): on SQLite there is one hub, and every call works
// the same, so the hub has one code path.
//
// Clocks: heartbeats and leases are timed by the database's clock (PostgreSQL: clock_timestamp();
// SQLite: the system clock), never by the caller's, so hubs whose clocks differ still agree on who
// holds a lease. Each call that judges time returns the database's "now" it used.
// Thread safety and errors: as Store (store.h): Unavailable when the database cannot be reached.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"

namespace cellserve::fleet {

// The longest lease acquire_lease() grants, on every engine.
inline constexpr int64_t kMaxLeaseTtlMs = 24LL * 60 * 60 * 1000;

struct HubRecord {
  std::string id;            // random, chosen at each start (a restarted hub is a new member)
  std::string peer_url;      // where other hubs dial it (http(s)://host:port)
  int64_t started_ms = 0;    // database clock
  int64_t heartbeat_ms = 0;  // database clock, at its last heartbeat
  int agents = 0;            // tunnels recorded as held by it (tunnels())
};

struct TunnelRecord {
  std::string processor_id;
  std::string hub_id;
  int64_t connected_ms = 0;  // database clock
};

struct LeaseRecord {
  std::string name;    // "reconcile", "batch", ...
  std::string holder;  // hub id ("" : never held)
  int64_t token = 0;   // the fencing token: raised each time the lease changes holder
  int64_t expires_ms = 0;
};

// A lease as acquire_lease() grants it.
struct LeaseGrant {
  int64_t token = 0;       // unchanged while the same hub renews it
  int64_t db_now_ms = 0;   // the database clock when granted
  int64_t expires_ms = 0;  // db_now_ms + ttl
};

class ClusterStore {
 public:
  virtual ~ClusterStore() = default;

  // Inserts or refreshes hub `hub_id`'s row (peer_url, started_ms kept from the first call,
  // heartbeat_ms = the database's now). Returns the database's now in milliseconds.
  virtual Result<int64_t> heartbeat_hub(const std::string& hub_id, const std::string& peer_url) = 0;
  // Every hub row, oldest start first, with `agents` counted from the tunnel records, and the
  // database's now (so a caller can judge which heartbeats are fresh).
  struct Hubs {
    std::vector<HubRecord> hubs;
    int64_t db_now_ms = 0;
  };
  virtual Result<Hubs> hubs() = 0;
  // Removes hub `hub_id`'s row, its tunnel records and releases its leases and the API-key tokens
  // its requests held (quota_store.h) (a clean stop, or the leader forgetting a hub silent for long).
  virtual Status remove_hub(const std::string& hub_id) = 0;

  // Records that `hub_id` holds processor `processor_id`'s tunnel now (replacing any record: the
  // agent's last dial wins).
  virtual Status record_tunnel(const std::string& processor_id, const std::string& hub_id) = 0;
  // Removes the record when it still names `hub_id`; true when it did (false: the agent has
  // dialed another hub since, which now owns its processor's state).
  virtual Result<bool> drop_tunnel(const std::string& processor_id, const std::string& hub_id) = 0;
  // Every tunnel record.
  virtual Result<std::vector<TunnelRecord>> tunnels() = 0;

  // Takes or renews lease `name` for `hub_id` for `ttl`: granted when no one holds it, `hub_id`
  // holds it, or its holder's expiry has passed (then the token is raised). nullopt when another
  // hub holds it unexpired. A holder stops acting on the lease before expires_ms by its own
  // monotonic clock (measured from before this call), so two hubs never act at once.
  virtual Result<std::optional<LeaseGrant>> acquire_lease(const std::string& name, const std::string& hub_id,
                                                          std::chrono::milliseconds ttl) = 0;
  // Gives the lease up when `hub_id` holds it (a clean stop), so another may take it at once.
  virtual Status release_lease(const std::string& name, const std::string& hub_id) = 0;
  // Every lease row.
  virtual Result<std::vector<LeaseRecord>> leases() = 0;
};

}  // namespace cellserve::fleet
