// MemoryTrimmer: rate limiting, and (with glibc) that memory freed in another thread's arena is
// given back to the OS, which glibc does not do by itself while a live block sits above it;
// map_large_allocations: big buffers keep pages of their own.
#include "controller/memory_trim.h"

#include <doctest/doctest.h>

#include "test/unit/controller/memory_burst.h"

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include <atomic>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

using vscaler::controller::MemoryTrimmer;

TEST_CASE("memory trimmer: at most once per interval, then again") {
  MemoryTrimmer trimmer(std::chrono::milliseconds(50));
  CHECK(trimmer.maybe_trim());
  CHECK_FALSE(trimmer.maybe_trim());
  std::this_thread::sleep_for(std::chrono::milliseconds(60));
  CHECK(trimmer.maybe_trim());
  MemoryTrimmer always(std::chrono::milliseconds(0));
  CHECK(always.maybe_trim());
  CHECK(always.maybe_trim());
}

#if defined(__GLIBC__) && !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
TEST_CASE("memory trimmer: a burst freed in a worker's arena leaves the RSS") {
  // Like a burst of reconciles: a worker thread parses many small objects and frees them, but a
  // block allocated last stays alive (a stored object), so glibc cannot shrink that arena.
  const auto [during, after_free, after_trim] = vscaler::testing::burst_then_trim();
  CHECK(after_free > during - 50'000);       // glibc kept most of the ~190 MiB burst
  CHECK(after_trim < after_free - 100'000);  // the trim gave it back
}
#endif

#if defined(__GLIBC__) && !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
TEST_CASE("large allocations: mapped and unmapped whole, also after a larger one was freed") {
  // glibc's own threshold rises to the largest mapped block freed (here 4 MiB), and the next
  // 1 MiB buffer would come from the heap; fixed at 256 KiB, it gets pages of its own.
  vscaler::controller::map_large_allocations(256 << 10);
  std::unique_ptr<char[]> large(new char[4 << 20]);
  large[0] = 1;
  large.reset();
  const int mapped_before = mallinfo2().hblks;
  std::unique_ptr<char[]> next(new char[1 << 20]);
  next[0] = 1;
  CHECK(mallinfo2().hblks == mapped_before + 1);
  next.reset();
  CHECK(mallinfo2().hblks == mapped_before);  // and its pages went back on free
}
#endif

TEST_CASE("memory trimmer: trims on its own thread once work was noted and the caller is idle") {
  // malloc_trim ran on a reconcile worker (it takes the arena locks the webhook's threads share);
  // the trimmer's own thread does it now, only after a burst (work noted) has ended (idle).
  std::mutex mutex;
  std::vector<std::thread::id> trimmed_on;
  MemoryTrimmer trimmer(std::chrono::milliseconds(10), [&] {
    std::lock_guard lock(mutex);
    trimmed_on.push_back(std::this_thread::get_id());
  });
  std::atomic<bool> idle{false};
  trimmer.start([&] { return idle.load(); });
  auto trims = [&] {
    std::lock_guard lock(mutex);
    return trimmed_on.size();
  };
  auto wait_for_trims = [&](std::size_t n) {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (trims() < n && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return trims() >= n;
  };
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  CHECK(trims() == 0);  // no work noted: nothing to give back
  trimmer.note_work();
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  CHECK(trims() == 0);  // still busy
  idle = true;
  REQUIRE(wait_for_trims(1));
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  CHECK(trims() == 1);  // once per burst
  trimmer.stop();
  std::lock_guard lock(mutex);
  CHECK(trimmed_on.front() != std::this_thread::get_id());
}
