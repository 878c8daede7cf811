// QuotaStore (quota_store.h) on SQLite: each call one write transaction (BEGIN IMMEDIATE), so
// writers of the file take turns. SqliteStore owns it and shares its connection and mutex.
#pragma once

#include <mutex>

#include "fleet/store/quota_store.h"
#include "fleet/store/sqlite_db.h"

namespace cellserve::fleet {

class SqliteQuotaStore final : public QuotaStore {
 public:
  // `db` is used only while `mu` is held; both outlive this object.
  SqliteQuotaStore(std::mutex& mu, SqliteDb& db) : mu_(mu), db_(db) {}

  Result<QuotaCheck> take(const std::string& key_id, const std::string& hub_id, const QuotaAsk& ask,
                          int64_t now_ms) override;
  Status settle(const std::string& key_id, const std::string& hub_id, int64_t held, int64_t used,
                int64_t now_ms) override;
  Status release_holds(const std::string& hub_id) override;

 private:
  std::mutex& mu_;
  SqliteDb& db_;  // guarded by mu_
};

}  // namespace cellserve::fleet
