// AdaptiveMutex and AdaptiveCondition: glibc's adaptive pthread mutex, which spins briefly before
// sleeping, and a condition variable for it. The work queue's critical sections are tens of
// nanoseconds, so a contending worker nearly always gets the lock while spinning; a plain mutex
// puts it to sleep instead, and with more workers than cores the sleep/wake convoys cost 2-4x the
// throughput (bench/queue_bench, 4 threads on 2 cores). std::mutex cannot be made adaptive: its
// attributes are fixed at construction, and re-initialising the native handle of a constructed
// std::mutex is undefined behaviour. Without glibc these are a plain pthread mutex.
#pragma once

#include <pthread.h>

#include <cerrno>
#include <chrono>
#include <ctime>
#include <mutex>

namespace vscaler::controller {

/// A mutex (Lockable: works with std::lock_guard and std::unique_lock) that spins before it
/// sleeps.
class AdaptiveMutex {
 public:
  AdaptiveMutex() noexcept {
    pthread_mutexattr_t attr;
    pthread_mutexattr_init(&attr);
#ifdef PTHREAD_ADAPTIVE_MUTEX_INITIALIZER_NP
    pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_ADAPTIVE_NP);
#endif
    pthread_mutex_init(&mutex_, &attr);
    pthread_mutexattr_destroy(&attr);
  }
  ~AdaptiveMutex() {
    pthread_mutex_destroy(&mutex_);
  }
  AdaptiveMutex(const AdaptiveMutex&) = delete;
  AdaptiveMutex& operator=(const AdaptiveMutex&) = delete;

  void lock() noexcept {
    pthread_mutex_lock(&mutex_);
  }
  bool try_lock() noexcept {
    return pthread_mutex_trylock(&mutex_) == 0;
  }
  void unlock() noexcept {
    pthread_mutex_unlock(&mutex_);
  }
  /// For AdaptiveCondition.
  pthread_mutex_t* native_handle() noexcept {
    return &mutex_;
  }

 private:
  pthread_mutex_t mutex_;
};

/// A condition variable for AdaptiveMutex, timed on the monotonic clock (std::chrono::
/// steady_clock's, so deadlines do not move with the wall clock).
class AdaptiveCondition {
 public:
  AdaptiveCondition() noexcept {
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&cond_, &attr);
    pthread_condattr_destroy(&attr);
  }
  ~AdaptiveCondition() { pthread_cond_destroy(&cond_); }
  AdaptiveCondition(const AdaptiveCondition&) = delete;
  AdaptiveCondition& operator=(const AdaptiveCondition&) = delete;

  void notify_one() noexcept { pthread_cond_signal(&cond_); }
  void notify_all() noexcept { pthread_cond_broadcast(&cond_); }
  /// Waits until notified (or a spurious wake-up); `lock` must hold the mutex.
  void wait(std::unique_lock<AdaptiveMutex>& lock) noexcept {
    pthread_cond_wait(&cond_, lock.mutex()->native_handle());
  }
  /// As wait(), but returns false once `deadline` has passed.
  bool wait_until(std::unique_lock<AdaptiveMutex>& lock,
                  std::chrono::steady_clock::time_point deadline) noexcept {
    auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(deadline.time_since_epoch());
    if (ns.count() < 0) ns = std::chrono::nanoseconds::zero();
    timespec at{};
    at.tv_sec = static_cast<time_t>(ns.count() / 1'000'000'000);
    at.tv_nsec = static_cast<long>(ns.count() % 1'000'000'000);
    return pthread_cond_timedwait(&cond_, lock.mutex()->native_handle(), &at) != ETIMEDOUT;
  }

 private:
  pthread_cond_t cond_;
};

}  // namespace vscaler::controller
