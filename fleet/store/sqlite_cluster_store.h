// ClusterStore (cluster_store.h) on the hub's SQLite file: one hub, the same statements as on
// PostgreSQL, timed by the system clock. SqliteStore owns it and shares its connection and mutex.
#pragma once

#include <mutex>

#include "fleet/store/cluster_store.h"
#include "fleet/store/sqlite_db.h"

namespace cellserve::fleet {

class SqliteClusterStore final : public ClusterStore {
 public:
  // `db` is used only while `mu` is held; both outlive this object.
  SqliteClusterStore(std::mutex& mu, SqliteDb& db) : mu_(mu), db_(db) {}

  Result<int64_t> heartbeat_hub(const std::string& hub_id, const std::string& peer_url) override;
  Result<Hubs> hubs() override;
  Status remove_hub(const std::string& hub_id) override;
  Status record_tunnel(const std::string& processor_id, const std::string& hub_id) override;
  Result<bool> drop_tunnel(const std::string& processor_id, const std::string& hub_id) override;
  Result<std::vector<TunnelRecord>> tunnels() override;
  Result<std::optional<LeaseGrant>> acquire_lease(const std::string& name, const std::string& hub_id,
                                                  std::chrono::milliseconds ttl) override;
  Status release_lease(const std::string& name, const std::string& hub_id) override;
  Result<std::vector<LeaseRecord>> leases() override;

 private:
  std::mutex& mu_;
  SqliteDb& db_;  // guarded by mu_
};

}  // namespace cellserve::fleet
