// MemoryTrimmer: hands the heap memory that glibc keeps after a burst of work back to the OS.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <limits>

namespace vscaler::controller {

/// glibc's malloc keeps freed memory in its arenas. After the burst of reconciles that follows a
/// start or a relist (each one parses a whole Deployment), the operator's RSS stayed at two to
/// three times its live heap: with 10,000 scalers, 216-399 MiB of RSS for 110-140 MiB in use
/// (bench/sections/scale.sh). malloc_trim(0) returns the free pages of every arena.
/// maybe_trim() does that at most once per interval; thread-safe (concurrent callers: one trims).
/// A no-op without glibc.
class MemoryTrimmer {
 public:
  explicit MemoryTrimmer(std::chrono::milliseconds min_interval = std::chrono::seconds(10))
      : min_interval_(min_interval) {}
  /// Trims unless a trim ran less than min_interval ago; true when this call trimmed.
  bool maybe_trim();

 private:
  static constexpr int64_t kNever = std::numeric_limits<int64_t>::min();
  std::chrono::milliseconds min_interval_;
  std::atomic<int64_t> last_ns_{kNever};  ///< steady_clock time of the last trim
};

}  // namespace vscaler::controller
