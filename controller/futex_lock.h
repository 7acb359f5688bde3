// FutexMutex and FutexCondition: the work queue's lock and condition variable, on Linux futexes.
// The queue's critical sections are tens of nanoseconds, and its workers may outnumber the cores
// (bench/queue_bench runs 4 threads on 2). A thread that finds the lock taken does not spin: it
// sleeps until an unlock wakes it, and unlocks wake one sleeper at a time (a woken one must try
// again before the next is woken), and only after some patience: the next kPatience unlocks leave
// a new sleeper asleep, since the thread that keeps taking the lock does the work meanwhile, and a
// timed sleep (kBackstop) covers a holder that stops taking it. Contended work then runs in bursts
// on one core with its data in that core's cache, which is what makes client-go's queue fast on
// Go's scheduler (a blocked goroutine parks, and is readied on the releasing P, which runs it once
// the running goroutine blocks), instead of the cores trading the lock and the queue's cache
// lines on every call. A waiter on the condition releases the lock without patience.
//
// Measured with bench/queue_bench, 4 threads on 2 cores (an Intel Xeon VM, medians of alternating
// runs): glibc's adaptive mutex, which this replaces, spins up to 100 `pause` instructions, ~140
// cycles each on recent Intel cores against ~10 on AMD, so the same count was a short spin on one
// host and 4+ us on the other; it made 1.3M items/s here (client-go 3.7M). A spin bounded by time
// (300-8,000 TSC ticks) did no better than 1.2-1.9M (spinning successfully is what keeps both
// cores trading the lines), a plain futex mutex without spin 2.7M, this one 4.7M without the
// patience and about the same with it; with 2 threads on the 2 cores (no thread ever preempted,
// as with 4 on a larger host) the patience makes 4.2M instead of 1.5M (client-go 3.9M).
// Unlocking and notifying make a system call only when a thread sleeps.
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
/// when taken, without spinning. Not fair: a running thread may take it again and again before a
/// sleeper gets there (that is the point); a sleeper waits at most kPatience unlocks or
/// kBackstop, whichever comes first, before it tries again.
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
  /// Releases the lock; wakes one sleeper if some sleep, none is already on its way and the
  /// newest has been patient long enough.
  void unlock() noexcept { release(/*patient=*/true); }

  /// Unlocks this many times leave a new sleeper asleep (about 340 queue items of add+get+done,
  /// some 50 us of work on one core).
  static constexpr uint32_t kPatience = 1024;
  /// The longest a sleeper sleeps before it tries again, when no unlock woke it.
  static constexpr std::chrono::microseconds kBackstop{100};

 private:
  friend class FutexCondition;

  void release(bool patient) noexcept {
    uint32_t now = state_.fetch_sub(kLocked, std::memory_order_release) - kLocked;
    if (now >= kSleeper && (now & kWaking) == 0) wake_one(now, patient);
  }
  // The lock word: bit 0 locked; bit 1 a woken sleeper is on its way (no other is woken until
  // it has tried again); bits 2-31 how many threads sleep (or are about to) on wake_.
  static constexpr uint32_t kLocked = 1, kWaking = 2, kSleeper = 4;

  void lock_contended() noexcept;
  void wake_one(uint32_t seen, bool patient) noexcept;

  std::atomic<uint32_t> state_{0};
  // Sleepers wait on this word, not on state_: lock and unlock change state_ all the time and
  // would wake them at once (EAGAIN); wake_one bumps this one.
  std::atomic<uint32_t> wake_{0};
  // Unlocks left before one wakes a sleeper; each new sleeper sets it to kPatience.
  std::atomic<uint32_t> patience_{0};
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
  /// Releases `lock`'s mutex (waking a thread that sleeps on it at once, patience or not), sleeps
  /// until notified (or spuriously woken), locks it again.
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
