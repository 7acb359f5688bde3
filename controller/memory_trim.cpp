#include "controller/memory_trim.h"

#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <cstdlib>
#include <utility>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

// jemalloc's control interface, present when the program links jemalloc (CMake's
// vscaler_allocator): declared weak, so the programs that keep glibc's malloc (the tests, the
// sanitizer builds) link without it and see null.
extern "C" int mallctl(const char* name, void* old_value, std::size_t* old_length, void* new_value,
                       std::size_t new_length) __attribute__((weak));

namespace vscaler::controller {

bool jemalloc_in_use() {
  return mallctl != nullptr;
}

void limit_malloc_arenas(int arenas) {
#if defined(__GLIBC__)
  // jemalloc's arenas are set before main (cmd/jemalloc_conf.cpp); glibc's malloc then serves
  // nothing worth capping.
  if (!jemalloc_in_use() && std::getenv("MALLOC_ARENA_MAX") == nullptr) {
    mallopt(M_ARENA_MAX, arenas);
  }
#else
  (void)arenas;
#endif
}

void map_large_allocations(std::size_t bytes) {
#if defined(__GLIBC__)
  // jemalloc gives large blocks extents of their own and returns them by decay.
  if (!jemalloc_in_use() && std::getenv("MALLOC_MMAP_THRESHOLD_") == nullptr) {
    mallopt(M_MMAP_THRESHOLD, static_cast<int>(std::min<std::size_t>(bytes, 32u << 20)));
  }
#else
  (void)bytes;
#endif
}

MemoryTrimmer::MemoryTrimmer(std::chrono::milliseconds min_interval, std::function<void()> trim)
    : min_interval_(min_interval), trim_(std::move(trim)) {
  if (!trim_) {
    trim_ = [] {
      if (jemalloc_in_use()) {
        // Every arena's unused dirty pages back to the OS now, without waiting for their decay
        // ("arena.<MALLCTL_ARENAS_ALL>.purge"; MALLCTL_ARENAS_ALL is 4096 in jemalloc 5).
        mallctl("arena.4096.purge", nullptr, nullptr, nullptr, 0);
        return;
      }
#if defined(__GLIBC__)
      malloc_trim(0);
#endif
    };
  }
}

MemoryTrimmer::~MemoryTrimmer() {
  stop();
}

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
  trim_();
  return true;
}

void MemoryTrimmer::start(std::function<bool()> idle) {
  std::lock_guard lock(mutex_);
  if (thread_.joinable() || stopping_) return;
  thread_ = std::thread([this, idle = std::move(idle)] { run(idle); });
}

void MemoryTrimmer::stop() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void MemoryTrimmer::run(const std::function<bool()>& idle) {
#ifdef SCHED_IDLE
  // Idle CPU priority: the trim walks every arena, and nothing waits for it.
  sched_param param{};
  pthread_setschedparam(pthread_self(), SCHED_IDLE, &param);
#endif
  // At least 10 ms between looks, so that a zero interval (tests) cannot make the thread spin.
  const auto period = std::max(min_interval_, std::chrono::milliseconds(10));
  std::unique_lock lock(mutex_);
  while (!wake_.wait_for(lock, period, [this] { return stopping_; })) {
    lock.unlock();
    if (worked_.load(std::memory_order_relaxed) && idle()) {
      worked_.store(false, std::memory_order_relaxed);
      maybe_trim();
    }
    lock.lock();
  }
}

}  // namespace vscaler::controller
