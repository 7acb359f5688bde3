// ScalerStore: the parsed VerticalScalers the operator knows (fed by the informer) and the index
// from Deployment to scalers kept in step with them. Readers (webhook, workers, resync) get
// immutable snapshots (shared_ptr<const Scaler>), so a scaler never changes under a reader.
#pragma once

#include <memory>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "api/scaler.h"
#include "controller/scaler_index.h"

namespace vscaler::controller {

/// Thread-safe key -> Scaler map plus the namespace/deployment index.
class ScalerStore {
 public:
  /// Inserts or replaces `scaler` (and moves its index entry when deploymentName changed).
  /// Returns the previous version, nullptr when new.
  std::shared_ptr<const api::Scaler> upsert(std::shared_ptr<const api::Scaler> scaler);
  /// Removes `key`; returns what was stored, nullptr when absent.
  std::shared_ptr<const api::Scaler> remove(const std::string& key);
  /// The scaler `key` ("namespace/name"), nullptr when absent.
  std::shared_ptr<const api::Scaler> get(std::string_view key) const;
  /// Every scaler targeting Deployment ns/name (index lookup, then the map).
  std::vector<std::shared_ptr<const api::Scaler>> targeting(std::string_view ns,
                                                            std::string_view deployment) const;
  /// All scalers, for the resync.
  std::vector<std::shared_ptr<const api::Scaler>> snapshot() const;
  /// The index, for the webhook's allocation-free lookup.
  const ScalerIndex& index() const { return index_; }
  std::size_t size() const;

 private:
  mutable std::shared_mutex mutex_;
  std::unordered_map<std::string, std::shared_ptr<const api::Scaler>> scalers_;
  ScalerIndex index_;
};

}  // namespace vscaler::controller
