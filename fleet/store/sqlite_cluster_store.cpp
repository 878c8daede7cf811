// The statements of pg_cluster_store.cpp on SQLite. One hub owns the file, so "the database's
// clock" is this process's system clock, read once per call and bound as ?now.
#include "fleet/store/sqlite_cluster_store.h"

#include <chrono>

namespace cellserve::fleet {
namespace {

int64_t system_now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

Result<int64_t> SqliteClusterStore::heartbeat_hub(const std::string& hub_id, const std::string& peer_url) {
  std::lock_guard lock(mu_);
  const int64_t now = system_now_ms();
  CS_ASSIGN_OR_RETURN(SqliteStmt s, db_.prepare("INSERT INTO cluster_hubs (id, peer_url, started_ms, heartbeat_ms) "
                                                "VALUES (?1, ?2, ?3, ?3) ON CONFLICT (id) DO UPDATE SET peer_url = "
                                                "excluded.peer_url, heartbeat_ms = excluded.heartbeat_ms"));
  s.bind(1, hub_id).bind(2, peer_url).bind(3, now);
  CS_RETURN_IF_ERROR(s.run());
  return now;
}

Result<ClusterStore::Hubs> SqliteClusterStore::hubs() {
  std::lock_guard lock(mu_);
  Hubs out;
  out.db_now_ms = system_now_ms();
  CS_ASSIGN_OR_RETURN(SqliteStmt s, db_.prepare("SELECT h.id, h.peer_url, h.started_ms, h.heartbeat_ms, (SELECT "
                                                "count(*) FROM cluster_tunnels t WHERE t.hub_id = h.id) FROM "
                                                "cluster_hubs h ORDER BY h.started_ms, h.id"));
  CS_ASSIGN_OR_RETURN(out.hubs, read_rows<HubRecord>(s, [](const SqliteStmt& row) {
                        return HubRecord{row.text(0), row.text(1), row.i64(2), row.i64(3), row.i32(4)};
                      }));
  return out;
}

Status SqliteClusterStore::remove_hub(const std::string& hub_id) {
  std::lock_guard lock(mu_);
  SqliteTransaction tx(db_);
  CS_RETURN_IF_ERROR(tx.begin());
  for (const char* sql : {"DELETE FROM cluster_hubs WHERE id = ?1", "DELETE FROM cluster_tunnels WHERE hub_id = ?1",
                          "UPDATE cluster_leases SET holder = '', expires_ms = 0 WHERE holder = ?1",
                          "DELETE FROM api_key_holds WHERE hub_id = ?1"}) {
    CS_ASSIGN_OR_RETURN(SqliteStmt s, db_.prepare(sql));
    s.bind(1, hub_id);
    CS_RETURN_IF_ERROR(s.run());
  }
  return tx.commit();
}

Status SqliteClusterStore::record_tunnel(const std::string& processor_id, const std::string& hub_id) {
  std::lock_guard lock(mu_);
  CS_ASSIGN_OR_RETURN(SqliteStmt s, db_.prepare("INSERT INTO cluster_tunnels (processor_id, hub_id, connected_ms) "
                                                "VALUES (?1, ?2, ?3) ON CONFLICT (processor_id) DO UPDATE SET hub_id "
                                                "= excluded.hub_id, connected_ms = excluded.connected_ms"));
  s.bind(1, processor_id).bind(2, hub_id).bind(3, system_now_ms());
  return s.run();
}

Result<bool> SqliteClusterStore::drop_tunnel(const std::string& processor_id, const std::string& hub_id) {
  std::lock_guard lock(mu_);
  CS_ASSIGN_OR_RETURN(SqliteStmt s, db_.prepare("DELETE FROM cluster_tunnels WHERE processor_id = ?1 AND hub_id = ?2"));
  s.bind(1, processor_id).bind(2, hub_id);
  CS_RETURN_IF_ERROR(s.run());
  return db_.changes() == 1;
}

Result<std::vector<TunnelRecord>> SqliteClusterStore::tunnels() {
  std::lock_guard lock(mu_);
  CS_ASSIGN_OR_RETURN(SqliteStmt s, db_.prepare("SELECT processor_id, hub_id, connected_ms FROM cluster_tunnels "
                                                "ORDER BY processor_id"));
  return read_rows<TunnelRecord>(s, [](const SqliteStmt& row) {
    return TunnelRecord{row.text(0), row.text(1), row.i64(2)};
  });
}

Result<std::optional<LeaseGrant>> SqliteClusterStore::acquire_lease(const std::string& name, const std::string& hub_id,
                                                                    std::chrono::milliseconds ttl) {
  if (ttl.count() <= 0 || ttl.count() > kMaxLeaseTtlMs) {
    return Status::invalid_argument("lease ttl " + std::to_string(ttl.count()) + " ms is out of range");
  }
  if (hub_id.empty()) return Status::invalid_argument("a lease needs a holder");
  std::lock_guard lock(mu_);
  const int64_t now = system_now_ms();
  // The same single statement as on PostgreSQL: the token rises only when the holder changes.
  CS_ASSIGN_OR_RETURN(SqliteStmt s,
                      db_.prepare("INSERT INTO cluster_leases AS l (name, holder, token, expires_ms) VALUES (?1, ?2, "
                                  "1, ?3 + ?4) ON CONFLICT (name) DO UPDATE SET token = CASE WHEN l.holder = "
                                  "excluded.holder THEN l.token ELSE l.token + 1 END, holder = excluded.holder, "
                                  "expires_ms = excluded.expires_ms WHERE l.holder = excluded.holder OR l.expires_ms "
                                  "<= ?3 RETURNING token, expires_ms"));
  s.bind(1, name).bind(2, hub_id).bind(3, now).bind(4, static_cast<int64_t>(ttl.count()));
  CS_ASSIGN_OR_RETURN(const bool row, s.step());
  if (!row) return std::optional<LeaseGrant>();
  LeaseGrant grant{s.i64(0), now, s.i64(1)};
  CS_ASSIGN_OR_RETURN(const bool more, s.step());  // finishes the statement
  (void)more;
  return std::optional<LeaseGrant>(grant);
}

Status SqliteClusterStore::release_lease(const std::string& name, const std::string& hub_id) {
  std::lock_guard lock(mu_);
  CS_ASSIGN_OR_RETURN(SqliteStmt s, db_.prepare("UPDATE cluster_leases SET holder = '', expires_ms = 0 WHERE name = "
                                                "?1 AND holder = ?2"));
  s.bind(1, name).bind(2, hub_id);
  return s.run();
}

Result<std::vector<LeaseRecord>> SqliteClusterStore::leases() {
  std::lock_guard lock(mu_);
  CS_ASSIGN_OR_RETURN(SqliteStmt s, db_.prepare("SELECT name, holder, token, expires_ms FROM cluster_leases ORDER BY "
                                                "name"));
  return read_rows<LeaseRecord>(s, [](const SqliteStmt& row) {
    return LeaseRecord{row.text(0), row.text(1), row.i64(2), row.i64(3)};
  });
}

}  // namespace cellserve::fleet
