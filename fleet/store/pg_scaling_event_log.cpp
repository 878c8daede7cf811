#include "fleet/store/pg_scaling_event_log.h"

namespace cellserve::fleet {

Status PgScalingEventLog::add(const ScalingEvent& e) {
  std::lock_guard lock(mu_);
  PgTransaction tx(conn_);
  CS_RETURN_IF_ERROR(tx.begin());
  // The deployment's row stays locked until COMMIT: two hubs adding at once trim in turn.
  CS_ASSIGN_OR_RETURN(const PgResult d,
                      conn_.exec("SELECT 1 FROM deployments WHERE name = $1 FOR UPDATE", PgParams().add(e.deployment)));
  if (d.rows() == 0) return Status::not_found("deployment '" + e.deployment + "' not found");
  CS_RETURN_IF_ERROR(conn_
                         .exec("INSERT INTO scaling_events (deployment, at_ms, action, from_replicas, to_replicas, "
                               "reason) VALUES ($1, $2, $3, $4, $5, $6)",
                               PgParams()
                                   .add(e.deployment)
                                   .add(e.at_ms)
                                   .add(e.action)
                                   .add(e.from_replicas)
                                   .add(e.to_replicas)
                                   .add(e.reason))
                         .status());
  CS_RETURN_IF_ERROR(conn_
                         .exec("DELETE FROM scaling_events WHERE deployment = $1 AND seq <= (SELECT seq FROM "
                               "scaling_events WHERE deployment = $1 ORDER BY seq DESC LIMIT 1 OFFSET $2)",
                               PgParams().add(e.deployment).add(kMaxScalingEventsPerDeployment))
                         .status());
  return tx.commit();
}

Result<std::vector<ScalingEvent>> PgScalingEventLog::latest(const std::string& deployment, int limit) {
  std::lock_guard lock(mu_);
  CS_ASSIGN_OR_RETURN(const PgResult r, conn_.exec("SELECT at_ms, action, from_replicas, to_replicas, reason FROM "
                                                   "scaling_events WHERE deployment = $1 ORDER BY seq DESC LIMIT $2",
                                                   PgParams().add(deployment).add(limit)));
  return read_pg_rows<ScalingEvent>(r, [&](const PgRow& row) {
    return ScalingEvent{deployment, row.i64(0), row.text(1), row.i32(2), row.i32(3), row.text(4)};
  });
}

}  // namespace cellserve::fleet
