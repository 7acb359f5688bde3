#include "controller/memory_trim.h"

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace vscaler::controller {

bool MemoryTrimmer::maybe_trim() {
  const int64_t now = std::chrono::duration_cast<std::chrono::nanoseconds>(
                          std::chrono::steady_clock::now().time_since_epoch())
                          .count();
  int64_t last = last_ns_.load(std::memory_order_relaxed);
  if (last != kNever &&
      now - last < std::chrono::duration_cast<std::chrono::nanoseconds>(min_interval_).count()) {
    return false;
  }
  if (!last_ns_.compare_exchange_strong(last, now, std::memory_order_relaxed)) return false;
#if defined(__GLIBC__)
  malloc_trim(0);
#endif
  return true;
}

}  // namespace vscaler::controller
