#include "engine/tokenizer/lookup_tables.h"

#include <functional>

namespace cellserve::engine::tokenizer {
namespace {

// Smallest power of two with n <= 2/3 of it (at least 16).
uint64_t capacity_for(size_t n) {
  uint64_t cap = 16;
  while (cap * 2 < n * 3) cap *= 2;
  return cap;
}

uint64_t hash_text(std::string_view s) { return std::hash<std::string_view>{}(s); }

// Spreads an id pair over the table (Fibonacci hashing of the 64-bit key).
uint64_t hash_key(uint64_t key) { return (key * 0x9E3779B97F4A7C15ull) ^ (key >> 29); }

}  // namespace

bool TextIndex::build(const TokenData* tokens, size_t n, int32_t* duplicate) {
  tokens_ = tokens;
  const uint64_t cap = capacity_for(n);
  slots_.assign(cap, Slot{});
  mask_ = cap - 1;
  for (size_t i = 0; i < n; ++i) {
    const std::string& text = tokens[i].text;
    const uint64_t h = hash_text(text);
    for (uint64_t pos = h & mask_;; pos = (pos + 1) & mask_) {
      Slot& slot = slots_[pos];
      if (slot.id < 0) {
        slot = Slot{static_cast<uint32_t>(h), static_cast<int32_t>(i)};
        break;
      }
      if (slot.hash == static_cast<uint32_t>(h) && tokens[slot.id].text == text) {
        *duplicate = static_cast<int32_t>(i);
        slots_.clear();
        return false;
      }
    }
  }
  return true;
}

int32_t TextIndex::find(std::string_view text) const {
  if (slots_.empty()) return -1;
  const uint64_t h = hash_text(text);
  for (uint64_t pos = h & mask_;; pos = (pos + 1) & mask_) {
    const Slot& slot = slots_[pos];
    if (slot.id < 0) return -1;
    if (slot.hash == static_cast<uint32_t>(h) && tokens_[slot.id].text == text) return slot.id;
  }
}

void MergeTable::reserve(size_t n) {
  const uint64_t cap = capacity_for(n);
  slots_.assign(cap, Slot{});
  mask_ = cap - 1;
  size_ = 0;
}

bool MergeTable::insert(int32_t left, int32_t right, Value value) {
  const uint64_t key = key_of(left, right);
  for (uint64_t pos = hash_key(key) & mask_;; pos = (pos + 1) & mask_) {
    Slot& slot = slots_[pos];
    if (slot.key == key) return false;
    if (slot.key == kEmpty) {
      slot = Slot{key, value};
      ++size_;
      return true;
    }
  }
}

const MergeTable::Value* MergeTable::find(int32_t left, int32_t right) const {
  if (slots_.empty()) return nullptr;
  const uint64_t key = key_of(left, right);
  for (uint64_t pos = hash_key(key) & mask_;; pos = (pos + 1) & mask_) {
    const Slot& slot = slots_[pos];
    if (slot.key == key) return &slot.value;
    if (slot.key == kEmpty) return nullptr;
  }
}

}  // namespace cellserve::engine::tokenizer
