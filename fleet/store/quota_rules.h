// The quota decisions both QuotaStore engines make (quota_store.h), apart from the SQL that reads
// and writes the counts: a pure function of one key's row and counts, so both engines judge alike.
#pragma once

#include <cstdint>

#include "fleet/store/quota_store.h"

namespace cellserve::fleet {

// A use larger than any request could make (a device reports it): bounded so sums never overflow.
inline constexpr int64_t kMaxTokensOneRequest = int64_t{1} << 40;
inline constexpr int64_t kQuotaDayMs = 24LL * 3600 * 1000;
inline constexpr int64_t kQuotaMinuteMs = 60 * 1000;

// What the store holds for one key when a call locks its row.
struct QuotaCounts {
  int rpm = 0;
  int64_t tokens_per_day = 0;
  int64_t day = 0;         // the UTC day day_tokens counts
  int64_t day_tokens = 0;  // tokens used on `day`
  int64_t held = 0;        // tokens held by requests in flight, on every hub
  int64_t in_window = 0;   // requests in the minute before now (when the rate is checked)
  int64_t oldest_ms = 0;   // the oldest of them
};

// The UTC day of now_ms.
inline int64_t quota_day(int64_t now_ms) { return now_ms / kQuotaDayMs; }

// Moves `c` to now_ms's day (a new day starts with no tokens used); true when it changed.
bool roll_quota_day(QuotaCounts& c, int64_t now_ms);

// Whether `ask` fits in `c` (rolled to now_ms's day) at now_ms: Allowed, OutOfTokens or
// RateLimited (the token quota is judged first).
QuotaCheck judge_quota(const QuotaCounts& c, const QuotaAsk& ask, int64_t now_ms);

// Whether the call holds tokens: the key has a token quota and the ask names some.
inline bool holds_tokens(const QuotaCounts& c, const QuotaAsk& ask) {
  return c.tokens_per_day > 0 && ask.hold_tokens > 0;
}

}  // namespace cellserve::fleet
