// Open-addressing hash tables for the vocabulary's hot lookups (token text -> id, token pair -> merge).
//
// Why not std::unordered_map: a 151k-token vocabulary needs ~450k lookups to load its merges and one
// per merge candidate while tokenizing; node-based maps spend that time in cache misses. These tables
// are flat arrays (linear probing, power-of-two capacity, load factor <= 2/3) built once and then
// only read, so they are safe to share between threads.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "engine/tokenizer/token_data.h"

namespace cellserve::engine::tokenizer {

// Maps each distinct token text to its id. It stores only ids and hashes and reads the texts from
// the array given to build(), which must stay alive and unchanged while the index is used (a moved
// std::vector keeps its buffer, so the index may move along with the vector that owns the array).
class TextIndex {
 public:
  // Indexes tokens[0..n); returns false (and indexes nothing) if a text occurs twice, setting
  // `*duplicate` to the later id.
  bool build(const TokenData* tokens, size_t n, int32_t* duplicate);
  // The index of `text`, or -1.
  int32_t find(std::string_view text) const;

 private:
  struct Slot {
    uint32_t hash = 0;  // low 32 bits of the text's hash
    int32_t id = -1;    // -1: empty
  };
  const TokenData* tokens_ = nullptr;
  std::vector<Slot> slots_;
  uint64_t mask_ = 0;
};

// What merging two adjacent BPE symbols yields.
struct BpeMerge {
  int32_t rank = 0;     // position in tokenizer.ggml.merges: lower merges first
  int32_t result = -1;  // the token whose text is the concatenation (-1 if none)
};

// Maps a pair of token ids to their merge; the first insertion of a pair wins.
class MergeTable {
 public:
  using Value = BpeMerge;
  void reserve(size_t n);
  // Inserts unless the key is present; returns whether it inserted. REQUIRES: reserve() for the total.
  bool insert(int32_t left, int32_t right, Value value);
  // The value for (left, right), or nullptr.
  const Value* find(int32_t left, int32_t right) const;
  size_t size() const { return size_; }

 private:
  struct Slot {
    uint64_t key = kEmpty;
    Value value{};
  };
  static constexpr uint64_t kEmpty = ~uint64_t{0};
  static uint64_t key_of(int32_t l, int32_t r) {
    return (uint64_t{static_cast<uint32_t>(l)} << 32) | static_cast<uint32_t>(r);
  }
  std::vector<Slot> slots_;
  uint64_t mask_ = 0;
  size_t size_ = 0;
};

}  // namespace cellserve::engine::tokenizer
