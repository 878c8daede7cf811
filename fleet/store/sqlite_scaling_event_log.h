// ScalingEventLog (scaling_event_log.h) on SQLite. SqliteStore owns it and shares its connection
// and mutex.
#pragma once

#include <mutex>

#include "fleet/store/scaling_event_log.h"
#include "fleet/store/sqlite_db.h"

namespace cellserve::fleet {

class SqliteScalingEventLog final : public ScalingEventLog {
 public:
  // `db` is used only while `mu` is held; both outlive this object.
  SqliteScalingEventLog(std::mutex& mu, SqliteDb& db) : mu_(mu), db_(db) {}

  Status add(const ScalingEvent& e) override;
  Result<std::vector<ScalingEvent>> latest(const std::string& deployment, int limit) override;

 private:
  std::mutex& mu_;
  SqliteDb& db_;  // guarded by mu_
};

}  // namespace cellserve::fleet
