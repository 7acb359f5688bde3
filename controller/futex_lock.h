// FutexMutex and FutexCondition: the work queue's lock and condition variable, on Linux futexes.
// The queue's critical sections are tens of nanoseconds, and its workers may outnumber the cores
// (bench/queue_bench runs 4 threads on 2). A thread that finds the lock taken does not spin: it
// sleeps until an unlock wakes it, and unlocks wake one sleeper at a time (a woken one must try
// again before the next is woken). Contended work then runs in bursts on one core with its data
// in that core's cache, which is what makes client-go's queue fast on Go's scheduler (a blocked
// goroutine parks, and its P runs the next one), instead of the two cores trading the lock and
// the queue's cache lines on every call.
//
// Measured with bench/queue_bench, 4 threads on 2 cores (an Intel Xeon VM, medians of alternating
// runs): glibc's adaptive mutex, which this replaces, spins up to 100 `pause` instructions, ~140
// cycles each on recent Intel cores against ~10 on AMD, so the same count was a short spin on one
// host and 4+ us on the other; it made 1.3M items/s here (client-go 3.7M). A spin bounded by time
// (300-8,000 TSC ticks) did no better than 1.2-1.9M (spinning successfully is what keeps both
// cores trading the lines), a plain futex mutex without spin 2.7M, this one 4.7M. Unlocking and
// notifying make a system call only when a thread sleeps.
//
// Both are std::atomic-based (ThreadSanitizer sees the acquire/release pairs); the futex calls
// only sleep and wake.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>

namespace vscaler::controller {

/// A mutex (Lockable: works with std::lock_guard and std::unique_lock) that sleeps on a futex
/// when taken, without spinning. Not fair: a running thread may take it again before a woken
/// sleeper gets there (that is the point); every unlock with sleepers keeps one on its way.
class FutexMutex {
 public:
  FutexMutex() = default;
  FutexMutex(const FutexMutex&) = delete;
  FutexMutex& operator=(const FutexMutex&) = delete;

  /// Takes the lock, sleeping while another thread holds it.
  void lock() noexcept {
    uint32_t expected = 0;
    if (state_.compare_exchange_strong(expected, kLocked, std::memory_order_acquire,
                                       std::memory_order_relaxed)) {
      return;
    }
    lock_contended();
  }
  /// Takes the lock if it is free; never waits.
  bool try_lock() noexcept {
    uint32_t seen = state_.load(std::memory_order_relaxed);
    return (seen & kLocked) == 0 &&
           state_.compare_exchange_strong(seen, seen | kLocked, std::memory_order_acquire,
                                          std::memory_order_relaxed);
  }
  /// Releases the lock; wakes one sleeper if some sleep and none is already on its way.
  void unlock() noexcept {
    uint32_t now = state_.fetch_sub(kLocked, std::memory_order_release) - kLocked;
    if (now >= kSleeper && (now & kWaking) == 0) wake_one(now);
  }

 private:
  // The lock word: bit 0 locked; bit 1 a woken sleeper is on its way (no other is woken until
  // it has tried again); bits 2-31 how many threads sleep (or are about to) on wake_.
  static constexpr uint32_t kLocked = 1, kWaking = 2, kSleeper = 4;

  void lock_contended() noexcept;
  void wake_one(uint32_t seen) noexcept;

  std::atomic<uint32_t> state_{0};
  // Sleepers wait on this word, not on state_: lock and unlock change state_ all the time and
  // would wake them at once (EAGAIN); wake_one bumps this one.
  std::atomic<uint32_t> wake_{0};
};

/// A condition variable for FutexMutex, timed on std::chrono::steady_clock (CLOCK_MONOTONIC).
/// Notifying costs one atomic load when nobody waits. Wake-ups may be spurious: wait in a loop.
class FutexCondition {
 public:
  FutexCondition() = default;
  FutexCondition(const FutexCondition&) = delete;
  FutexCondition& operator=(const FutexCondition&) = delete;

  /// Wakes one waiter, if any.
  void notify_one() noexcept;
  /// Wakes every waiter.
  void notify_all() noexcept;
  /// Releases `lock`'s mutex, sleeps until notified (or spuriously woken), locks it again.
  void wait(std::unique_lock<FutexMutex>& lock) noexcept;
  /// As wait(), but returns false once `deadline` has passed.
  bool wait_until(std::unique_lock<FutexMutex>& lock,
                  std::chrono::steady_clock::time_point deadline) noexcept;

 private:
  bool wait_impl(std::unique_lock<FutexMutex>& lock,
                 const std::chrono::steady_clock::time_point* deadline) noexcept;

  // Bumped by every notify: a waiter sleeps only while it still holds the value it read under
  // the mutex, so a notify between its unlock and its sleep is never lost.
  std::atomic<uint32_t> sequence_{0};
  std::atomic<uint32_t> waiters_{0};
};

}  // namespace vscaler::controller
