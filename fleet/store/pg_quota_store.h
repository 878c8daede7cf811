// QuotaStore (quota_store.h) on PostgreSQL: each call one transaction that locks the key's row
// (SELECT ... FOR UPDATE), so hubs counting the same key at once take turns. PgStore owns it and
// shares its connection and mutex.
#pragma once

#include <mutex>

#include "fleet/store/pg_connection.h"
#include "fleet/store/quota_store.h"

namespace cellserve::fleet {

class PgQuotaStore final : public QuotaStore {
 public:
  // `conn` is used only while `mu` is held; both outlive this object.
  PgQuotaStore(std::mutex& mu, PgConnection& conn) : mu_(mu), conn_(conn) {}

  Result<QuotaCheck> take(const std::string& key_id, const std::string& hub_id, const QuotaAsk& ask,
                          int64_t now_ms) override;
  Status settle(const std::string& key_id, const std::string& hub_id, int64_t held, int64_t used,
                int64_t now_ms) override;
  Status release_holds(const std::string& hub_id) override;

 private:
  std::mutex& mu_;
  PgConnection& conn_;  // guarded by mu_
};

}  // namespace cellserve::fleet
