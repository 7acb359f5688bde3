// ScalerIndex: sharded forward map for the readers, a reverse map for the (single) writer.
#include "controller/scaler_index.h"

#include <algorithm>
#include <utility>

namespace vscaler::controller {

size_t ScalerIndex::hash(std::string_view ns, std::string_view deployment) {
  size_t h = std::hash<std::string_view>{}(ns);
  // boost::hash_combine's mixing: "a/bc" and "ab/c" must not collide systematically.
  h ^= std::hash<std::string_view>{}(deployment) + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
  return h;
}

void ScalerIndex::insert_locked(std::string_view scaler_key, const ScalerTarget& target) {
  size_t h = hash(target.ns, target.deployment);
  Shard& shard = shards_[h % kShards];
  std::unique_lock lock(shard.mutex);
  auto it = shard.map.find(TargetView{target.ns, target.deployment, h});
  if (it == shard.map.end()) {
    it = shard.map.emplace(TargetKey{target.ns, target.deployment, h}, std::vector<std::string>{})
             .first;
  }
  std::vector<std::string>& keys = it->second;
  auto pos = std::lower_bound(keys.begin(), keys.end(), scaler_key);
  if (pos == keys.end() || *pos != scaler_key) keys.insert(pos, std::string(scaler_key));
}

void ScalerIndex::erase_locked(std::string_view scaler_key, const ScalerTarget& target) {
  size_t h = hash(target.ns, target.deployment);
  Shard& shard = shards_[h % kShards];
  std::unique_lock lock(shard.mutex);
  auto it = shard.map.find(TargetView{target.ns, target.deployment, h});
  if (it == shard.map.end()) return;
  std::vector<std::string>& keys = it->second;
  auto pos = std::lower_bound(keys.begin(), keys.end(), scaler_key);
  if (pos != keys.end() && *pos == scaler_key) keys.erase(pos);
  if (keys.empty()) shard.map.erase(it);
}

std::optional<ScalerTarget> ScalerIndex::upsert(std::string_view scaler_key, std::string_view ns,
                                                std::string_view deployment) {
  std::lock_guard lock(writer_mutex_);
  auto it = by_scaler_.find(scaler_key);
  if (it != by_scaler_.end() && it->second.ns == ns && it->second.deployment == deployment) {
    return std::nullopt;
  }
  ScalerTarget target{std::string(ns), std::string(deployment)};
  // Insert into the new target before leaving the old one: a concurrent reader may see the
  // scaler under both Deployments for an instant (an extra enqueue), never under neither.
  insert_locked(scaler_key, target);
  if (it == by_scaler_.end()) {
    by_scaler_.emplace(std::string(scaler_key), std::move(target));
    size_.fetch_add(1, std::memory_order_relaxed);
    return std::nullopt;
  }
  erase_locked(scaler_key, it->second);
  ScalerTarget old = std::exchange(it->second, std::move(target));
  return old;
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

std::vector<std::string> ScalerIndex::lookup(std::string_view ns,
                                             std::string_view deployment) const {
  std::vector<std::string> keys;
  lookup(ns, deployment, [&keys](std::string_view key) { keys.emplace_back(key); });
  return keys;
}

std::optional<ScalerTarget> ScalerIndex::target_of(std::string_view scaler_key) const {
  std::lock_guard lock(writer_mutex_);
  auto it = by_scaler_.find(scaler_key);
  if (it == by_scaler_.end()) return std::nullopt;
  return it->second;
}

}  // namespace vscaler::controller
