// QuotaStore: each API key's quotas counted in the database, so that every hub sharing it counts
// against one budget (issue 46; docs/postgres.md, "Cluster tables and quotas"): the requests of a
// sliding minute (rpm) and the tokens of a UTC day (tokens_per_day), used and held.
//
// A request holds its most tokens from admission to its end (fleet/hub/token_reservation.h);
// holds are recorded per hub, so that when a dead hub is removed (ClusterStore::remove_hub) the
// tokens its requests held come back. Each call is one transaction that locks the key's row:
// hubs counting at once never overshoot a quota.
//
// Times: now_ms is the calling hub's wall clock (hubs keep NTP time: a skew of s seconds moves a
// window's edge by s). Errors: as Store; Unavailable when the database cannot be reached, and the
// caller refuses the request then (never lets it through unchecked).
#pragma once

#include <cstdint>
#include <string>

#include "base/status.h"

namespace cellserve::fleet {

struct QuotaAsk {
  bool check_rate = false;     // refused when the key's last minute is full (rpm)
  bool count_request = false;  // when allowed, one request is counted (requests, and the rpm window)
  // Tokens to hold against today's quota until settle(); 0 holds none and only asks that one
  // token be left today. Ignored for a key without a token quota.
  int64_t hold_tokens = 0;
};

struct QuotaCheck {
  enum class Outcome { Allowed, Unknown, RateLimited, OutOfTokens } outcome = Outcome::Unknown;
  int64_t limit = 0;           // RateLimited: rpm; OutOfTokens: tokens per day
  int64_t left = 0;            // OutOfTokens: the tokens neither used nor held today
  int64_t retry_after_ms = 0;  // RateLimited, OutOfTokens: until there is room again
};

class QuotaStore {
 public:
  virtual ~QuotaStore() = default;

  // Judges `ask` for key `key_id` at now_ms and, when Allowed, counts it (the request, the hold
  // recorded under hub `hub_id`), atomically: nothing is counted unless Allowed. Unknown when the
  // key is absent or revoked.
  virtual Result<QuotaCheck> take(const std::string& key_id, const std::string& hub_id, const QuotaAsk& ask,
                                  int64_t now_ms) = 0;
  // A request of `key_id` on hub `hub_id` that held `held` tokens ended having used `used`: the
  // hold is released (never below zero) and the use counted on now_ms's day. A revoked key still
  // settles; an absent one is nothing to do.
  virtual Status settle(const std::string& key_id, const std::string& hub_id, int64_t held, int64_t used,
                        int64_t now_ms) = 0;
  // Releases every hold of hub `hub_id` (ClusterStore::remove_hub does it too).
  virtual Status release_holds(const std::string& hub_id) = 0;
};

}  // namespace cellserve::fleet
