// base/coalescing_pool: the recommender's status writes, one waiting job per key.
#include "base/coalescing_pool.h"

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "test/unit/support/gate.h"

using namespace vscaler;
using vscaler::testing::Gate;
using namespace std::chrono_literals;

namespace {

// Waits (up to 5 s) until `pool` holds `count` waiting jobs.
void wait_for_waiting(const base::CoalescingPool& pool, std::size_t count) {
  for (int i = 0; i < 5000 && pool.waiting() != count; ++i) std::this_thread::sleep_for(1ms);
}

// What the jobs ran, in order.
struct Ran {
  std::mutex mutex;
  std::vector<std::string> names;
  void add(const std::string& name) {
    std::lock_guard lock(mutex);
    names.push_back(name);
  }
};
// Keeps the pool's one thread busy on the job "busy" until `gate` opens.
void occupy(base::CoalescingPool& pool, Gate& gate, Ran& ran) {
  REQUIRE(pool.submit("busy", [&] {
    gate.wait();
    ran.add("busy");
  }));
  wait_for_waiting(pool, 0);
}
}  // namespace

TEST_CASE("a newer job of a waiting key replaces it and keeps its place in line") {
  base::CoalescingPool pool(1);
  Gate gate;
  Ran ran;
  occupy(pool, gate, ran);  // the thread holds "busy"
  REQUIRE(pool.submit("a", [&] { ran.add("a1"); }));
  REQUIRE(pool.submit("b", [&] { ran.add("b1"); }));
  REQUIRE(pool.submit("a", [&] { ran.add("a2"); }));
  CHECK(pool.waiting() == 2);
  CHECK(pool.replaced() == 1);
  gate.open();
  pool.wait_idle();
  CHECK(ran.names == std::vector<std::string>{"busy", "a2", "b1"});
}

TEST_CASE("a key never runs on two threads at once; its next job waits for the running one") {
  base::CoalescingPool pool(4);
  Gate gate;
  std::atomic<int> running{0};
  std::atomic<int> most{0};
  std::atomic<int> done{0};
  auto job = [&] {
    int now = ++running;
    int seen = most.load();
    while (now > seen && !most.compare_exchange_weak(seen, now)) {
    }
    gate.wait();
    --running;
    ++done;
  };
  REQUIRE(pool.submit("k", job));
  wait_for_waiting(pool, 0);  // running
  REQUIRE(pool.submit("k", job));
  std::this_thread::sleep_for(20ms);  // three idle threads could take it: none may
  CHECK(pool.waiting() == 1);
  CHECK(running.load() == 1);
  gate.open();
  pool.wait_idle();
  CHECK(done.load() == 2);
  CHECK(most.load() == 1);
}

TEST_CASE("distinct keys run on every thread at once") {
  base::CoalescingPool pool(3);
  Gate gate;
  std::atomic<int> started{0};
  for (const char* key : {"a", "b", "c", "d"}) {
    REQUIRE(pool.submit(key, [&] {
      ++started;
      gate.wait();
    }));
  }
  for (int i = 0; i < 5000 && started.load() < 3; ++i) std::this_thread::sleep_for(1ms);
  CHECK(started.load() == 3);
  CHECK(pool.waiting() == 1);
  gate.open();
  pool.wait_idle();
  CHECK(started.load() == 4);
}

TEST_CASE("drop_waiting and stop drop what waits, let the running job finish, refuse later jobs") {
  base::CoalescingPool pool(1);
  Gate gate;
  Ran ran;
  occupy(pool, gate, ran);
  REQUIRE(pool.submit("a", [&] { ran.add("a"); }));
  REQUIRE(pool.submit("b", [&] { ran.add("b"); }));
  CHECK(pool.drop_waiting() == 2);
  CHECK(pool.waiting() == 0);
  REQUIRE(pool.submit("c", [&] { ran.add("c"); }));
  std::thread opener([&] {
    // Opens once stop() refuses jobs (it dropped "c" then): the probe waits, replacing itself,
    // until then.
    for (int i = 0; i < 5000 && pool.submit("probe", [] {}); ++i) std::this_thread::sleep_for(1ms);
    gate.open();
  });
  pool.stop();  // "busy" finishes; "c" waits and is dropped
  opener.join();
  CHECK(ran.names == std::vector<std::string>{"busy"});
  CHECK_FALSE(pool.submit("d", [&] { ran.add("d"); }));
  pool.wait_idle();  // returns at once after stop
  pool.stop();       // idempotent
}

TEST_CASE("cancel drops a key's waiting job; the key submitted again runs once") {
  base::CoalescingPool pool(1);
  Gate gate;
  Ran ran;
  occupy(pool, gate, ran);
  REQUIRE(pool.submit("a", [&] { ran.add("a1"); }));
  REQUIRE(pool.submit("b", [&] { ran.add("b1"); }));
  CHECK(pool.pending("a"));
  CHECK_FALSE(pool.running("a"));
  CHECK(pool.running("busy"));
  CHECK(pool.cancel("a"));
  CHECK_FALSE(pool.pending("a"));
  CHECK_FALSE(pool.cancel("a"));     // nothing waits for it any more
  CHECK_FALSE(pool.cancel("busy"));  // running: it finishes
  CHECK(pool.pending("busy"));
  CHECK(pool.waiting() == 1);
  REQUIRE(pool.submit("a", [&] { ran.add("a2"); }));  // behind b now
  CHECK(pool.waiting() == 2);
  gate.open();
  pool.wait_idle();
  CHECK(ran.names == std::vector<std::string>{"busy", "b1", "a2"});
}
