#include "fleet/store/quota_rules.h"

#include <algorithm>

namespace cellserve::fleet {

bool roll_quota_day(QuotaCounts& c, int64_t now_ms) {
  const int64_t day = quota_day(now_ms);
  if (c.day == day) return false;
  c.day = day;
  c.day_tokens = 0;
  return true;
}

QuotaCheck judge_quota(const QuotaCounts& c, const QuotaAsk& ask, int64_t now_ms) {
  QuotaCheck out;
  if (c.tokens_per_day > 0) {
    const int64_t left = c.tokens_per_day - c.day_tokens - c.held;
    // Admission alone (no hold) needs a token left; a hold needs all it asks for.
    if (ask.hold_tokens <= 0 ? left <= 0 : ask.hold_tokens > left) {
      out.outcome = QuotaCheck::Outcome::OutOfTokens;
      out.limit = c.tokens_per_day;
      out.left = std::max<int64_t>(0, left);
      out.retry_after_ms = (c.day + 1) * kQuotaDayMs - now_ms;
      return out;
    }
  }
  if (ask.check_rate && c.rpm > 0 && c.in_window >= c.rpm) {
    out.outcome = QuotaCheck::Outcome::RateLimited;
    out.limit = c.rpm;
    out.retry_after_ms = c.oldest_ms + kQuotaMinuteMs - now_ms;
    return out;
  }
  out.outcome = QuotaCheck::Outcome::Allowed;
  return out;
}

}  // namespace cellserve::fleet
