#include "fleet/store/pg_quota_store.h"

#include <algorithm>

#include "fleet/store/quota_rules.h"

namespace cellserve::fleet {

Result<QuotaCheck> PgQuotaStore::take(const std::string& key_id, const std::string& hub_id, const QuotaAsk& ask,
                                      int64_t now_ms) {
  std::lock_guard lock(mu_);
  PgTransaction tx(conn_);
  CS_RETURN_IF_ERROR(tx.begin());
  // The key's row stays locked until COMMIT: every hub counting this key waits here in turn.
  CS_ASSIGN_OR_RETURN(const PgResult key, conn_.exec("SELECT revoked, rpm, tokens_per_day, day, day_tokens FROM "
                                                     "api_keys WHERE id = $1 FOR UPDATE",
                                                     PgParams().add(key_id)));
  if (key.rows() == 0 || key.row(0).flag(0)) return QuotaCheck{};
  QuotaCounts c;
  c.rpm = key.row(0).i32(1);
  c.tokens_per_day = key.row(0).i64(2);
  c.day = key.row(0).i64(3);
  c.day_tokens = key.row(0).i64(4);
  const bool rolled = roll_quota_day(c, now_ms);
  if (c.tokens_per_day > 0) {
    CS_ASSIGN_OR_RETURN(const PgResult held, conn_.exec("SELECT coalesce(sum(tokens), 0) FROM api_key_holds WHERE "
                                                        "key_id = $1",
                                                        PgParams().add(key_id)));
    c.held = held.row(0).i64(0);
  }
  const bool windowed = c.rpm > 0 && (ask.check_rate || ask.count_request);
  if (windowed) {
    const PgParams window = PgParams().add(key_id).add(now_ms - kQuotaMinuteMs);
    CS_RETURN_IF_ERROR(conn_.exec("DELETE FROM api_key_requests WHERE key_id = $1 AND at_ms <= $2", window).status());
    CS_ASSIGN_OR_RETURN(const PgResult in_window, conn_.exec("SELECT count(*), coalesce(min(at_ms), 0) FROM "
                                                             "api_key_requests WHERE key_id = $1",
                                                             PgParams().add(key_id)));
    c.in_window = in_window.row(0).i64(0);
    c.oldest_ms = in_window.row(0).i64(1);
  }
  const QuotaCheck check = judge_quota(c, ask, now_ms);
  if (check.outcome != QuotaCheck::Outcome::Allowed) return check;  // rolled back: nothing counted
  if (ask.count_request || rolled) {
    CS_RETURN_IF_ERROR(
        conn_
            .exec("UPDATE api_keys SET requests = requests + $2, day = $3, day_tokens = $4 WHERE id = $1",
                  PgParams().add(key_id).add(int64_t{ask.count_request ? 1 : 0}).add(c.day).add(c.day_tokens))
            .status());
  }
  if (ask.count_request && windowed) {
    CS_RETURN_IF_ERROR(
        conn_.exec("INSERT INTO api_key_requests (key_id, at_ms) VALUES ($1, $2)", PgParams().add(key_id).add(now_ms))
            .status());
  }
  if (holds_tokens(c, ask)) {
    CS_RETURN_IF_ERROR(conn_
                           .exec("INSERT INTO api_key_holds (key_id, hub_id, tokens) VALUES ($1, $2, $3) ON CONFLICT "
                                 "(key_id, hub_id) DO UPDATE SET tokens = api_key_holds.tokens + excluded.tokens",
                                 PgParams().add(key_id).add(hub_id).add(ask.hold_tokens))
                           .status());
  }
  CS_RETURN_IF_ERROR(tx.commit());
  return check;
}

Status PgQuotaStore::settle(const std::string& key_id, const std::string& hub_id, int64_t held, int64_t used,
                            int64_t now_ms) {
  used = std::clamp<int64_t>(used, 0, kMaxTokensOneRequest);
  std::lock_guard lock(mu_);
  PgTransaction tx(conn_);
  CS_RETURN_IF_ERROR(tx.begin());
  CS_ASSIGN_OR_RETURN(const PgResult key, conn_.exec("SELECT tokens_per_day, day, day_tokens FROM api_keys WHERE id "
                                                     "= $1 FOR UPDATE",
                                                     PgParams().add(key_id)));
  if (key.rows() == 0) return {};
  QuotaCounts c;
  c.tokens_per_day = key.row(0).i64(0);
  c.day = key.row(0).i64(1);
  c.day_tokens = key.row(0).i64(2);
  if (c.tokens_per_day > 0 && held > 0) {
    const PgParams hold = PgParams().add(key_id).add(hub_id).add(held);
    CS_RETURN_IF_ERROR(conn_
                           .exec("UPDATE api_key_holds SET tokens = greatest(0, tokens - $3) WHERE key_id = $1 AND "
                                 "hub_id = $2",
                                 hold)
                           .status());
    CS_RETURN_IF_ERROR(conn_
                           .exec("DELETE FROM api_key_holds WHERE key_id = $1 AND hub_id = $2 AND tokens = 0",
                                 PgParams().add(key_id).add(hub_id))
                           .status());
  }
  if (used > 0) {
    roll_quota_day(c, now_ms);
    CS_RETURN_IF_ERROR(
        conn_
            .exec("UPDATE api_keys SET tokens = tokens + $2, day = $3, day_tokens = $4::bigint + $2::bigint WHERE "
                  "id = $1",
                  PgParams().add(key_id).add(used).add(c.day).add(c.day_tokens))
            .status());
  }
  return tx.commit();
}

Status PgQuotaStore::release_holds(const std::string& hub_id) {
  std::lock_guard lock(mu_);
  return conn_.exec("DELETE FROM api_key_holds WHERE hub_id = $1", PgParams().add(hub_id)).status();
}

}  // namespace cellserve::fleet
