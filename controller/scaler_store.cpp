// ScalerStore: sharded map and index updated together under the writer lock.
#include "controller/scaler_store.h"

#include "base/tsan.h"

namespace vscaler::controller {

ScalerStore::~ScalerStore() {
  base::mutex_destroyed(&writer_mutex_);
  base::mutex_destroyed(&invalid_mutex_);
  for (Shard& shard : shards_) base::mutex_destroyed(&shard.mutex);
}

std::shared_ptr<const api::Scaler> ScalerStore::upsert(std::shared_ptr<const api::Scaler> scaler) {
  std::string key = scaler->key();
  std::lock_guard writer(writer_mutex_);
  std::shared_ptr<const api::Scaler> previous;
  {
    // The map first, then the index: a reader that finds the key in the index finds it here.
    Shard& shard = shard_of(key);
    std::unique_lock lock(shard.mutex);
    auto [it, inserted] = shard.scalers.try_emplace(key, scaler);
    if (!inserted) {
      previous = std::move(it->second);
      it->second = scaler;
    }
  }
  index_.upsert(key, scaler->ns, scaler->target.kind, scaler->target.name);
  return previous;
}

std::shared_ptr<const api::Scaler> ScalerStore::remove(const std::string& key) {
  std::lock_guard writer(writer_mutex_);
  index_.remove(key);  // the index first: readers stop finding the key before it goes
  Shard& shard = shard_of(key);
  std::unique_lock lock(shard.mutex);
  auto it = shard.scalers.find(key);
  if (it == shard.scalers.end()) return nullptr;
  std::shared_ptr<const api::Scaler> previous = std::move(it->second);
  shard.scalers.erase(it);
  return previous;
}

std::shared_ptr<const api::Scaler> ScalerStore::get(std::string_view key) const {
  const Shard& shard = shard_of(key);
  std::shared_lock lock(shard.mutex);
  auto it = shard.scalers.find(key);
  return it == shard.scalers.end() ? nullptr : it->second;
}

std::vector<std::shared_ptr<const api::Scaler>> ScalerStore::targeting(
    std::string_view ns, std::string_view kind, std::string_view name) const {
  std::vector<std::shared_ptr<const api::Scaler>> result;
  // The index lookup holds one index shard's read lock; each scaler then one map shard's. No
  // lock of the whole store is taken: admissions of different workloads do not meet.
  index_.lookup(ns, kind, name, [&](std::string_view key) {
    if (auto scaler = get(key)) result.push_back(std::move(scaler));
  });
  return result;
}

std::vector<std::shared_ptr<const api::Scaler>> ScalerStore::snapshot() const {
  std::vector<std::shared_ptr<const api::Scaler>> result;
  for (const Shard& shard : shards_) {
    std::shared_lock lock(shard.mutex);
    for (const auto& [key, scaler] : shard.scalers) result.push_back(scaler);
  }
  return result;
}

std::size_t ScalerStore::size() const {
  std::size_t total = 0;
  for (const Shard& shard : shards_) {
    std::shared_lock lock(shard.mutex);
    total += shard.scalers.size();
  }
  return total;
}

void ScalerStore::mark_invalid(const std::string& key, InvalidScaler invalid) {
  std::lock_guard lock(invalid_mutex_);
  invalid_[key] = std::move(invalid);
}

void ScalerStore::clear_invalid(const std::string& key) {
  std::lock_guard lock(invalid_mutex_);
  invalid_.erase(key);
}

std::optional<InvalidScaler> ScalerStore::invalid(std::string_view key) const {
  std::lock_guard lock(invalid_mutex_);
  auto found = invalid_.find(key);
  if (found == invalid_.end()) return std::nullopt;
  return found->second;
}

}  // namespace vscaler::controller
