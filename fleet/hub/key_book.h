// The hub's API keys, looked up in memory, with their quotas counted in the store: several hubs
// sharing one database count one budget per key (fleet/store/quota_store.h, issue 46), and a
// single hub counts the same way on its SQLite file.
//
// The keys themselves (hash, deployment, quotas, revocation) are a copy of the store's: the hub
// re-loads them each reconcile round (HubState::flush_key_usage), so keys created or revoked on
// another hub take effect here within a round; a revocation made here is written at once and
// kept until it is. The usage shown by all() is the store's as of that load.
//
// A daily token quota cannot be overshot by requests in flight together, on this hub or any: each
// request holds its most tokens (token_reservation.h) from admission to its end, when the hold is
// settled to what it used. A check the store cannot answer is Unavailable (the caller answers 503,
// never lets the request through). Thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "fleet/store/quota_store.h"
#include "fleet/store/records.h"

namespace cellserve::fleet {

class KeyBook {
 public:
  static constexpr int kMaxRpm = 100000;  // the per-key window holds one time per request

  // Counts every quota in `quotas` (the hub's store; it outlives the book), holding tokens under
  // `hub_id` (ClusterStore's id for this hub, so that removing the hub releases its holds). Until
  // then every quota check is Unavailable.
  void count_in(QuotaStore& quotas, std::string hub_id);

  // Replaces the keys with the store's; a key changed here and not yet written (take_changed)
  // keeps its state.
  void load(std::vector<ApiKey> keys);
  // A key this book does not know may have been created on another hub a moment ago: admit() and
  // opens() then load the store's keys through `reload` and look again, at most once per
  // `min_interval` (an unknown key costs a client nothing to send, so it may not cost the store a
  // read per request).
  using Reload = std::function<Result<std::vector<ApiKey>>()>;
  void reload_on_miss(Reload reload, std::chrono::milliseconds min_interval);
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
  // The keys whose revocation or deployment binding changed since the last call (to store:
  // Store::update_api_key); a key whose write failed is given back with unwritten().
  std::vector<ApiKey> take_changed();
  void unwritten(const std::string& id);

  struct Check {
    enum class Kind { Allowed, Unknown, OtherDeployment, RateLimited, OutOfTokens, Unavailable } kind = Kind::Unknown;
    std::string key_id;
    std::string deployment;  // OtherDeployment: the key's own
    int64_t limit = 0;       // RateLimited: rpm; OutOfTokens: tokens per day
    int64_t left = 0;        // OutOfTokens: the tokens not used or held today
    int retry_after_s = 0;   // RateLimited, OutOfTokens
    std::string error;       // Unavailable: why the store could not count (for the log)
  };
  // Checks `key` (as the client sent it) for a request to the deployment `deployment` created at
  // `created_ms` at `now_ms`; when Allowed, the request is counted against the key's per-minute
  // rate. A key of a deployment deleted and created again under the name is Unknown.
  Check admit(std::string_view key, const std::string& deployment, int64_t created_ms, int64_t now_ms);
  // Whether `key` is a live (not revoked) key for that deployment; counts nothing.
  bool opens(std::string_view key, const std::string& deployment, int64_t created_ms);

  // Holds `tokens` of the key's daily quota for one admitted request until settle(): Allowed, or
  // OutOfTokens when the tokens used and held today leave fewer. A key without a token quota
  // holds nothing (and is always Allowed); an unknown or revoked key is Unknown.
  Check hold(const std::string& key_id, int64_t tokens, int64_t now_ms);
  // A request that held `held` tokens ended having used `used` (0 when it failed before an
  // answer): the hold is released and the use counted, whatever day it is now. The store's error
  // when it could not (the hold then stays until this hub is removed from the cluster).
  Status settle(const std::string& key_id, int64_t held, int64_t used, int64_t now_ms);
  // A batch line of the key starts: counted against its per-minute rate like a request, and
  // `tokens` held as hold() does, in one step. Allowed, RateLimited, OutOfTokens or Unknown
  // (revoked); nothing is counted unless Allowed.
  Check admit_line(const std::string& key_id, int64_t tokens, int64_t now_ms);
  // Whether a batch line of the key could start now (live, a request left in this minute, a token
  // left today): the batch runner leases lines only then. Counts nothing; false when the store
  // cannot tell.
  bool has_room(const std::string& key_id, int64_t now_ms);

  // The SHA-256 (hex) a key is stored under.
  static std::string hash_of(std::string_view key);

 private:
  struct Entry {
    ApiKey key;
    bool changed = false;  // revoked or bound here, not yet written to the store
  };
  // Under mu_: the live entry of `key_id`, or nullptr (absent or revoked).
  Entry* by_id(const std::string& key_id);
  // Whether a lookup of `hash` that missed may look again: reloads the keys (outside mu_) when
  // reload_on_miss allows one now.
  bool reloaded_for_miss(const std::string& hash);
  // Asks the store (outside mu_: other requests go on meanwhile).
  Check ask_store(const std::string& key_id, const QuotaAsk& ask, int64_t now_ms);

  mutable std::mutex mu_;
  std::map<std::string, Entry> by_hash_;
  std::map<std::string, std::string> hash_by_id_;
  QuotaStore* quotas_ = nullptr;  // guarded by mu_; set once by count_in
  std::string hub_id_;            // guarded by mu_
  Reload reload_;                 // set once at start, before requests
  std::chrono::milliseconds reload_interval_{0};
  std::mutex reload_mu_;  // taken before mu_, never the other way: serializes the reloads on a miss
  std::chrono::steady_clock::time_point last_reload_{};  // guarded by reload_mu_
};

}  // namespace cellserve::fleet
