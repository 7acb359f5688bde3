// The vscaler binary's allocator, jemalloc (CMake's vscaler_allocator, linked into this test as
// into the binary): its options from cmd/jemalloc_conf.cpp apply, a burst's freed memory goes back
// to the OS (glibc kept it until malloc_trim), and the MemoryTrimmer's purge names every arena.
// Under the sanitizers nothing links jemalloc: the test then checks that it is not seen as linked.
#include <doctest/doctest.h>

#include <cstddef>

#include "controller/memory_trim.h"
#include "test/unit/controller/memory_burst.h"

extern "C" int mallctl(const char* name, void* old_value, std::size_t* old_length, void* new_value,
                       std::size_t new_length) __attribute__((weak));

using vscaler::controller::jemalloc_in_use;
using vscaler::controller::MemoryTrimmer;

TEST_CASE("jemalloc: linked where CMake says, with the binary's options") {
  CHECK(jemalloc_in_use() == (VSCALER_JEMALLOC_LINKED != 0));
  if (!jemalloc_in_use()) return;
  unsigned arenas = 0;
  std::size_t length = sizeof arenas;
  REQUIRE(mallctl("opt.narenas", &arenas, &length, nullptr, 0) == 0);
  CHECK(arenas == 2);
  ssize_t decay = 0;
  length = sizeof decay;
  REQUIRE(mallctl("opt.muzzy_decay_ms", &decay, &length, nullptr, 0) == 0);
  CHECK(decay == 0);
}

TEST_CASE("jemalloc: the trimmer's purge gives a freed burst back at once") {
  if (!jemalloc_in_use()) return;  // the sanitizer builds: glibc's case is memory_trim_test's
  const auto [during, after_free, after_trim] = vscaler::testing::burst_then_trim();
  // Back by the trim at the latest (in this run most of it was back before: jemalloc purges as
  // its arenas go on allocating), where glibc kept it until malloc_trim.
  CHECK(after_trim < during - 150'000);
  // The purge the trimmer asks for is one jemalloc knows (MALLCTL_ARENAS_ALL: every arena).
  CHECK(mallctl("arena.4096.purge", nullptr, nullptr, nullptr, 0) == 0);
}
