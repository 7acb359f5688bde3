// What a burst of reconciles leaves in the heap, for the trimmer's tests (memory_trim_test.cpp
// with glibc's malloc, memory_trim_jemalloc_test.cpp with jemalloc): many small blocks allocated
// and freed on a worker thread, the one allocated last kept (a stored object).
#pragma once

#include <doctest/doctest.h>

#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "controller/memory_trim.h"

namespace vscaler::testing {

/// This process's VmRSS in KiB (-1 when /proc does not say).
inline long rss_kib() {
  std::ifstream status("/proc/self/status");
  std::string field;
  long value = 0;
  while (status >> field) {
    if (field == "VmRSS:") {
      status >> value;
      return value;
    }
  }
  return -1;
}

/// The burst's outcome: the kept block, and the RSS at its height and once it was freed.
struct FreedBurst {
  std::unique_ptr<char[]> pinned;
  long during_kib = 0;
  long after_free_kib = 0;
};

/// Allocates ~190 MiB in 480-byte blocks on a worker thread, touching each, keeps one more block
/// and frees the rest.
inline FreedBurst freed_burst() {
  FreedBurst out;
  std::thread worker([&out] {
    std::vector<std::unique_ptr<char[]>> burst;
    for (int i = 0; i < 400'000; ++i) {
      burst.emplace_back(new char[480]);
      burst.back()[0] = static_cast<char>(i);  // touch the page
    }
    out.pinned.reset(new char[480]);
    out.pinned[0] = 1;
    out.during_kib = rss_kib();
    burst.clear();
  });
  worker.join();
  out.after_free_kib = rss_kib();
  return out;
}

/// The RSS (KiB) at a freed burst's height, once it was freed, and after a MemoryTrimmer's
/// default trim (logged with the test's checks).
struct BurstRss {
  long during = 0;
  long after_free = 0;
  long after_trim = 0;
};

/// A freed burst, then the default trim.
inline BurstRss burst_then_trim() {
  FreedBurst burst = freed_burst();
  controller::MemoryTrimmer trimmer;
  REQUIRE(trimmer.maybe_trim());
  BurstRss rss{burst.during_kib, burst.after_free_kib, rss_kib()};
  MESSAGE("RSS KiB during " << rss.during << ", after free " << rss.after_free << ", after trim "
                            << rss.after_trim);
  return rss;
}

}  // namespace vscaler::testing
