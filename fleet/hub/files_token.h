// Download tokens: what lets an agent fetch the hub's /files/ (models, adapters) from a hub that
// has an admin key, without knowing that key. A token names the processor and an expiry and is
// signed (HMAC-SHA-256) with a key the hub draws at start, so no token outlives the hub process
// (or, for hubs sharing a cluster key, with a key derived from it: for_cluster);
// agents get a current one with every assignment push. Thread-safe (immutable after construction).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace cellserve::fleet {

class FilesTokens {
 public:
  // Tokens are issued per period and valid to the end of the next one: 12 to 24 hours.
  static constexpr int64_t kPeriodSeconds = 12 * 3600;

  FilesTokens();
  // Tokens signed with a key derived from the cluster key (--cluster-key-file): every hub of a
  // cluster accepts the tokens any of them issued, so an agent downloads a model from any hub's
  // /files/, not only from the hub its tunnel is on.
  static FilesTokens for_cluster(std::string_view cluster_key);

  // The token for `processor_id` at Unix time `now_s`; equal for the whole period, so an agent's
  // assignment body changes (and is pushed again) only when the period turns.
  std::string issue(std::string_view processor_id, int64_t now_s) const;

  // The processor id when `token` was issued by this hub and has not expired at `now_s`.
  std::optional<std::string> verify(std::string_view token, int64_t now_s) const;

 private:
  explicit FilesTokens(std::string key) : key_(std::move(key)) {}
  std::string key_;
};

}  // namespace cellserve::fleet
