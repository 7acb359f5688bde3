// UnclaimedCreates: workloads whose CREATE the admission hook saw while no scaler targeted them,
// remembered for a short while. It closes the race of "a scaler, then its workload, at once":
// the scaler's POST has returned but its watch event has not reached this replica's index when
// the workload's CREATE is admitted, so the hook finds no scaler to hint, and the scaler's own
// first reconcile may GET the workload before it is stored (admission runs before persistence)
// and find nothing. When the scaler then arrives, the manager takes the record and hints the
// scaler with "the workload must exist", so the reconciler re-checks until it is stored instead
// of waiting for the resync. Bounded in time and size: anyone allowed to create workloads
// reaches the hook.
#pragma once

#include <chrono>
#include <cstddef>
#include <deque>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

namespace vscaler::controller {

/// Recently admitted workload CREATEs that no scaler claimed. Thread-safe and I/O-free (the
/// admission threads record, the informer thread takes).
class UnclaimedCreates {
 public:
  using Clock = std::chrono::steady_clock;

  /// Keeps records for `ttl`, at most `capacity` of them (the oldest goes first).
  explicit UnclaimedCreates(std::chrono::milliseconds ttl = std::chrono::seconds(30),
                            std::size_t capacity = 4096);

  /// The workload "namespace/Kind/name" was admitted for CREATE and no scaler targets it.
  void record(std::string_view workload_key, Clock::time_point now = Clock::now());
  /// True (and forgets it) when `workload_key` was recorded within the ttl.
  bool take(std::string_view workload_key, Clock::time_point now = Clock::now());
  /// Records held now (expired ones included until the next record or take prunes them).
  std::size_t size() const;

  /// "namespace/Kind/name", the key both sides use.
  static std::string key(std::string_view ns, std::string_view kind, std::string_view name);

 private:
  void prune(Clock::time_point now);

  const std::chrono::milliseconds ttl_;
  const std::size_t capacity_;
  mutable std::mutex mutex_;
  std::unordered_map<std::string, Clock::time_point> recorded_;
  std::deque<std::pair<std::string, Clock::time_point>> order_;  // oldest first
};

}  // namespace vscaler::controller
