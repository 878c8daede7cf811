// The hub's API keys in memory, with their quotas: what the request path checks for each user
// request without touching the database (the store keeps the keys and, flushed once per reconcile
// round, their usage). Quotas are counted here, at the hub, so they hold across every replica.
// Thread-safe.
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
    int retry_after_s = 0;   // RateLimited, OutOfTokens
  };
  // Checks `key` (as the client sent it) for a request to `deployment` at `now_ms`; when
  // Allowed, the request is counted against the key's per-minute rate.
  Check admit(std::string_view key, const std::string& deployment, int64_t now_ms);
  // Whether `key` is a live (not revoked) key for `deployment`; counts nothing.
  bool opens(std::string_view key, const std::string& deployment) const;
  // Whether the key `key_id` may still use tokens today (not revoked, under its daily quota): a
  // batch leases its next line only then. Counts nothing.
  bool has_tokens(const std::string& key_id, int64_t now_ms);
  // Adds the tokens a request used to its key's daily count.
  void add_tokens(const std::string& key_id, int64_t tokens, int64_t now_ms);

  // The SHA-256 (hex) a key is stored under.
  static std::string hash_of(std::string_view key);

 private:
  struct Entry {
    ApiKey key;
    std::deque<int64_t> recent;  // times of the requests in the last minute (rpm keys only)
    bool changed = false;
  };
  static void roll_day(ApiKey& k, int64_t now_ms);

  mutable std::mutex mu_;
  std::map<std::string, Entry> by_hash_;
  std::map<std::string, std::string> hash_by_id_;
};

}  // namespace cellserve::fleet
