// ScalerStore: the parsed VerticalScalers the operator knows (fed by the informer) and the index
// from workload (namespace/kind/name) to scalers kept in step with them. Readers (webhook, workers,
// resync) get immutable snapshots (shared_ptr<const Scaler>), so a scaler never changes under a
// reader.
#pragma once

#include <array>
#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "api/scaler.h"
#include "controller/scaler_index.h"

namespace vscaler::controller {

/// A VerticalScaler the informer saw but could not parse (admitted by an older CRD, or while the
/// validating webhook was down): what the reconciler needs to say so in its status.
struct InvalidScaler {
  std::string ns;
  std::string name;
  int64_t generation = 0;
  std::string resource_version;
  nlohmann::json status;  ///< as stored
  std::string error;      ///< what parse_scaler said, naming the field
};

/// Thread-safe key -> Scaler map plus the namespace/kind/name index. The map is sharded by key,
/// like the index, so that admissions (targeting) and workers (get) of different scalers never
/// meet on one lock; the informer, the only writer, is serialised on a lock of its own.
class ScalerStore {
 public:
  ScalerStore() = default;
  /// Tells ThreadSanitizer its locks end (base/tsan.h).
  ~ScalerStore();
  ScalerStore(const ScalerStore&) = delete;
  ScalerStore& operator=(const ScalerStore&) = delete;

  /// Inserts or replaces `scaler` (and moves its index entry when its target changed).
  /// Returns the previous version, nullptr when new.
  std::shared_ptr<const api::Scaler> upsert(std::shared_ptr<const api::Scaler> scaler);
  /// Removes `key`; returns what was stored, nullptr when absent.
  std::shared_ptr<const api::Scaler> remove(const std::string& key);
  /// The scaler `key` ("namespace/name"), nullptr when absent.
  std::shared_ptr<const api::Scaler> get(std::string_view key) const;
  /// Every scaler targeting the workload ns/kind/name (index lookup, then one shard per scaler).
  std::vector<std::shared_ptr<const api::Scaler>> targeting(std::string_view ns,
                                                            std::string_view kind,
                                                            std::string_view name) const;
  /// Every scaler targeting `target` in namespace `ns`.
  std::vector<std::shared_ptr<const api::Scaler>> targeting(std::string_view ns,
                                                            const api::TargetRef& target) const {
    return targeting(ns, target.kind, target.name);
  }
  /// All scalers, for the resync.
  std::vector<std::shared_ptr<const api::Scaler>> snapshot() const;
  /// The index, for the webhook's allocation-free lookup.
  const ScalerIndex& index() const { return index_; }
  std::size_t size() const;

  /// Records that `key` is an unusable scaler (it is not in the map); replaces an earlier record.
  void mark_invalid(const std::string& key, InvalidScaler invalid);
  /// Forgets that record (the scaler became valid, or was deleted).
  void clear_invalid(const std::string& key);
  /// The record for `key`, if it is unusable.
  std::optional<InvalidScaler> invalid(std::string_view key) const;

 private:
  static constexpr std::size_t kShards = 64;
  struct KeyHash {
    using is_transparent = void;
    std::size_t operator()(std::string_view key) const {
      return std::hash<std::string_view>{}(key);
    }
  };
  struct alignas(64) Shard {
    mutable std::shared_mutex mutex;
    std::unordered_map<std::string, std::shared_ptr<const api::Scaler>, KeyHash, std::equal_to<>>
        scalers;
  };
  const Shard& shard_of(std::string_view key) const { return shards_[KeyHash{}(key) % kShards]; }
  Shard& shard_of(std::string_view key) { return shards_[KeyHash{}(key) % kShards]; }

  std::mutex writer_mutex_;  // upsert/remove: the map and the index change together
  std::array<Shard, kShards> shards_;
  ScalerIndex index_;
  mutable std::mutex invalid_mutex_;
  std::unordered_map<std::string, InvalidScaler, KeyHash, std::equal_to<>> invalid_;
};

}  // namespace vscaler::controller
