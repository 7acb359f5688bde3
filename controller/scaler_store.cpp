#include "controller/scaler_store.h"

#include <mutex>

namespace vscaler::controller {

std::shared_ptr<const api::Scaler> ScalerStore::upsert(std::shared_ptr<const api::Scaler> scaler) {
  std::string key = scaler->key();
  std::unique_lock lock(mutex_);
  index_.upsert(key, scaler->ns, scaler->deployment_name);
  auto [it, inserted] = scalers_.try_emplace(key, scaler);
  if (inserted) return nullptr;
  std::shared_ptr<const api::Scaler> previous = std::move(it->second);
  it->second = std::move(scaler);
  return previous;
}

std::shared_ptr<const api::Scaler> ScalerStore::remove(const std::string& key) {
  std::unique_lock lock(mutex_);
  auto it = scalers_.find(key);
  if (it == scalers_.end()) return nullptr;
  std::shared_ptr<const api::Scaler> previous = std::move(it->second);
  scalers_.erase(it);
  index_.remove(key);
  return previous;
}

std::shared_ptr<const api::Scaler> ScalerStore::get(std::string_view key) const {
  std::shared_lock lock(mutex_);
  auto it = scalers_.find(std::string(key));
  return it == scalers_.end() ? nullptr : it->second;
}

std::vector<std::shared_ptr<const api::Scaler>> ScalerStore::targeting(
    std::string_view ns, std::string_view deployment) const {
  std::vector<std::shared_ptr<const api::Scaler>> result;
  std::shared_lock lock(mutex_);
  index_.lookup(ns, deployment, [&](std::string_view key) {
    auto it = scalers_.find(std::string(key));
    if (it != scalers_.end()) result.push_back(it->second);
  });
  return result;
}

std::vector<std::shared_ptr<const api::Scaler>> ScalerStore::snapshot() const {
  std::shared_lock lock(mutex_);
  std::vector<std::shared_ptr<const api::Scaler>> result;
  result.reserve(scalers_.size());
  for (const auto& [key, scaler] : scalers_) result.push_back(scaler);
  return result;
}

std::size_t ScalerStore::size() const {
  std::shared_lock lock(mutex_);
  return scalers_.size();
}

}  // namespace vscaler::controller
