// ScalerIndex: which scalers target a workload, "namespace/kind/name -> scaler keys" (a
// StatefulSet and a Deployment of the same name are two targets). Workloads carry no
// back-reference to their scaler, so this is how a workload write seen by the admission hook (on
// every such write in the cluster) finds the scalers to enqueue. The informer thread maintains
// it; the webhook's threads read it. Reads are a hash lookup under a shard's read lock,
// allocation-free: the key is hashed from the three string_views, never joined.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <vector>

#include "base/open_table.h"

namespace vscaler::controller {

/// A workload a scaler targets: its namespace, kind and name.
struct ScalerTarget {
  std::string ns;
  std::string kind;  ///< Deployment, StatefulSet or DaemonSet
  std::string name;
  bool operator==(const ScalerTarget&) const = default;
};

/// namespace/kind/name -> the keys ("namespace/name") of the scalers targeting it.
/// Thread-safe: any number of readers at once with writers (the informer), which are serialised.
class ScalerIndex {
 public:
  ScalerIndex();
  ~ScalerIndex();
  ScalerIndex(const ScalerIndex&) = delete;
  ScalerIndex& operator=(const ScalerIndex&) = delete;

  /// Records that `scaler_key` targets ns/kind/name. When it targeted another workload before
  /// (of any kind), moves it and returns that old target, so the caller can enqueue the scalers
  /// of both (DESIGN.md event flow item 1); returns nullopt when it is new or unchanged.
  std::optional<ScalerTarget> upsert(std::string_view scaler_key, std::string_view ns,
                                     std::string_view kind, std::string_view name);
  /// Forgets `scaler_key`; returns the target it had (its other scalers may need a reconcile:
  /// a conflict loser can become active), or nullopt when it was not indexed.
  std::optional<ScalerTarget> remove(std::string_view scaler_key);

  /// Calls `on_key(std::string_view scaler_key)` for each scaler targeting ns/kind/name, in key
  /// order, and returns how many there were. Allocates nothing. `on_key` runs under a read lock:
  /// keep it short (enqueueing is fine) and never call upsert/remove from it.
  template <typename OnKey>
  size_t lookup(std::string_view ns, std::string_view kind, std::string_view name,
                OnKey&& on_key) const {
    uint64_t h = hash(ns, kind, name);
    const Shard& shard = shards_[h >> kShardShift];
    std::shared_lock lock(shard.mutex);
    const Target* target = find_locked(shard, h, ns, kind, name);
    if (!target) return 0;
    for (const Entry* entry = target->scalers; entry; entry = entry->next) on_key(entry->key());
    return target->count;
  }
  /// The scalers targeting ns/kind/name, copied (for callers off the hot path, and tests).
  std::vector<std::string> lookup(std::string_view ns, std::string_view kind,
                                  std::string_view name) const;
  /// The workload `scaler_key` targets, if indexed.
  std::optional<ScalerTarget> target_of(std::string_view scaler_key) const;
  /// Number of scalers indexed.
  size_t size() const { return size_.load(std::memory_order_relaxed); }

 private:
  // Shards so that readers of different workloads touch different lock words (a shared_mutex's
  // reader count is one contended cache line) and the writer blocks only 1/64 of the readers.
  static constexpr unsigned kShardBits = 6;
  static constexpr unsigned kShardShift = 64 - kShardBits;  // shard from the top bits of a hash
  static constexpr size_t kInitialSlots = 16;

  struct Target;
  /// One indexed scaler, in one block: this header, then the key's bytes ("namespace/name").
  /// Moving a scaler to another workload makes a new Entry (a reader may meanwhile find the
  /// scaler under both), so an Entry's target never changes.
  struct Entry {
    Entry* next;     // the next scaler of the same target, in key order; null at the end
    Target* target;  // the workload it targets
    uint32_t key_size;
    std::string_view key() const { return {reinterpret_cast<const char*>(this + 1), key_size}; }
  };
  /// One workload that scalers target, in one block: this header, then the bytes of its
  /// namespace, kind and name, unseparated (~64 bytes, where three std::strings, a vector and
  /// its key string took ~250; issue 17).
  struct Target {
    Entry* scalers;  // sorted by key, linked through Entry::next; almost always one (more is a
                     // Conflict)
    uint32_t count;  // how many scalers the list holds
    uint32_t ns_size;
    uint32_t kind_size;
    uint32_t name_size;
    const char* text() const { return reinterpret_cast<const char*>(this + 1); }
    std::string_view ns() const { return {text(), ns_size}; }
    std::string_view kind() const { return {text() + ns_size, kind_size}; }
    std::string_view name() const { return {text() + ns_size + kind_size, name_size}; }
  };
  /// Frees a block made by make_entry or make_target.
  struct BlockDelete {
    void operator()(Entry* entry) const;
    void operator()(Target* target) const;
  };
  using EntryPtr = std::unique_ptr<Entry, BlockDelete>;
  using TargetPtr = std::unique_ptr<Target, BlockDelete>;

  /// A shard's table (base/open_table.h) owns its Targets. Its slots keep the hash beside the
  /// pointer, so a miss (most workload writes in a cluster) touches no Target, usually one cache
  /// line.
  struct alignas(64) Shard {
    mutable std::shared_mutex mutex;
    base::OpenTable<Target> targets{kInitialSlots};
  };

  static EntryPtr make_entry(std::string_view scaler_key);
  static TargetPtr make_target(std::string_view ns, std::string_view kind, std::string_view name);
  static ScalerTarget target_value(const Target& target);
  uint64_t hash(std::string_view ns, std::string_view kind, std::string_view name) const;
  uint64_t key_hash(std::string_view scaler_key) const;
  static bool same_target(const Target& target, std::string_view ns, std::string_view kind,
                          std::string_view name);
  static Target* find_locked(const Shard& shard, uint64_t hash, std::string_view ns,
                             std::string_view kind, std::string_view name);
  Entry* find_entry(uint64_t hash, std::string_view scaler_key) const;
  void insert_locked(Entry* entry, std::string_view ns, std::string_view kind,
                     std::string_view name);
  void erase_locked(Entry* entry);

  const uint64_t seed_;  // random per index: scaler and workload names come from users
  std::array<Shard, size_t{1} << kShardBits> shards_;
  // Writers only: scaler key -> its Entry (owned here), to move or remove it. Serialises writers.
  mutable std::mutex writer_mutex_;
  base::OpenTable<Entry> by_scaler_{kInitialSlots};
  std::atomic<size_t> size_{0};
};

}  // namespace vscaler::controller
