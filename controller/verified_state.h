// VerifiedState: per scaler, the Deployment uid and generation the operator last verified to
// carry the declared resources (or verified absent). Kept in memory, not in status, so the
// periodic resync can find what changed with a metadata-only read and nothing else.
#pragma once

#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

namespace vscaler::controller {

/// What a reconcile last saw of a scaler's Deployment.
struct Verified {
  bool found = false;      ///< the Deployment existed
  std::string uid;         ///< its uid when found
  int64_t generation = 0;  ///< its metadata.generation when found
  friend bool operator==(const Verified&, const Verified&) = default;
};

/// Thread-safe map scaler key -> Verified; written by workers, read by the resync.
class VerifiedState {
 public:
  /// Records what a reconcile verified for `key`.
  void set(const std::string& key, Verified verified) {
    std::lock_guard lock(mutex_);
    entries_[key] = std::move(verified);
  }
  /// Forgets `key` (scaler deleted, or it no longer manages its Deployment).
  void forget(const std::string& key) {
    std::lock_guard lock(mutex_);
    entries_.erase(key);
  }
  /// What was last verified for `key`; nullopt when nothing was (never reconciled).
  std::optional<Verified> get(const std::string& key) const {
    std::lock_guard lock(mutex_);
    auto it = entries_.find(key);
    if (it == entries_.end()) return std::nullopt;
    return it->second;
  }

 private:
  mutable std::mutex mutex_;
  std::unordered_map<std::string, Verified> entries_;
};

}  // namespace vscaler::controller
