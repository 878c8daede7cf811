// The statements of pg_quota_store.cpp on SQLite, where BEGIN IMMEDIATE takes the file's write
// lock in place of PostgreSQL's row lock.
#include "fleet/store/sqlite_quota_store.h"

#include <algorithm>

#include "fleet/store/quota_rules.h"

namespace cellserve::fleet {
namespace {

// Runs `sql` with its parameters bound by `bind`.
template <typename Bind>
Status run(SqliteDb& db, const char* sql, Bind bind) {
  CS_ASSIGN_OR_RETURN(SqliteStmt s, db.prepare(sql));
  bind(s);
  return s.run();
}

}  // namespace

Result<QuotaCheck> SqliteQuotaStore::take(const std::string& key_id, const std::string& hub_id, const QuotaAsk& ask,
                                          int64_t now_ms) {
  std::lock_guard lock(mu_);
  SqliteTransaction tx(db_);
  CS_RETURN_IF_ERROR(tx.begin());
  QuotaCounts c;
  {
    CS_ASSIGN_OR_RETURN(SqliteStmt s, db_.prepare("SELECT revoked, rpm, tokens_per_day, day, day_tokens FROM api_keys "
                                                  "WHERE id = ?1"));
    s.bind(1, key_id);
    CS_ASSIGN_OR_RETURN(const bool row, s.step());
    if (!row || s.i64(0) != 0) return QuotaCheck{};
    c.rpm = s.i32(1);
    c.tokens_per_day = s.i64(2);
    c.day = s.i64(3);
    c.day_tokens = s.i64(4);
  }
  const bool rolled = roll_quota_day(c, now_ms);
  if (c.tokens_per_day > 0) {
    CS_ASSIGN_OR_RETURN(SqliteStmt s, db_.prepare("SELECT coalesce(sum(tokens), 0) FROM api_key_holds WHERE key_id = "
                                                  "?1"));
    s.bind(1, key_id);
    CS_ASSIGN_OR_RETURN(const bool row, s.step());
    c.held = row ? s.i64(0) : 0;
  }
  const bool windowed = c.rpm > 0 && (ask.check_rate || ask.count_request);
  if (windowed) {
    CS_RETURN_IF_ERROR(run(db_, "DELETE FROM api_key_requests WHERE key_id = ?1 AND at_ms <= ?2",
                           [&](SqliteStmt& s) { s.bind(1, key_id).bind(2, now_ms - kQuotaMinuteMs); }));
    CS_ASSIGN_OR_RETURN(SqliteStmt s, db_.prepare("SELECT count(*), coalesce(min(at_ms), 0) FROM api_key_requests "
                                                  "WHERE key_id = ?1"));
    s.bind(1, key_id);
    CS_ASSIGN_OR_RETURN(const bool row, s.step());
    c.in_window = row ? s.i64(0) : 0;
    c.oldest_ms = row ? s.i64(1) : 0;
  }
  const QuotaCheck check = judge_quota(c, ask, now_ms);
  if (check.outcome != QuotaCheck::Outcome::Allowed) return check;  // rolled back: nothing counted
  if (ask.count_request || rolled) {
    CS_RETURN_IF_ERROR(
        run(db_, "UPDATE api_keys SET requests = requests + ?2, day = ?3, day_tokens = ?4 WHERE id = ?1",
            [&](SqliteStmt& s) {
              s.bind(1, key_id).bind(2, int64_t{ask.count_request ? 1 : 0}).bind(3, c.day).bind(4, c.day_tokens);
            }));
  }
  if (ask.count_request && windowed) {
    CS_RETURN_IF_ERROR(run(db_, "INSERT INTO api_key_requests (key_id, at_ms) VALUES (?1, ?2)",
                           [&](SqliteStmt& s) { s.bind(1, key_id).bind(2, now_ms); }));
  }
  if (holds_tokens(c, ask)) {
    CS_RETURN_IF_ERROR(run(db_,
                           "INSERT INTO api_key_holds (key_id, hub_id, tokens) VALUES (?1, ?2, ?3) ON CONFLICT "
                           "(key_id, hub_id) DO UPDATE SET tokens = tokens + excluded.tokens",
                           [&](SqliteStmt& s) { s.bind(1, key_id).bind(2, hub_id).bind(3, ask.hold_tokens); }));
  }
  CS_RETURN_IF_ERROR(tx.commit());
  return check;
}

Status SqliteQuotaStore::settle(const std::string& key_id, const std::string& hub_id, int64_t held, int64_t used,
                                int64_t now_ms) {
  used = std::clamp<int64_t>(used, 0, kMaxTokensOneRequest);
  std::lock_guard lock(mu_);
  SqliteTransaction tx(db_);
  CS_RETURN_IF_ERROR(tx.begin());
  QuotaCounts c;
  {
    CS_ASSIGN_OR_RETURN(SqliteStmt s, db_.prepare("SELECT tokens_per_day, day, day_tokens FROM api_keys WHERE id = "
                                                  "?1"));
    s.bind(1, key_id);
    CS_ASSIGN_OR_RETURN(const bool row, s.step());
    if (!row) return {};
    c.tokens_per_day = s.i64(0);
    c.day = s.i64(1);
    c.day_tokens = s.i64(2);
  }
  if (c.tokens_per_day > 0 && held > 0) {
    CS_RETURN_IF_ERROR(run(db_,
                           "UPDATE api_key_holds SET tokens = max(0, tokens - ?3) WHERE key_id = ?1 AND hub_id = ?2",
                           [&](SqliteStmt& s) { s.bind(1, key_id).bind(2, hub_id).bind(3, held); }));
    CS_RETURN_IF_ERROR(run(db_, "DELETE FROM api_key_holds WHERE key_id = ?1 AND hub_id = ?2 AND tokens = 0",
                           [&](SqliteStmt& s) { s.bind(1, key_id).bind(2, hub_id); }));
  }
  if (used > 0) {
    roll_quota_day(c, now_ms);
    CS_RETURN_IF_ERROR(
        run(db_, "UPDATE api_keys SET tokens = tokens + ?2, day = ?3, day_tokens = ?4 + ?2 WHERE id = ?1",
            [&](SqliteStmt& s) { s.bind(1, key_id).bind(2, used).bind(3, c.day).bind(4, c.day_tokens); }));
  }
  return tx.commit();
}

Status SqliteQuotaStore::release_holds(const std::string& hub_id) {
  std::lock_guard lock(mu_);
  return run(db_, "DELETE FROM api_key_holds WHERE hub_id = ?1", [&](SqliteStmt& s) { s.bind(1, hub_id); });
}

}  // namespace cellserve::fleet
