// ScalerIndex: 64 shards of open-addressing tables for the readers, a reverse map for the (single)
// writer. A lookup is one hash of the two names, one shard read lock, and usually one cache line
// of slots on a miss; std::unordered_map's node chains cost two or three cache misses instead.
#include "controller/scaler_index.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <random>
#include <utility>

namespace vscaler::controller {
namespace {

constexpr size_t kInitialSlots = 16;

uint64_t load64(const char* p) {
  uint64_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

// 8 bytes at a time with multiply-xorshift rounds; `h` carries the state between the two names.
uint64_t mix_bytes(uint64_t h, std::string_view bytes) {
  const char* p = bytes.data();
  size_t n = bytes.size();
  h ^= n * 0x9e3779b97f4a7c15ULL;
  for (; n >= 8; p += 8, n -= 8) {
    h = (h ^ load64(p)) * 0xbf58476d1ce4e5b9ULL;
    h ^= h >> 31;
  }
  uint64_t tail = 0;
  for (size_t i = 0; i < n; ++i) tail |= uint64_t{static_cast<unsigned char>(p[i])} << (8 * i);
  h = (h ^ tail) * 0x94d049bb133111ebULL;
  return h ^ (h >> 29);
}

}  // namespace

// The namespace length is compared too: names with a '/' cannot exist in Kubernetes, but a
// mutating webhook sees objects before the API server validates them.
bool ScalerIndex::same_target(const Target& target, std::string_view ns, std::string_view kind,
                              std::string_view name) {
  const std::string& key = target.key;
  return target.ns_size == ns.size() && target.kind_size == kind.size() &&
         key.size() == ns.size() + 1 + kind.size() + 1 + name.size() &&
         std::memcmp(key.data(), ns.data(), ns.size()) == 0 &&
         std::memcmp(key.data() + ns.size() + 1, kind.data(), kind.size()) == 0 &&
         std::memcmp(key.data() + ns.size() + 1 + kind.size() + 1, name.data(), name.size()) == 0;
}

ScalerIndex::ScalerIndex()
    : seed_((uint64_t{std::random_device{}()} << 32) ^ std::random_device{}()) {
  for (Shard& shard : shards_) shard.slots.resize(kInitialSlots);
}

ScalerIndex::~ScalerIndex() {
  for (Shard& shard : shards_) {
    for (Slot& slot : shard.slots) delete slot.target;
  }
}

uint64_t ScalerIndex::hash(std::string_view ns, std::string_view kind,
                           std::string_view name) const {
  // Each part's length is mixed in, so "a"+"bc" and "ab"+"c" differ.
  uint64_t h = mix_bytes(mix_bytes(mix_bytes(seed_, ns), kind), name);
  h ^= h >> 32;
  h *= 0xd6e8feb86659fd93ULL;
  return h ^ (h >> 32);
}

const ScalerIndex::Target* ScalerIndex::find_locked(const Shard& shard, uint64_t h,
                                                    std::string_view ns, std::string_view kind,
                                                    std::string_view name) {
  size_t mask = shard.slots.size() - 1;
  for (size_t i = h & mask;; i = (i + 1) & mask) {
    const Slot& slot = shard.slots[i];
    if (!slot.target) return nullptr;
    if (slot.hash == h && same_target(*slot.target, ns, kind, name)) return slot.target;
  }
}

// Writers allocate before taking a shard's lock and free after releasing it, so readers of the
// shard wait for a few slot moves at most, never for the allocator.
void ScalerIndex::insert_locked(std::string_view scaler_key, const ScalerTarget& target) {
  uint64_t h = hash(target.ns, target.kind, target.name);
  Shard& shard = shards_[h >> kShardShift];
  auto fresh = std::make_unique<Target>(Target{
      target.ns + "/" + target.kind + "/" + target.name, target.ns.size(), target.kind.size(), {}});
  fresh->scalers.reserve(1);
  std::string key(scaler_key);
  std::vector<Slot> bigger;
  {
    std::shared_lock lock(shard.mutex);  // only this writer changes the shard: sizing is stable
    if ((shard.count + 1) * 2 > shard.slots.size()) bigger.resize(shard.slots.size() * 2);
  }
  std::unique_lock lock(shard.mutex);
  if (!bigger.empty()) {
    size_t mask = bigger.size() - 1;
    for (const Slot& slot : shard.slots) {
      if (!slot.target) continue;
      size_t i = slot.hash & mask;
      while (bigger[i].target) i = (i + 1) & mask;
      bigger[i] = slot;
    }
    shard.slots.swap(bigger);  // the old array is freed after the lock is released
  }
  size_t mask = shard.slots.size() - 1;
  size_t i = h & mask;
  for (; shard.slots[i].target; i = (i + 1) & mask) {
    if (shard.slots[i].hash == h &&
        same_target(*shard.slots[i].target, target.ns, target.kind, target.name)) {
      break;
    }
  }
  Slot& slot = shard.slots[i];
  if (!slot.target) {
    slot.hash = h;
    slot.target = fresh.release();
    ++shard.count;
  }
  std::vector<std::string>& keys = slot.target->scalers;
  auto pos = std::lower_bound(keys.begin(), keys.end(), key);
  // Allocates under the lock only for a second scaler on one workload (a Conflict, rare).
  if (pos == keys.end() || *pos != key) keys.insert(pos, std::move(key));
}

void ScalerIndex::erase_locked(std::string_view scaler_key, const ScalerTarget& target) {
  uint64_t h = hash(target.ns, target.kind, target.name);
  Shard& shard = shards_[h >> kShardShift];
  std::unique_ptr<Target> gone;  // deleted after the lock is released
  std::string removed;
  std::unique_lock lock(shard.mutex);
  size_t mask = shard.slots.size() - 1;
  size_t hole = h & mask;
  for (;; hole = (hole + 1) & mask) {
    const Slot& slot = shard.slots[hole];
    if (!slot.target) return;
    if (slot.hash == h && same_target(*slot.target, target.ns, target.kind, target.name)) break;
  }
  std::vector<std::string>& keys = shard.slots[hole].target->scalers;
  auto pos = std::lower_bound(keys.begin(), keys.end(), scaler_key);
  if (pos != keys.end() && *pos == scaler_key) {
    removed = std::move(*pos);
    keys.erase(pos);
  }
  if (!keys.empty()) return;
  gone.reset(shard.slots[hole].target);
  // Backward-shift deletion: pull later members of the probe run into the hole.
  for (size_t j = (hole + 1) & mask; shard.slots[j].target; j = (j + 1) & mask) {
    size_t home = shard.slots[j].hash & mask;
    bool movable = hole <= j ? (home <= hole || home > j) : (home <= hole && home > j);
    if (movable) {
      shard.slots[hole] = shard.slots[j];
      hole = j;
    }
  }
  shard.slots[hole] = Slot{};
  --shard.count;
}

std::optional<ScalerTarget> ScalerIndex::upsert(std::string_view scaler_key, std::string_view ns,
                                                std::string_view kind, std::string_view name) {
  std::lock_guard lock(writer_mutex_);
  auto it = by_scaler_.find(scaler_key);
  if (it != by_scaler_.end() && it->second.ns == ns && it->second.kind == kind &&
      it->second.name == name) {
    return std::nullopt;
  }
  ScalerTarget target{std::string(ns), std::string(kind), std::string(name)};
  // Insert into the new target before leaving the old one: a concurrent reader may see the
  // scaler under both workloads for an instant (an extra enqueue), never under neither.
  insert_locked(scaler_key, target);
  if (it == by_scaler_.end()) {
    by_scaler_.emplace(std::string(scaler_key), std::move(target));
    size_.fetch_add(1, std::memory_order_relaxed);
    return std::nullopt;
  }
  erase_locked(scaler_key, it->second);
  return std::exchange(it->second, std::move(target));
}

std::optional<ScalerTarget> ScalerIndex::remove(std::string_view scaler_key) {
  std::lock_guard lock(writer_mutex_);
  auto it = by_scaler_.find(scaler_key);
  if (it == by_scaler_.end()) return std::nullopt;
  erase_locked(scaler_key, it->second);
  ScalerTarget old = std::move(it->second);
  by_scaler_.erase(it);
  size_.fetch_sub(1, std::memory_order_relaxed);
  return old;
}

std::vector<std::string> ScalerIndex::lookup(std::string_view ns, std::string_view kind,
                                             std::string_view name) const {
  std::vector<std::string> keys;
  lookup(ns, kind, name, [&keys](std::string_view key) { keys.emplace_back(key); });
  return keys;
}

std::optional<ScalerTarget> ScalerIndex::target_of(std::string_view scaler_key) const {
  std::lock_guard lock(writer_mutex_);
  auto it = by_scaler_.find(scaler_key);
  if (it == by_scaler_.end()) return std::nullopt;
  return it->second;
}

}  // namespace vscaler::controller
