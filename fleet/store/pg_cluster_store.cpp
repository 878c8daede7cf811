// Every judgement of time is made by the server (clock_timestamp(): the time of the statement,
// not of its transaction), inside the statement that acts on it, so that hubs whose clocks differ
// agree, and a lease changes hands in one atomic INSERT ... ON CONFLICT DO UPDATE.
#include "fleet/store/pg_cluster_store.h"

namespace cellserve::fleet {
// The database's now in Unix milliseconds is (extract(epoch FROM clock_timestamp()) * 1000)::bigint.

Result<int64_t> PgClusterStore::heartbeat_hub(const std::string& hub_id, const std::string& peer_url) {
  std::lock_guard lock(mu_);
  CS_ASSIGN_OR_RETURN(const PgResult r,
                      conn_.exec("INSERT INTO cluster_hubs AS h (id, peer_url, started_ms, heartbeat_ms) SELECT $1, "
                                 "$2, n.ms, n.ms FROM (SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint "
                                 "AS ms) n ON CONFLICT (id) DO UPDATE SET peer_url = excluded.peer_url, "
                                 "heartbeat_ms = excluded.heartbeat_ms RETURNING h.heartbeat_ms",
                                 PgParams().add(hub_id).add(peer_url)));
  if (r.rows() != 1) return Status::internal("heartbeat of hub " + hub_id + " returned no row");
  return r.row(0).i64(0);
}

Result<ClusterStore::Hubs> PgClusterStore::hubs() {
  std::lock_guard lock(mu_);
  // One statement, so the list and its "now" are one snapshot; the outer join keeps the row of
  // now when there is no hub.
  CS_ASSIGN_OR_RETURN(
      const PgResult r,
      conn_.exec("SELECT n.ms, h.id, h.peer_url, h.started_ms, h.heartbeat_ms, (SELECT count(*) FROM "
                 "cluster_tunnels t WHERE t.hub_id = h.id) FROM (SELECT (extract(epoch FROM clock_timestamp()) * "
                 "1000)::bigint AS ms) n LEFT JOIN cluster_hubs h ON true ORDER BY h.started_ms, h.id"));
  Hubs out;
  for (int i = 0; i < r.rows(); ++i) {
    const PgRow row = r.row(i);
    out.db_now_ms = row.i64(0);
    if (row.text(1).empty()) continue;  // the joined row of an empty table
    out.hubs.push_back(HubRecord{row.text(1), row.text(2), row.i64(3), row.i64(4), row.i32(5)});
  }
  return out;
}

Status PgClusterStore::remove_hub(const std::string& hub_id) {
  std::lock_guard lock(mu_);
  PgTransaction tx(conn_);
  CS_RETURN_IF_ERROR(tx.begin());
  const PgParams id = PgParams().add(hub_id);
  CS_RETURN_IF_ERROR(conn_.exec("DELETE FROM cluster_hubs WHERE id = $1", id).status());
  CS_RETURN_IF_ERROR(conn_.exec("DELETE FROM cluster_tunnels WHERE hub_id = $1", id).status());
  CS_RETURN_IF_ERROR(
      conn_.exec("UPDATE cluster_leases SET holder = '', expires_ms = 0 WHERE holder = $1", id).status());
  // The tokens its requests held come back (quota_store.h).
  CS_RETURN_IF_ERROR(conn_.exec("DELETE FROM api_key_holds WHERE hub_id = $1", id).status());
  return tx.commit();
}

Status PgClusterStore::record_tunnel(const std::string& processor_id, const std::string& hub_id) {
  std::lock_guard lock(mu_);
  return conn_
      .exec(
          "INSERT INTO cluster_tunnels (processor_id, hub_id, connected_ms) VALUES ($1, $2, (extract(epoch FROM "
          "clock_timestamp()) * 1000)::bigint) ON CONFLICT (processor_id) DO UPDATE SET hub_id = excluded.hub_id, "
          "connected_ms = "
          "excluded.connected_ms",
          PgParams().add(processor_id).add(hub_id))
      .status();
}

Result<bool> PgClusterStore::drop_tunnel(const std::string& processor_id, const std::string& hub_id) {
  std::lock_guard lock(mu_);
  CS_ASSIGN_OR_RETURN(const PgResult r,
                      conn_.exec("DELETE FROM cluster_tunnels WHERE processor_id = $1 AND hub_id = $2",
                                 PgParams().add(processor_id).add(hub_id)));
  return r.changed() == 1;
}

Result<std::vector<TunnelRecord>> PgClusterStore::tunnels() {
  std::lock_guard lock(mu_);
  CS_ASSIGN_OR_RETURN(const PgResult r, conn_.exec("SELECT processor_id, hub_id, connected_ms FROM cluster_tunnels "
                                                   "ORDER BY processor_id"));
  return read_pg_rows<TunnelRecord>(r, [](const PgRow& row) {
    return TunnelRecord{row.text(0), row.text(1), row.i64(2)};
  });
}

Result<std::optional<LeaseGrant>> PgClusterStore::acquire_lease(const std::string& name, const std::string& hub_id,
                                                                std::chrono::milliseconds ttl) {
  if (ttl.count() <= 0 || ttl.count() > kMaxLeaseTtlMs) {
    return Status::invalid_argument("lease ttl " + std::to_string(ttl.count()) + " ms is out of range");
  }
  if (hub_id.empty()) return Status::invalid_argument("a lease needs a holder");
  std::lock_guard lock(mu_);
  // The conflict row is locked while its WHERE is judged: of two hubs racing, the second sees the
  // first's row. The token rises only when the holder changes.
  CS_ASSIGN_OR_RETURN(
      const PgResult r,
      conn_.exec(
          "INSERT INTO cluster_leases AS l (name, holder, token, expires_ms) SELECT $1, $2, 1, n.ms + $3::bigint "
          "FROM (SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint AS ms) n ON CONFLICT (name) DO UPDATE "
          "SET token = CASE WHEN l.holder = excluded.holder THEN "
          "l.token ELSE l.token + 1 END, holder = excluded.holder, expires_ms = excluded.expires_ms WHERE "
          "l.holder = excluded.holder OR l.expires_ms <= excluded.expires_ms - $3::bigint RETURNING l.token, "
          "l.expires_ms",
          PgParams().add(name).add(hub_id).add(static_cast<int64_t>(ttl.count()))));
  if (r.rows() == 0) return std::optional<LeaseGrant>();
  const int64_t expires = r.row(0).i64(1);
  return std::optional<LeaseGrant>(LeaseGrant{r.row(0).i64(0), expires - ttl.count(), expires});
}

Status PgClusterStore::release_lease(const std::string& name, const std::string& hub_id) {
  std::lock_guard lock(mu_);
  return conn_
      .exec("UPDATE cluster_leases SET holder = '', expires_ms = 0 WHERE name = $1 AND holder = $2",
            PgParams().add(name).add(hub_id))
      .status();
}

Result<std::vector<LeaseRecord>> PgClusterStore::leases() {
  std::lock_guard lock(mu_);
  CS_ASSIGN_OR_RETURN(const PgResult r,
                      conn_.exec("SELECT name, holder, token, expires_ms FROM cluster_leases ORDER BY name"));
  return read_pg_rows<LeaseRecord>(r, [](const PgRow& row) {
    return LeaseRecord{row.text(0), row.text(1), row.i64(2), row.i64(3)};
  });
}

}  // namespace cellserve::fleet
