#include "fleet/hub/key_book.h"

#include "fleet/download/sha256.h"

namespace cellserve::fleet {
namespace {

constexpr int64_t kDayMs = 24LL * 3600 * 1000;
constexpr int64_t kMinuteMs = 60 * 1000;

}  // namespace

std::string KeyBook::hash_of(std::string_view key) { return sha256_hex(key); }

void KeyBook::load(std::vector<ApiKey> keys) {
  std::lock_guard lock(mu_);
  by_hash_.clear();
  hash_by_id_.clear();
  for (ApiKey& k : keys) {
    hash_by_id_[k.id] = k.hash;
    by_hash_[k.hash].key = std::move(k);
  }
}

void KeyBook::add(ApiKey key) {
  std::lock_guard lock(mu_);
  hash_by_id_[key.id] = key.hash;
  by_hash_[key.hash].key = std::move(key);
}

bool KeyBook::revoke(const std::string& id) {
  std::lock_guard lock(mu_);
  const auto h = hash_by_id_.find(id);
  if (h == hash_by_id_.end()) return false;
  Entry& e = by_hash_.at(h->second);
  e.key.revoked = true;
  e.changed = true;
  return true;
}

bool KeyBook::any() const {
  std::lock_guard lock(mu_);
  return !by_hash_.empty();
}

std::vector<ApiKey> KeyBook::all() const {
  std::lock_guard lock(mu_);
  std::vector<ApiKey> out;
  for (const auto& [hash, e] : by_hash_) out.push_back(e.key);
  return out;
}

std::vector<ApiKey> KeyBook::take_changed() {
  std::lock_guard lock(mu_);
  std::vector<ApiKey> out;
  for (auto& [hash, e] : by_hash_) {
    if (!e.changed) continue;
    out.push_back(e.key);
    e.changed = false;
  }
  return out;
}

void KeyBook::roll_day(ApiKey& k, int64_t now_ms) {
  const int64_t day = now_ms / kDayMs;
  if (k.day != day) {
    k.day = day;
    k.day_tokens = 0;
  }
}

bool KeyBook::opens(std::string_view key, const std::string& deployment) const {
  if (key.empty() || key.size() > 256) return false;
  const std::string hash = hash_of(key);
  std::lock_guard lock(mu_);
  const auto it = by_hash_.find(hash);
  return it != by_hash_.end() && !it->second.key.revoked && it->second.key.deployment == deployment;
}

KeyBook::Check KeyBook::admit(std::string_view key, const std::string& deployment, int64_t now_ms) {
  Check c;
  if (key.empty() || key.size() > 256) return c;
  const std::string hash = hash_of(key);  // lookup by hash: the map never compares secrets
  std::lock_guard lock(mu_);
  const auto it = by_hash_.find(hash);
  if (it == by_hash_.end() || it->second.key.revoked) return c;
  Entry& e = it->second;
  ApiKey& k = e.key;
  c.key_id = k.id;
  if (k.deployment != deployment) {
    c.kind = Check::Kind::OtherDeployment;
    c.deployment = k.deployment;
    return c;
  }
  roll_day(k, now_ms);
  if (k.tokens_per_day > 0 && k.day_tokens >= k.tokens_per_day) {
    c.kind = Check::Kind::OutOfTokens;
    c.limit = k.tokens_per_day;
    c.retry_after_s = static_cast<int>(((k.day + 1) * kDayMs - now_ms + 999) / 1000);
    return c;
  }
  if (k.rpm > 0) {
    while (!e.recent.empty() && e.recent.front() <= now_ms - kMinuteMs) e.recent.pop_front();
    if (static_cast<int64_t>(e.recent.size()) >= k.rpm) {
      c.kind = Check::Kind::RateLimited;
      c.limit = k.rpm;
      c.retry_after_s = static_cast<int>(std::max<int64_t>(1, (e.recent.front() + kMinuteMs - now_ms + 999) / 1000));
      return c;
    }
    e.recent.push_back(now_ms);
  }
  ++k.requests;
  e.changed = true;
  c.kind = Check::Kind::Allowed;
  return c;
}

bool KeyBook::has_tokens(const std::string& key_id, int64_t now_ms) {
  std::lock_guard lock(mu_);
  const auto h = hash_by_id_.find(key_id);
  if (h == hash_by_id_.end()) return false;
  ApiKey& k = by_hash_.at(h->second).key;
  if (k.revoked) return false;
  roll_day(k, now_ms);
  return k.tokens_per_day <= 0 || k.day_tokens < k.tokens_per_day;
}

void KeyBook::add_tokens(const std::string& key_id, int64_t tokens, int64_t now_ms) {
  if (tokens <= 0) return;
  std::lock_guard lock(mu_);
  const auto h = hash_by_id_.find(key_id);
  if (h == hash_by_id_.end()) return;
  Entry& e = by_hash_.at(h->second);
  roll_day(e.key, now_ms);
  e.key.tokens += tokens;
  e.key.day_tokens += tokens;
  e.changed = true;
}

}  // namespace cellserve::fleet
