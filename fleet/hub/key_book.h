// The hub's API keys in memory, with their quotas: what the request path checks for each user
// request without touching the database (the store keeps the keys and, flushed once per reconcile
// round, their usage). Quotas are counted here, at the hub, so they hold across every replica.
//
// A daily token quota cannot be overshot by requests in flight together: each request holds its
// most tokens (token_reservation.h) from admission to its end, when the hold is settled to what it
// used. Thread-safe.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "fleet/store/records.h"

namespace cellserve::fleet {

class KeyBook {
 public:
  static constexpr int kMaxRpm = 100000;  // the per-key window holds one time per request

  void load(std::vector<ApiKey> keys);
  void add(ApiKey key);
  // Marks the key revoked; false when no key has that id.
  bool revoke(const std::string& id);
  // Revokes every key of the deployment `name` (it was deleted); returns their ids.
  std::vector<std::string> revoke_deployment(const std::string& name);
  // Binds the keys of `name` stored before keys carried their deployment's creation time
  // (deployment_created_ms 0) to the deployment of that name created at `created_ms`.
  void bind_unbound(const std::string& name, int64_t created_ms);
  // Whether any key was ever created: from then on the data path needs a key.
  bool any() const;
  std::vector<ApiKey> all() const;
  // The keys whose usage or state changed since the last call (to store).
  std::vector<ApiKey> take_changed();

  struct Check {
    enum class Kind { Allowed, Unknown, OtherDeployment, RateLimited, OutOfTokens } kind = Kind::Unknown;
    std::string key_id;
    std::string deployment;  // OtherDeployment: the key's own
    int64_t limit = 0;       // RateLimited: rpm; OutOfTokens: tokens per day
    int64_t left = 0;        // OutOfTokens: the tokens not used or held today
    int retry_after_s = 0;   // RateLimited, OutOfTokens
  };
  // Checks `key` (as the client sent it) for a request to the deployment `deployment` created at
  // `created_ms` at `now_ms`; when Allowed, the request is counted against the key's per-minute
  // rate. A key of a deployment deleted and created again under the name is Unknown.
  Check admit(std::string_view key, const std::string& deployment, int64_t created_ms, int64_t now_ms);
  // Whether `key` is a live (not revoked) key for that deployment; counts nothing.
  bool opens(std::string_view key, const std::string& deployment, int64_t created_ms) const;

  // Holds `tokens` of the key's daily quota for one admitted request until settle(): Allowed, or
  // OutOfTokens when the tokens used and held today leave fewer. A key without a token quota
  // holds nothing (and is always Allowed); an unknown or revoked key is Unknown.
  Check hold(const std::string& key_id, int64_t tokens, int64_t now_ms);
  // A request that held `held` tokens ended having used `used` (0 when it failed before an
  // answer): the hold is released and the use counted, whatever day it is now.
  void settle(const std::string& key_id, int64_t held, int64_t used, int64_t now_ms);
  // A batch line of the key starts: counted against its per-minute rate like a request, and
  // `tokens` held as hold() does, in one step. Allowed, RateLimited, OutOfTokens or Unknown
  // (revoked); nothing is counted unless Allowed.
  Check admit_line(const std::string& key_id, int64_t tokens, int64_t now_ms);
  // Whether a batch line of the key could start now (live, a request left in this minute, a token
  // left today): the batch runner leases lines only then. Counts nothing.
  bool has_room(const std::string& key_id, int64_t now_ms);

  // The SHA-256 (hex) a key is stored under.
  static std::string hash_of(std::string_view key);

 private:
  struct Entry {
    ApiKey key;
    std::deque<int64_t> recent;  // times of the requests in the last minute (rpm keys only)
    int64_t held = 0;            // tokens held by the key's requests in flight
    bool changed = false;
  };
  static void roll_day(ApiKey& k, int64_t now_ms);
  // Under mu_: the rpm and token checks of admit() and admit_line(); counts nothing.
  static Check limits(Entry& e, int64_t tokens, int64_t now_ms);
  Entry* by_id(const std::string& key_id);

  mutable std::mutex mu_;
  std::map<std::string, Entry> by_hash_;
  std::map<std::string, std::string> hash_by_id_;
};

}  // namespace cellserve::fleet
