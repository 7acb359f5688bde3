// MemoryTrimmer: hands the heap memory that the allocator keeps after a burst of work back to the
// OS (glibc's malloc_trim, or a purge of jemalloc's arenas when the program links jemalloc, as the
// vscaler binary does), from a low-priority thread of its own, never from a reconcile worker.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <mutex>
#include <thread>

namespace vscaler::controller {

/// True when the program allocates with jemalloc (linked in by CMake's vscaler_allocator, as the
/// vscaler binary is): the functions below then act on jemalloc, not glibc's malloc.
bool jemalloc_in_use();

/// Caps glibc's malloc arenas (mallopt M_ARENA_MAX) unless MALLOC_ARENA_MAX is set in the
/// environment. glibc makes up to 8 per core as threads contend (workers, webhook pool, informer,
/// resync); each keeps its own free memory, so a burst on many threads leaves RSS far above the
/// live heap. Call first in main, before any thread starts. A no-op without glibc, and with
/// jemalloc (whose arenas cmd/jemalloc_conf.cpp sets).
void limit_malloc_arenas(int arenas);

/// Fixes glibc's mmap threshold at `bytes` (mallopt M_MMAP_THRESHOLD) unless
/// MALLOC_MMAP_THRESHOLD_ is set in the environment: every block of that size or more gets pages
/// of its own, returned to the OS when freed. glibc's default threshold rises to the largest
/// block freed so far (up to 32 MiB), after which the big transient buffers of a list (a page's
/// body, simdjson's parser sized to it: 8 MiB for 500 pods) come from the heap, fragment it, and
/// stay in the RSS. 3,000 scalers over 3,000 pods (bench/tools/recommender_pass.sh, interleaved
/// runs): peak RSS 45-53 MiB with the default, 41-42 MiB with 256 KiB. Call first in main,
/// before any thread starts. A no-op without glibc, and with jemalloc.
void map_large_allocations(std::size_t bytes);

/// glibc's malloc keeps freed memory in its arenas. After the burst of reconciles that follows a
/// start or a relist (each one parses a whole Deployment), the operator's RSS stayed at two to
/// three times its live heap: with 10,000 scalers, 216-399 MiB of RSS for 110-140 MiB in use
/// (bench/sections/scale.sh). malloc_trim(0) returns the free pages of every arena, but takes the
/// arena locks that the webhook's and workers' allocations share: it must not run on a hot path.
/// maybe_trim() trims at most once per interval (thread-safe: concurrent callers, one trims).
/// start() runs it on a thread of its own at idle CPU priority, once work was noted since the last
/// trim and the caller's idle() says the burst is over. With jemalloc, which gives pages back by
/// decay as its arenas allocate, the trim purges what an idle process would otherwise keep. A
/// no-op with neither.
class MemoryTrimmer {
 public:
  /// `trim` gives the memory back (default: malloc_trim(0), or with jemalloc a purge of every
  /// arena); tests pass a recorder.
  explicit MemoryTrimmer(std::chrono::milliseconds min_interval = std::chrono::seconds(10),
                         std::function<void()> trim = {});
  /// Stops the thread.
  ~MemoryTrimmer();
  MemoryTrimmer(const MemoryTrimmer&) = delete;
  MemoryTrimmer& operator=(const MemoryTrimmer&) = delete;

  /// Trims unless a trim ran less than min_interval ago; true when this call trimmed.
  bool maybe_trim();
  /// Says that work allocated memory since the last trim (one relaxed atomic store: call it from
  /// workers freely).
  void note_work() { worked_.store(true, std::memory_order_relaxed); }
  /// Starts the trimming thread: every min_interval, when work was noted and idle() is true, it
  /// trims. `idle` runs on that thread and must be thread-safe and cheap. Call once.
  void start(std::function<bool()> idle);
  /// Stops and joins the thread; idempotent.
  void stop();

 private:
  static constexpr int64_t kNever = std::numeric_limits<int64_t>::min();
  void run(const std::function<bool()>& idle);

  std::chrono::milliseconds min_interval_;
  std::function<void()> trim_;
  std::atomic<int64_t> last_ns_{kNever};  ///< steady_clock time of the last trim
  std::atomic<bool> worked_{false};
  std::mutex mutex_;  // guards stopping_
  std::condition_variable wake_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace vscaler::controller
