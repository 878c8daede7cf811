#include "fleet/store/sqlite_scaling_event_log.h"

namespace cellserve::fleet {

Status SqliteScalingEventLog::add(const ScalingEvent& e) {
  std::lock_guard lock(mu_);
  SqliteTransaction tx(db_);
  CS_RETURN_IF_ERROR(tx.begin());
  {
    CS_ASSIGN_OR_RETURN(SqliteStmt s, db_.prepare("SELECT 1 FROM deployments WHERE name = ?1"));
    s.bind(1, e.deployment);
    CS_ASSIGN_OR_RETURN(const bool found, s.step());
    if (!found) return Status::not_found("deployment '" + e.deployment + "' not found");
  }
  {
    CS_ASSIGN_OR_RETURN(SqliteStmt s, db_.prepare("INSERT INTO scaling_events (deployment, at_ms, action, "
                                                  "from_replicas, to_replicas, reason) VALUES (?1, ?2, ?3, ?4, ?5, "
                                                  "?6)"));
    s.bind(1, e.deployment).bind(2, e.at_ms).bind(3, e.action).bind(4, e.from_replicas).bind(5, e.to_replicas);
    s.bind(6, e.reason);
    CS_RETURN_IF_ERROR(s.run());
  }
  {
    CS_ASSIGN_OR_RETURN(SqliteStmt s, db_.prepare("DELETE FROM scaling_events WHERE deployment = ?1 AND seq <= "
                                                  "(SELECT seq FROM scaling_events WHERE deployment = ?1 ORDER BY "
                                                  "seq DESC LIMIT 1 OFFSET ?2)"));
    s.bind(1, e.deployment).bind(2, kMaxScalingEventsPerDeployment);
    CS_RETURN_IF_ERROR(s.run());
  }
  return tx.commit();
}

Result<std::vector<ScalingEvent>> SqliteScalingEventLog::latest(const std::string& deployment, int limit) {
  std::lock_guard lock(mu_);
  CS_ASSIGN_OR_RETURN(SqliteStmt s, db_.prepare("SELECT at_ms, action, from_replicas, to_replicas, reason FROM "
                                                "scaling_events WHERE deployment = ?1 ORDER BY seq DESC LIMIT ?2"));
  s.bind(1, deployment).bind(2, limit);
  std::vector<ScalingEvent> out;
  while (true) {
    CS_ASSIGN_OR_RETURN(const bool row, s.step());
    if (!row) break;
    out.push_back({deployment, s.i64(0), s.text(1), s.i32(2), s.i32(3), s.text(4)});
  }
  return out;
}

}  // namespace cellserve::fleet
