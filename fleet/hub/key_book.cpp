#include "fleet/hub/key_book.h"

#include <algorithm>

#include "fleet/crypto/sha256.h"

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

bool KeyBook::opens(std::string_view key, const std::string& deployment, int64_t created_ms) const {
  if (key.empty() || key.size() > 256) return false;
  const std::string hash = hash_of(key);
  std::lock_guard lock(mu_);
  const auto it = by_hash_.find(hash);
  return it != by_hash_.end() && !it->second.key.revoked && it->second.key.deployment == deployment &&
         it->second.key.deployment_created_ms == created_ms;
}

std::vector<std::string> KeyBook::revoke_deployment(const std::string& name) {
  std::lock_guard lock(mu_);
  std::vector<std::string> out;
  for (auto& [hash, e] : by_hash_) {
    if (e.key.deployment != name || e.key.revoked) continue;
    e.key.revoked = true;
    e.changed = true;
    out.push_back(e.key.id);
  }
  return out;
}

void KeyBook::bind_unbound(const std::string& name, int64_t created_ms) {
  std::lock_guard lock(mu_);
  for (auto& [hash, e] : by_hash_) {
    if (e.key.deployment != name || e.key.deployment_created_ms != 0) continue;
    e.key.deployment_created_ms = created_ms;
    e.changed = true;
  }
}

KeyBook::Entry* KeyBook::by_id(const std::string& key_id) {
  const auto h = hash_by_id_.find(key_id);
  if (h == hash_by_id_.end()) return nullptr;
  Entry& e = by_hash_.at(h->second);
  return e.key.revoked ? nullptr : &e;
}

KeyBook::Check KeyBook::limits(Entry& e, int64_t tokens, int64_t now_ms) {
  Check c;
  ApiKey& k = e.key;
  c.key_id = k.id;
  roll_day(k, now_ms);
  if (k.tokens_per_day > 0) {
    const int64_t left = k.tokens_per_day - k.day_tokens - e.held;
    // Admission itself (tokens 0) needs a token left; a hold needs all it asks for.
    if (tokens == 0 ? left <= 0 : tokens > left) {
      c.kind = Check::Kind::OutOfTokens;
      c.limit = k.tokens_per_day;
      c.left = std::max<int64_t>(0, left);
      c.retry_after_s = static_cast<int>(((k.day + 1) * kDayMs - now_ms + 999) / 1000);
      return c;
    }
  }
  if (k.rpm > 0) {
    while (!e.recent.empty() && e.recent.front() <= now_ms - kMinuteMs) e.recent.pop_front();
    if (static_cast<int64_t>(e.recent.size()) >= k.rpm) {
      c.kind = Check::Kind::RateLimited;
      c.limit = k.rpm;
      c.retry_after_s = static_cast<int>(std::max<int64_t>(1, (e.recent.front() + kMinuteMs - now_ms + 999) / 1000));
      return c;
    }
  }
  c.kind = Check::Kind::Allowed;
  return c;
}

KeyBook::Check KeyBook::admit(std::string_view key, const std::string& deployment, int64_t created_ms, int64_t now_ms) {
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
  // A key of an earlier deployment under this name opens nothing (it was revoked at the delete;
  // this holds even when the delete stopped half way).
  if (k.deployment_created_ms != created_ms) return c;
  c = limits(e, 0, now_ms);
  if (c.kind != Check::Kind::Allowed) return c;
  if (k.rpm > 0) e.recent.push_back(now_ms);
  ++k.requests;
  e.changed = true;
  return c;
}

KeyBook::Check KeyBook::hold(const std::string& key_id, int64_t tokens, int64_t now_ms) {
  std::lock_guard lock(mu_);
  Entry* e = by_id(key_id);
  if (e == nullptr) return Check{};
  Check c;
  c.key_id = key_id;
  c.kind = Check::Kind::Allowed;
  if (e->key.tokens_per_day <= 0 || tokens <= 0) return c;
  roll_day(e->key, now_ms);
  const int64_t left = e->key.tokens_per_day - e->key.day_tokens - e->held;
  if (tokens > left) {
    c.kind = Check::Kind::OutOfTokens;
    c.limit = e->key.tokens_per_day;
    c.left = std::max<int64_t>(0, left);
    c.retry_after_s = static_cast<int>(((e->key.day + 1) * kDayMs - now_ms + 999) / 1000);
    return c;
  }
  e->held += tokens;
  return c;
}

void KeyBook::settle(const std::string& key_id, int64_t held, int64_t used, int64_t now_ms) {
  std::lock_guard lock(mu_);
  const auto h = hash_by_id_.find(key_id);
  if (h == hash_by_id_.end()) return;
  Entry& e = by_hash_.at(h->second);  // a key revoked meanwhile still releases and counts
  if (e.key.tokens_per_day > 0 && held > 0) e.held = std::max<int64_t>(0, e.held - held);
  if (used <= 0) return;
  roll_day(e.key, now_ms);
  e.key.tokens += used;
  e.key.day_tokens += used;
  e.changed = true;
}

KeyBook::Check KeyBook::admit_line(const std::string& key_id, int64_t tokens, int64_t now_ms) {
  std::lock_guard lock(mu_);
  Entry* e = by_id(key_id);
  if (e == nullptr) return Check{};
  Check c = limits(*e, tokens, now_ms);
  if (c.kind != Check::Kind::Allowed) return c;
  if (e->key.rpm > 0) e->recent.push_back(now_ms);
  if (e->key.tokens_per_day > 0 && tokens > 0) e->held += tokens;
  ++e->key.requests;
  e->changed = true;
  return c;
}

bool KeyBook::has_room(const std::string& key_id, int64_t now_ms) {
  std::lock_guard lock(mu_);
  Entry* e = by_id(key_id);
  return e != nullptr && limits(*e, 0, now_ms).kind == Check::Kind::Allowed;
}

}  // namespace cellserve::fleet
