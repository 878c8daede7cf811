// ClusterStore (cluster_store.h) on PostgreSQL, timed by the server's clock_timestamp(), for several
// hubs sharing one database. PgStore owns it and shares its connection and mutex.
#pragma once

#include <mutex>

#include "fleet/store/cluster_store.h"
#include "fleet/store/pg_connection.h"

namespace cellserve::fleet {

class PgClusterStore final : public ClusterStore {
 public:
  // `conn` is used only while `mu` is held; both outlive this object.
  PgClusterStore(std::mutex& mu, PgConnection& conn) : mu_(mu), conn_(conn) {}

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
  PgConnection& conn_;  // guarded by mu_
};

}  // namespace cellserve::fleet
