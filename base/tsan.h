// ThreadSanitizer's view of mutexes that end. glibc's std::mutex and std::shared_mutex have
// trivial destructors, so TSan never learns that one ended: a later mutex at the same address (a
// new object on reused stack or heap memory) inherits its lock-order history, and the nested
// locks of two unrelated objects can form a false lock-order cycle (seen in unit-tsan: one test
// case's index lock and a later case's store lock at one stack address). An owner of nested locks
// calls mutex_destroyed on each in its destructor. Every other build compiles it to nothing.
#pragma once

#if defined(__SANITIZE_THREAD__)
#define VSCALER_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define VSCALER_TSAN 1
#endif
#endif

#ifdef VSCALER_TSAN
#include <sanitizer/tsan_interface.h>
#endif

namespace vscaler::base {

/// Tells ThreadSanitizer that the mutex at `mutex` (a std::mutex or std::shared_mutex, which hold
/// the pthread object at their start) ends here, with its lock-order history. Call it from the
/// owner's destructor, when no thread can hold it.
inline void mutex_destroyed([[maybe_unused]] const void* mutex) {
#ifdef VSCALER_TSAN
  __tsan_mutex_destroy(const_cast<void*>(mutex), 0);
#endif
}

}  // namespace vscaler::base
