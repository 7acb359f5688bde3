// OpenTable: the open-addressing hash table under the work queue's entries and the scaler index's
// targets (controller/work_queue.cpp, controller/scaler_index.cpp), and the seeded byte hash both
// key it with. It holds pointers to items it does not own, each beside its 64-bit hash, so a probe
// compares hashes and touches an item only on a hash match (a miss usually reads one cache line).
//
// Invariants:
//   - the slot array is a power of two in size and at most half full after any insert;
//   - linear probing: an item sits at its home slot (hash & mask) or after it, with no empty slot
//     between home and it;
//   - erase shifts later members of the probe run back into the hole (backward-shift deletion),
//     so there are no tombstones and every other item stays findable;
//   - the caller supplies the hash and a predicate on the item, so a lookup needs no key object:
//     heterogeneous keys (string_views, several parts) are looked up without allocating.
// Not thread-safe: the users hold their own locks.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <random>
#include <string_view>
#include <utility>
#include <vector>

namespace vscaler::base {

/// A random 64-bit hash seed: keys come from users, so each table gets its own to make crafted
/// collisions useless.
inline uint64_t random_hash_seed() {
  std::random_device device;
  return (uint64_t{device()} << 32) ^ device();
}

/// Folds `bytes` into the hash state `h`, 8 bytes at a time with multiply-xorshift rounds. The
/// length is mixed in, so chaining parts keeps their boundary ("a"+"bc" differs from "ab"+"c").
inline uint64_t hash_bytes(uint64_t h, std::string_view bytes) {
  const char* p = bytes.data();
  size_t n = bytes.size();
  h ^= n * 0x9e3779b97f4a7c15ULL;
  for (; n >= 8; p += 8, n -= 8) {
    uint64_t word;
    std::memcpy(&word, p, sizeof word);
    h = (h ^ word) * 0xbf58476d1ce4e5b9ULL;
    h ^= h >> 31;
  }
  uint64_t tail = 0;
  for (size_t i = 0; i < n; ++i) tail |= uint64_t{static_cast<unsigned char>(p[i])} << (8 * i);
  h = (h ^ tail) * 0x94d049bb133111ebULL;
  return h ^ (h >> 29);
}

/// Finishes a hash state (a murmur3-style avalanche), so both its low bits (the slot) and its
/// top bits (a shard) are well mixed.
inline uint64_t hash_finish(uint64_t h) {
  h ^= h >> 32;
  h *= 0xd6e8feb86659fd93ULL;
  return h ^ (h >> 32);
}

/// An open-addressing table of `T*` keyed by caller-computed hashes (see the file comment).
template <typename T>
class OpenTable {
 public:
  /// One slot: an item and its hash; a null item is an empty slot.
  struct Slot {
    uint64_t hash = 0;
    T* item = nullptr;
  };

  /// A table of `slots` slots (a power of two, at least 2).
  explicit OpenTable(size_t slots) : slots_(slots) {}

  /// The item with hash `hash` for which `match(const T&)` holds, or null.
  template <typename Match>
  T* find(uint64_t hash, Match&& match) const {
    size_t mask = slots_.size() - 1;
    for (size_t i = hash & mask;; i = (i + 1) & mask) {
      const Slot& slot = slots_[i];
      if (!slot.item) return nullptr;
      if (slot.hash == hash && match(static_cast<const T&>(*slot.item))) return slot.item;
    }
  }

  /// True when one more insert would make the table more than half full (insert would grow it).
  bool full() const { return (count_ + 1) * 2 > slots_.size(); }

  /// Moves every item into `storage` (a power of two in size, larger than twice the count) and
  /// hands the old array back in `storage`: a caller can allocate and free outside its lock.
  void rehash(std::vector<Slot>& storage) {
    storage.swap(slots_);
    for (const Slot& slot : storage) {
      if (slot.item) slots_[empty_slot(slot.hash)] = slot;
    }
  }

  /// Adds `item` with `hash`; the caller has checked that no equal item is present. Doubles the
  /// table first when full().
  void insert(uint64_t hash, T* item) {
    if (full()) resize(slots_.size() * 2);
    slots_[empty_slot(hash)] = Slot{hash, item};
    ++count_;
  }

  /// The item with hash `hash` for which `match(const T&)` holds; when there is none, adds the
  /// one `make()` returns (doubling the table first when full()) and returns it. One probe.
  template <typename Match, typename Make>
  T* find_or_insert(uint64_t hash, Match&& match, Make&& make) {
    size_t mask = slots_.size() - 1;
    size_t i = hash & mask;
    for (; slots_[i].item; i = (i + 1) & mask) {
      const Slot& slot = slots_[i];
      if (slot.hash == hash && match(static_cast<const T&>(*slot.item))) return slot.item;
    }
    if (full()) {
      resize(slots_.size() * 2);
      i = empty_slot(hash);
    }
    T* item = make();
    slots_[i] = Slot{hash, item};
    ++count_;
    return item;
  }

  /// Removes `item` (inserted with `hash`) by backward shift; returns false when it is absent.
  bool erase(uint64_t hash, const T* item) {
    size_t mask = slots_.size() - 1;
    size_t hole = hash & mask;
    for (; slots_[hole].item != item; hole = (hole + 1) & mask) {
      if (!slots_[hole].item) return false;
    }
    for (size_t j = (hole + 1) & mask; slots_[j].item; j = (j + 1) & mask) {
      size_t home = slots_[j].hash & mask;
      // Movable unless its home lies cyclically in (hole, j]: then the hole is before its home.
      bool movable = hole <= j ? (home <= hole || home > j) : (home <= hole && home > j);
      if (movable) {
        slots_[hole] = slots_[j];
        hole = j;
      }
    }
    slots_[hole] = Slot{};
    --count_;
    return true;
  }

  /// Halves the table when it is larger than `min_slots` and under 1/8 full: gives back the
  /// array of a past burst, with a gap to growth at 1/2 so a steady load does not resize back and
  /// forth.
  void shrink(size_t min_slots) {
    if (slots_.size() > min_slots && count_ * 8 < slots_.size()) resize(slots_.size() / 2);
  }

  /// Calls `fn(T*)` for every item, in slot order.
  template <typename Fn>
  void for_each(Fn&& fn) const {
    for (const Slot& slot : slots_) {
      if (slot.item) fn(slot.item);
    }
  }

  /// Number of items.
  size_t size() const { return count_; }
  /// Number of slots.
  size_t capacity() const { return slots_.size(); }

 private:
  size_t empty_slot(uint64_t hash) const {
    size_t mask = slots_.size() - 1;
    size_t i = hash & mask;
    while (slots_[i].item) i = (i + 1) & mask;
    return i;
  }

  void resize(size_t slots) {
    std::vector<Slot> storage(slots);
    rehash(storage);
  }

  std::vector<Slot> slots_;
  size_t count_ = 0;
};

}  // namespace vscaler::base
