#include "fleet/hub/key_book.h"

#include <algorithm>

#include "fleet/crypto/sha256.h"

namespace cellserve::fleet {
namespace {

constexpr size_t kMaxKeyBytes = 256;

KeyBook::Check from_store(const std::string& key_id, const QuotaCheck& q) {
  using Kind = KeyBook::Check::Kind;
  KeyBook::Check c;
  c.key_id = key_id;
  c.limit = q.limit;
  c.left = q.left;
  switch (q.outcome) {
    case QuotaCheck::Outcome::Allowed:
      c.kind = Kind::Allowed;
      break;
    case QuotaCheck::Outcome::Unknown:
      c.kind = Kind::Unknown;  // revoked or removed on another hub
      break;
    case QuotaCheck::Outcome::OutOfTokens:
      c.kind = Kind::OutOfTokens;
      c.retry_after_s = static_cast<int>((std::max<int64_t>(0, q.retry_after_ms) + 999) / 1000);
      break;
    case QuotaCheck::Outcome::RateLimited:
      c.kind = Kind::RateLimited;
      c.retry_after_s = static_cast<int>(std::max<int64_t>(1, (q.retry_after_ms + 999) / 1000));
      break;
  }
  return c;
}

}  // namespace

std::string KeyBook::hash_of(std::string_view key) { return sha256_hex(key); }

void KeyBook::count_in(QuotaStore& quotas, std::string hub_id) {
  std::lock_guard lock(mu_);
  quotas_ = &quotas;
  hub_id_ = std::move(hub_id);
}

void KeyBook::load(std::vector<ApiKey> keys) {
  std::lock_guard lock(mu_);
  std::map<std::string, Entry> unwritten;
  for (auto& [hash, e] : by_hash_) {
    if (e.changed) unwritten.emplace(hash, std::move(e));
  }
  by_hash_.clear();
  hash_by_id_.clear();
  for (ApiKey& k : keys) {
    hash_by_id_[k.id] = k.hash;
    Entry& e = by_hash_[k.hash];
    e.key = std::move(k);
    // The store's row and usage, with this hub's changes not yet written on top.
    if (const auto mine = unwritten.find(e.key.hash); mine != unwritten.end()) {
      e.key.revoked = e.key.revoked || mine->second.key.revoked;
      e.key.deployment_created_ms = mine->second.key.deployment_created_ms;
      e.changed = true;
      unwritten.erase(mine);
    }
  }
  for (auto& [hash, e] : unwritten) {  // not in the store (yet): kept as they are
    hash_by_id_[e.key.id] = hash;
    by_hash_[hash] = std::move(e);
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

void KeyBook::unwritten(const std::string& id) {
  std::lock_guard lock(mu_);
  const auto h = hash_by_id_.find(id);
  if (h != hash_by_id_.end()) by_hash_.at(h->second).changed = true;
}

void KeyBook::reload_on_miss(Reload reload, std::chrono::milliseconds min_interval) {
  reload_ = std::move(reload);
  reload_interval_ = min_interval;
}

bool KeyBook::reloaded_for_miss(const std::string& hash) {
  if (!reload_) return false;
  std::lock_guard reload_lock(reload_mu_);
  {
    std::lock_guard lock(mu_);
    if (by_hash_.contains(hash)) return true;  // a reload beside this one brought it
  }
  const auto now = std::chrono::steady_clock::now();
  if (last_reload_ != std::chrono::steady_clock::time_point{} && now - last_reload_ < reload_interval_) return false;
  last_reload_ = now;
  auto keys = reload_();
  if (!keys.ok()) return false;  // the quota check that follows a hit reports the store's state
  load(std::move(keys).value());
  std::lock_guard lock(mu_);
  return by_hash_.contains(hash);
}

bool KeyBook::opens(std::string_view key, const std::string& deployment, int64_t created_ms) {
  if (key.empty() || key.size() > kMaxKeyBytes) return false;
  const std::string hash = hash_of(key);
  bool known = false;
  {
    std::lock_guard lock(mu_);
    known = by_hash_.contains(hash);
  }
  if (!known && !reloaded_for_miss(hash)) return false;
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

KeyBook::Check KeyBook::ask_store(const std::string& key_id, const QuotaAsk& ask, int64_t now_ms) {
  QuotaStore* quotas = nullptr;
  std::string hub_id;
  {
    std::lock_guard lock(mu_);
    quotas = quotas_;
    hub_id = hub_id_;
  }
  Check c;
  c.key_id = key_id;
  if (quotas == nullptr) {
    c.kind = Check::Kind::Unavailable;
    c.error = "the key book counts in no store";
    return c;
  }
  const Result<QuotaCheck> q = quotas->take(key_id, hub_id, ask, now_ms);
  if (!q.ok()) {
    c.kind = Check::Kind::Unavailable;
    c.error = q.status().message();
    return c;
  }
  return from_store(key_id, *q);
}

KeyBook::Check KeyBook::admit(std::string_view key, const std::string& deployment, int64_t created_ms, int64_t now_ms) {
  Check c;
  if (key.empty() || key.size() > kMaxKeyBytes) return c;
  const std::string hash = hash_of(key);  // lookup by hash: the map never compares secrets
  bool known = false;
  {
    std::lock_guard lock(mu_);
    known = by_hash_.contains(hash);
  }
  if (!known && !reloaded_for_miss(hash)) return c;
  {
    std::lock_guard lock(mu_);
    const auto it = by_hash_.find(hash);
    if (it == by_hash_.end() || it->second.key.revoked) return c;
    const ApiKey& k = it->second.key;
    c.key_id = k.id;
    if (k.deployment != deployment) {
      c.kind = Check::Kind::OtherDeployment;
      c.deployment = k.deployment;
      return c;
    }
    // A key of an earlier deployment under this name opens nothing (it was revoked at the delete;
    // this holds even when the delete stopped half way).
    if (k.deployment_created_ms != created_ms) return c;
  }
  return ask_store(c.key_id, QuotaAsk{.check_rate = true, .count_request = true, .hold_tokens = 0}, now_ms);
}

KeyBook::Check KeyBook::hold(const std::string& key_id, int64_t tokens, int64_t now_ms) {
  {
    std::lock_guard lock(mu_);
    const Entry* e = by_id(key_id);
    if (e == nullptr) return Check{};
    // A key's quotas never change: one without a token quota holds nothing, and asks no one.
    if (e->key.tokens_per_day <= 0 || tokens <= 0) {
      Check c;
      c.key_id = key_id;
      c.kind = Check::Kind::Allowed;
      return c;
    }
  }
  return ask_store(key_id, QuotaAsk{.check_rate = false, .count_request = false, .hold_tokens = tokens}, now_ms);
}

Status KeyBook::settle(const std::string& key_id, int64_t held, int64_t used, int64_t now_ms) {
  QuotaStore* quotas = nullptr;
  std::string hub_id;
  {
    std::lock_guard lock(mu_);
    if (hash_by_id_.find(key_id) == hash_by_id_.end()) return {};  // a key revoked meanwhile still settles
    quotas = quotas_;
    hub_id = hub_id_;
  }
  if (quotas == nullptr) return Status::unavailable("the key book counts in no store");
  return quotas->settle(key_id, hub_id, held, used, now_ms);
}

KeyBook::Check KeyBook::admit_line(const std::string& key_id, int64_t tokens, int64_t now_ms) {
  {
    std::lock_guard lock(mu_);
    if (by_id(key_id) == nullptr) return Check{};
  }
  return ask_store(key_id, QuotaAsk{.check_rate = true, .count_request = true, .hold_tokens = tokens}, now_ms);
}

bool KeyBook::has_room(const std::string& key_id, int64_t now_ms) {
  {
    std::lock_guard lock(mu_);
    if (by_id(key_id) == nullptr) return false;
  }
  return ask_store(key_id, QuotaAsk{.check_rate = true, .count_request = false, .hold_tokens = 0}, now_ms).kind ==
         Check::Kind::Allowed;
}

}  // namespace cellserve::fleet
