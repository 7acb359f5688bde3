// base/worker_pool: the bounded pool behind the admission front end.
#include "base/worker_pool.h"

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "test/unit/support/gate.h"

using namespace vscaler;
using vscaler::testing::Gate;
using namespace std::chrono_literals;

namespace {}  // namespace

TEST_CASE("submit refuses past the capacity, and takes jobs again once there is room") {
  base::WorkerPool pool(1, 2);
  Gate gate;
  std::atomic<int> ran{0};
  auto job = [&] {
    gate.wait();
    ++ran;
  };
  REQUIRE(pool.submit(job));
  // The thread takes the first; two more fill the queue.
  for (int i = 0; i < 100 && pool.waiting() != 0; ++i) std::this_thread::sleep_for(1ms);
  REQUIRE(pool.submit(job));
  REQUIRE(pool.submit(job));
  CHECK_FALSE(pool.submit(job));  // full: refused, never run
  gate.open();
  pool.wait_idle();
  CHECK(ran.load() == 3);
  REQUIRE(pool.submit(job));  // room again
  pool.wait_idle();
  CHECK(ran.load() == 4);
  CHECK(pool.waiting() == 0);
}

TEST_CASE("wait_idle returns only after the running jobs finished, on every thread") {
  base::WorkerPool pool(4, 40);
  std::atomic<int> finished{0};
  for (int i = 0; i < 40; ++i) {
    REQUIRE(pool.submit([&] {
      std::this_thread::sleep_for(1ms);
      ++finished;
    }));
  }
  pool.wait_idle();
  CHECK(finished.load() == 40);
  pool.wait_idle();  // idle already: returns at once
}

TEST_CASE("stop drops the waiting jobs, and later submissions are refused") {
  base::WorkerPool pool(1, 4);
  Gate gate;
  std::atomic<int> ran{0};
  REQUIRE(pool.submit([&] {
    gate.wait();
    ++ran;
  }));
  for (int i = 0; i < 100 && pool.waiting() != 0; ++i) std::this_thread::sleep_for(1ms);
  REQUIRE(pool.submit([&] { ++ran; }));
  std::thread stopper([&] { pool.stop(); });
  std::this_thread::sleep_for(10ms);
  gate.open();
  stopper.join();
  CHECK(ran.load() == 1);  // the running one finished; the waiting one was dropped
  CHECK_FALSE(pool.submit([] {}));
  pool.wait_idle();  // nothing left: returns
}
