// OomDedup: remembers which OOM kills were counted, keyed by (pod uid, container, restartCount),
// so that a kill that stays in a pod's lastState for many passes is counted once. Bounded: the
// oldest keys are forgotten first (a kill still visible after that many newer kills would be
// counted again, which only raises memory a second time). Costs nothing until the first kill.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

namespace vscaler::recommender {

/// A bounded set of counted OOM kills (see the file comment). Not thread-safe.
class OomDedup {
 public:
  /// Remembers at most `capacity` (>= 1) kills.
  explicit OomDedup(std::size_t capacity = 4096) : capacity_(capacity == 0 ? 1 : capacity) {}

  /// True the first time a kill is seen (count it), false for a repeat.
  bool first_time(std::string_view pod_uid, std::string_view container, std::int64_t restart_count);

  /// Number of kills remembered.
  std::size_t size() const { return order_.size(); }

 private:
  std::size_t capacity_;
  // The kills remembered, in insertion order for eviction: a ring once full, the oldest at
  // head_. Searched linearly (first_time). A vector, not a deque:
  // an empty one allocates nothing (a std::deque allocates ~600 bytes even empty, and again when
  // moved from), and every scaler's history holds one, most never seeing a kill.
  std::vector<std::uint64_t> order_;
  std::size_t head_ = 0;
};

}  // namespace vscaler::recommender
