// ScalerIndex: 64 shards of open-addressing tables for the readers, a reverse map for the (single)
// writer. A lookup is one hash of namespace, kind and name, one shard read lock, and usually one
// cache line of slots on a miss; std::unordered_map's node chains cost two or three cache misses
// instead.
#include "controller/scaler_index.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <utility>

namespace vscaler::controller {

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

ScalerIndex::ScalerIndex() : seed_(base::random_hash_seed()) {}

ScalerIndex::~ScalerIndex() {
  for (Shard& shard : shards_) {
    shard.targets.for_each([](Target* target) { delete target; });
  }
}

uint64_t ScalerIndex::hash(std::string_view ns, std::string_view kind,
                           std::string_view name) const {
  // Each part's length is mixed in, so "a"+"bc" and "ab"+"c" differ.
  return base::hash_finish(
      base::hash_bytes(base::hash_bytes(base::hash_bytes(seed_, ns), kind), name));
}

ScalerIndex::Target* ScalerIndex::find_locked(const Shard& shard, uint64_t h, std::string_view ns,
                                              std::string_view kind, std::string_view name) {
  return shard.targets.find(
      h, [&](const Target& target) { return same_target(target, ns, kind, name); });
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
  std::vector<base::OpenTable<Target>::Slot> spare;  // the grown array in, the old one out
  {
    std::shared_lock lock(shard.mutex);  // only this writer changes the shard: sizing is stable
    if (shard.targets.full()) spare.resize(shard.targets.capacity() * 2);
  }
  std::unique_lock lock(shard.mutex);
  if (!spare.empty()) shard.targets.rehash(spare);
  // Never grows here: the table has room for one more.
  Target* found = shard.targets.find_or_insert(
      h, [&](const Target& t) { return same_target(t, target.ns, target.kind, target.name); },
      [&] { return fresh.release(); });
  std::vector<std::string>& keys = found->scalers;
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
  Target* found = find_locked(shard, h, target.ns, target.kind, target.name);
  if (!found) return;
  std::vector<std::string>& keys = found->scalers;
  auto pos = std::lower_bound(keys.begin(), keys.end(), scaler_key);
  if (pos != keys.end() && *pos == scaler_key) {
    removed = std::move(*pos);
    keys.erase(pos);
  }
  if (!keys.empty()) return;
  gone.reset(found);
  shard.targets.erase(h, found);
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
