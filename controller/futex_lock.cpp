// FutexMutex and FutexCondition: the slow paths (sleeping, waking) and the futex calls. The mutex
// counts its sleepers in the lock word and keeps a "waking" bit there, as Go's sync.Mutex does
// (mutexWoken): an unlock wakes one sleeper only when none is already on its way, so a thread that
// keeps taking the lock makes one system call per wake-up cycle, not one per unlock. Sleepers wait
// on a separate counter that only wake-ups change, so they stay asleep while the lock word moves;
// their sleep is timed (kBackstop), and unlocks spend their patience before they wake one.
// The condition is a sequence counter that waiters sleep on.
#include "controller/futex_lock.h"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <ctime>

namespace vscaler::controller {
namespace {

// Sleeps while *word == expected, until woken or (when `deadline` is set) until that time on
// CLOCK_MONOTONIC; returns the errno (0 when woken, ETIMEDOUT, EAGAIN when *word had changed).
int futex_wait(std::atomic<uint32_t>* word, uint32_t expected,
               const std::chrono::steady_clock::time_point* deadline) noexcept {
  timespec at{};
  const timespec* timeout = nullptr;
  if (deadline) {
    auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(deadline->time_since_epoch());
    if (ns.count() < 0) ns = std::chrono::nanoseconds::zero();
    at.tv_sec = static_cast<time_t>(ns.count() / 1'000'000'000);
    at.tv_nsec = static_cast<long>(ns.count() % 1'000'000'000);
    timeout = &at;
  }
  // FUTEX_WAIT_BITSET takes an absolute time on CLOCK_MONOTONIC (steady_clock's clock).
  long rc = syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAIT_BITSET_PRIVATE,
                    expected, timeout, nullptr, FUTEX_BITSET_MATCH_ANY);
  return rc == 0 ? 0 : errno;
}

void futex_wake(std::atomic<uint32_t>* word, int count) noexcept {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAKE_PRIVATE, count, nullptr, nullptr,
          0);
}

// std::atomic<uint32_t> must be the bare word the kernel reads.
static_assert(sizeof(std::atomic<uint32_t>) == sizeof(uint32_t));
static_assert(std::atomic<uint32_t>::is_always_lock_free);

}  // namespace

void FutexMutex::lock_contended() noexcept {
  uint32_t seen = state_.load(std::memory_order_relaxed);
  for (;;) {
    if ((seen & kLocked) == 0) {
      if (state_.compare_exchange_weak(seen, seen | kLocked, std::memory_order_acquire,
                                       std::memory_order_relaxed)) {
        return;
      }
      continue;
    }
    // Read the wake counter before registering: a wake-up after the registration bumps it, so
    // the futex call below either sleeps before it and is woken or sees it and returns.
    uint32_t wake = wake_.load(std::memory_order_acquire);
    if (!state_.compare_exchange_weak(seen, seen + kSleeper, std::memory_order_acq_rel,
                                      std::memory_order_relaxed)) {
      continue;
    }
    patience_.store(kPatience, std::memory_order_relaxed);
    auto backstop = std::chrono::steady_clock::now() + kBackstop;
    futex_wait(&wake_, wake, &backstop);
    // Unregister, and let unlockers wake the next sleeper again (an early clear by a thread that
    // was not the one woken only costs a needless wake-up).
    seen = state_.load(std::memory_order_relaxed);
    while (!state_.compare_exchange_weak(seen, (seen - kSleeper) & ~kWaking,
                                         std::memory_order_acquire, std::memory_order_relaxed)) {
    }
    seen = (seen - kSleeper) & ~kWaking;
  }
}

void FutexMutex::wake_one(uint32_t seen, bool patient) noexcept {
  // The thread that unlocks is likely to lock again: let the sleeper sleep on a while (its
  // timed sleep ends the wait if this thread stops taking the lock).
  if (patient && patience_.load(std::memory_order_relaxed) > 0 &&
      patience_.fetch_sub(1, std::memory_order_relaxed) > 1) {
    return;
  }
  // Wake only while no thread holds the lock (a holder's unlock wakes instead) and none is
  // already on its way.
  do {
    if (seen < kSleeper || (seen & (kLocked | kWaking)) != 0) return;
    // Acquire: synchronises with the sleeper's registration, so the counter it read before
    // registering is older than the bump below.
  } while (!state_.compare_exchange_weak(seen, seen | kWaking, std::memory_order_acquire,
                                         std::memory_order_relaxed));
  wake_.fetch_add(1, std::memory_order_release);
  futex_wake(&wake_, 1);
}

void FutexCondition::notify_one() noexcept {
  if (waiters_.load(std::memory_order_relaxed) == 0) return;
  sequence_.fetch_add(1, std::memory_order_relaxed);
  futex_wake(&sequence_, 1);
}

void FutexCondition::notify_all() noexcept {
  if (waiters_.load(std::memory_order_relaxed) == 0) return;
  sequence_.fetch_add(1, std::memory_order_relaxed);
  futex_wake(&sequence_, INT_MAX);
}

void FutexCondition::wait(std::unique_lock<FutexMutex>& lock) noexcept {
  wait_impl(lock, nullptr);
}

bool FutexCondition::wait_until(std::unique_lock<FutexMutex>& lock,
                                std::chrono::steady_clock::time_point deadline) noexcept {
  return wait_impl(lock, &deadline);
}

bool FutexCondition::wait_impl(std::unique_lock<FutexMutex>& lock,
                               const std::chrono::steady_clock::time_point* deadline) noexcept {
  // Both under the mutex: a notifier that changed the state after this waiter looked at it sees
  // the waiter counted, and bumps the sequence read here.
  waiters_.fetch_add(1, std::memory_order_relaxed);
  uint32_t sequence = sequence_.load(std::memory_order_relaxed);
  // This thread goes to sleep: a thread sleeping on the mutex must not wait for its patience.
  FutexMutex* mutex = lock.release();
  mutex->release(/*patient=*/false);
  int rc = futex_wait(&sequence_, sequence, deadline);
  waiters_.fetch_sub(1, std::memory_order_relaxed);
  mutex->lock();
  lock = std::unique_lock<FutexMutex>(*mutex, std::adopt_lock);
  return rc != ETIMEDOUT;
}

}  // namespace vscaler::controller
