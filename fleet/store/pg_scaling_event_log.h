// ScalingEventLog (scaling_event_log.h) on PostgreSQL. PgStore owns it and shares its connection
// and mutex.
#pragma once

#include <mutex>

#include "fleet/store/pg_connection.h"
#include "fleet/store/scaling_event_log.h"

namespace cellserve::fleet {

class PgScalingEventLog final : public ScalingEventLog {
 public:
  // `conn` is used only while `mu` is held; both outlive this object.
  PgScalingEventLog(std::mutex& mu, PgConnection& conn) : mu_(mu), conn_(conn) {}

  Status add(const ScalingEvent& e) override;
  Result<std::vector<ScalingEvent>> latest(const std::string& deployment, int limit) override;

 private:
  std::mutex& mu_;
  PgConnection& conn_;  // guarded by mu_
};

}  // namespace cellserve::fleet
