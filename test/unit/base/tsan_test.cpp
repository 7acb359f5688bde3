// base/tsan: a mutex that ends takes its lock-order history along. Meaningful in the unit-tsan
// suite, where ThreadSanitizer fails the binary (exit 66) on a lock-order report; elsewhere
// mutex_destroyed compiles to nothing and this only checks the locks work.
#include "base/tsan.h"

#include <doctest/doctest.h>

#include <mutex>
#include <new>
#include <shared_mutex>

using namespace vscaler;

namespace {

// Two mutexes in fixed storage, so that the second pair takes the first pair's addresses, as a
// later test case's objects take an earlier one's stack slots.
template <typename Mutex>
struct Slots {
  alignas(Mutex) unsigned char first[sizeof(Mutex)];
  alignas(Mutex) unsigned char second[sizeof(Mutex)];
};

// Locks `outer`, then `inner`, as an owner of nested locks does.
template <typename Mutex>
bool nested(Mutex& outer, Mutex& inner) {
  std::scoped_lock outer_lock(outer);
  std::scoped_lock inner_lock(inner);
  return true;
}

// One object's lifetime: two mutexes at `outer` and `inner`, locked in that order, then ended.
template <typename Mutex>
bool lifetime(unsigned char* outer_at, unsigned char* inner_at) {
  auto* outer = new (outer_at) Mutex;
  auto* inner = new (inner_at) Mutex;
  bool locked = nested(*outer, *inner);
  base::mutex_destroyed(outer);
  base::mutex_destroyed(inner);
  outer->~Mutex();
  inner->~Mutex();
  return locked;
}

}  // namespace

TEST_CASE("mutexes at reused addresses, locked in the other order, are no lock-order cycle") {
  // Without mutex_destroyed ThreadSanitizer reports "lock-order-inversion (potential deadlock)"
  // here: it takes the second lifetime's mutexes for the first's.
  Slots<std::mutex> plain;
  CHECK(lifetime<std::mutex>(plain.first, plain.second));
  CHECK(lifetime<std::mutex>(plain.second, plain.first));
  Slots<std::shared_mutex> shared;
  CHECK(lifetime<std::shared_mutex>(shared.first, shared.second));
  CHECK(lifetime<std::shared_mutex>(shared.second, shared.first));
}
