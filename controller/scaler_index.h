// ScalerIndex: which scalers target a Deployment, "namespace/deploymentName -> scaler keys".
// Deployments carry no back-reference to their scaler, so this is how a Deployment write seen by
// the admission hook (on every Deployment write in the cluster) finds the scalers to enqueue. The
// informer thread maintains it; the webhook's threads read it. Reads are a hash lookup under a
// shard's read lock, allocation-free: the key is hashed from the two string_views, never joined.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <functional>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace vscaler::controller {

/// A Deployment a scaler targets: its namespace and name.
struct ScalerTarget {
  std::string ns;
  std::string deployment;
  bool operator==(const ScalerTarget&) const = default;
};

/// namespace/deploymentName -> the keys ("namespace/name") of the scalers targeting it.
/// Thread-safe: one writer (the informer) and any number of readers at once.
class ScalerIndex {
 public:
  ScalerIndex() = default;
  ScalerIndex(const ScalerIndex&) = delete;
  ScalerIndex& operator=(const ScalerIndex&) = delete;

  /// Records that `scaler_key` targets ns/deployment. When it targeted another Deployment before,
  /// moves it and returns that old target, so the caller can enqueue the scalers of both
  /// Deployments (DESIGN.md event flow item 1); returns nullopt when it is new or unchanged.
  std::optional<ScalerTarget> upsert(std::string_view scaler_key, std::string_view ns,
                                     std::string_view deployment);
  /// Forgets `scaler_key`; returns the target it had (its other scalers may need a reconcile:
  /// a conflict loser can become active), or nullopt when it was not indexed.
  std::optional<ScalerTarget> remove(std::string_view scaler_key);

  /// Calls `on_key(std::string_view scaler_key)` for each scaler targeting ns/deployment, in key
  /// order, and returns how many there were. Allocates nothing. `on_key` runs under a read lock:
  /// keep it short (enqueueing is fine) and never call upsert/remove from it.
  template <typename OnKey>
  size_t lookup(std::string_view ns, std::string_view deployment, OnKey&& on_key) const {
    TargetView view{ns, deployment, hash(ns, deployment)};
    const Shard& shard = shards_[view.hash % kShards];
    std::shared_lock lock(shard.mutex);
    auto it = shard.map.find(view);
    if (it == shard.map.end()) return 0;
    for (const std::string& key : it->second) on_key(std::string_view(key));
    return it->second.size();
  }
  /// The scalers targeting ns/deployment, copied (for callers off the hot path, and tests).
  std::vector<std::string> lookup(std::string_view ns, std::string_view deployment) const;
  /// The Deployment `scaler_key` targets, if indexed.
  std::optional<ScalerTarget> target_of(std::string_view scaler_key) const;
  /// Number of scalers indexed.
  size_t size() const { return size_.load(std::memory_order_relaxed); }

 private:
  // Shards so that readers of different Deployments touch different lock words (a shared_mutex's
  // reader count is one contended cache line) and the writer blocks only 1/kShards of readers.
  static constexpr size_t kShards = 64;

  /// The map key: a target with its hash computed once.
  struct TargetKey {
    std::string ns;
    std::string deployment;
    size_t hash;
  };
  /// The heterogeneous lookup key: views and a precomputed hash, so no std::string is built.
  struct TargetView {
    std::string_view ns;
    std::string_view deployment;
    size_t hash;
  };
  struct TargetHash {
    using is_transparent = void;
    size_t operator()(const TargetKey& key) const { return key.hash; }
    size_t operator()(const TargetView& view) const { return view.hash; }
  };
  struct TargetEqual {
    using is_transparent = void;
    template <typename A, typename B>
    bool operator()(const A& a, const B& b) const {
      return a.hash == b.hash && a.deployment == b.deployment && a.ns == b.ns;
    }
  };
  struct alignas(64) Shard {
    mutable std::shared_mutex mutex;
    // Sorted scaler keys; almost always one (two scalers on one Deployment is a Conflict).
    std::unordered_map<TargetKey, std::vector<std::string>, TargetHash, TargetEqual> map;
  };
  struct KeyHash {
    using is_transparent = void;
    size_t operator()(std::string_view key) const { return std::hash<std::string_view>{}(key); }
  };

  static size_t hash(std::string_view ns, std::string_view deployment);
  void insert_locked(std::string_view scaler_key, const ScalerTarget& target);
  void erase_locked(std::string_view scaler_key, const ScalerTarget& target);

  std::array<Shard, kShards> shards_;
  // Writers only: scaler key -> its target, to move or remove it. Serialises writers.
  mutable std::mutex writer_mutex_;
  std::unordered_map<std::string, ScalerTarget, KeyHash, std::equal_to<>> by_scaler_;
  std::atomic<size_t> size_{0};
};

}  // namespace vscaler::controller
