// FutexMutex and FutexCondition: mutual exclusion under more threads than cores, no lost wake-up
// (a ping-pong that hangs if one notify goes missing), and timed waits on the monotonic clock.
#include "controller/futex_lock.h"

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>
#include <vector>

using namespace std::chrono_literals;
using vscaler::controller::FutexCondition;
using vscaler::controller::FutexMutex;

TEST_CASE("FutexMutex: no two threads inside at once, no increment lost") {
  FutexMutex mutex;
  std::atomic<int> inside{0};
  std::atomic<bool> overlap{false};
  long counter = 0;  // plain: only correct if the lock excludes (TSan checks it too)
  constexpr int kThreads = 8;
  constexpr int kRounds = 20000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < kRounds; ++i) {
        std::lock_guard lock(mutex);
        if (inside.fetch_add(1) != 0) overlap = true;
        ++counter;
        if (i % 64 == 0) std::this_thread::yield();  // holders get preempted: sleepers pile up
        inside.fetch_sub(1);
      }
    });
  }
  for (auto& thread : threads) thread.join();
  CHECK_FALSE(overlap.load());
  CHECK(counter == long{kThreads} * kRounds);
}

TEST_CASE("FutexMutex: try_lock fails while held and succeeds once free") {
  FutexMutex mutex;
  mutex.lock();
  bool taken = true;
  std::thread([&] { taken = mutex.try_lock(); }).join();
  CHECK_FALSE(taken);
  mutex.unlock();
  CHECK(mutex.try_lock());
  mutex.unlock();
}

TEST_CASE("FutexMutex: a thread sleeping on the lock gets it once it is released (backstop)") {
  FutexMutex mutex;
  std::atomic<bool> got{false};
  mutex.lock();
  std::thread waiter([&] {
    std::lock_guard lock(mutex);
    got = true;
  });
  std::this_thread::sleep_for(50ms);  // let it go to sleep on the futex
  CHECK_FALSE(got.load());
  mutex.unlock();
  waiter.join();
  CHECK(got.load());
}

TEST_CASE("FutexCondition: a ping-pong of many rounds loses no wake-up") {
  FutexMutex mutex;
  FutexCondition turn_changed;
  int turn = 0;  // which of the two threads may go; each passes it on
  constexpr int kRounds = 20000;
  auto player = [&](int me) {
    for (int i = 0; i < kRounds; ++i) {
      std::unique_lock lock(mutex);
      while (turn != me) {
        // A bounded wait, so that a lost wake-up fails the test instead of hanging it.
        REQUIRE(turn_changed.wait_until(lock, std::chrono::steady_clock::now() + 10s));
      }
      turn = 1 - me;
      lock.unlock();
      turn_changed.notify_one();
    }
  };
  std::thread other(player, 1);
  player(0);
  other.join();
  CHECK(turn == 0);
}

TEST_CASE("FutexCondition: notify_all wakes every waiter") {
  FutexMutex mutex;
  FutexCondition changed;
  bool go = false;
  std::atomic<int> woken{0};
  std::vector<std::thread> waiters;
  for (int t = 0; t < 4; ++t) {
    waiters.emplace_back([&] {
      std::unique_lock lock(mutex);
      while (!go) changed.wait(lock);
      ++woken;
    });
  }
  std::this_thread::sleep_for(50ms);
  {
    std::lock_guard lock(mutex);
    go = true;
  }
  changed.notify_all();
  for (auto& waiter : waiters) waiter.join();
  CHECK(woken.load() == 4);
}

TEST_CASE("FutexCondition: wait_until times out at the deadline, holding the lock again") {
  FutexMutex mutex;
  FutexCondition never;
  std::unique_lock lock(mutex);
  auto start = std::chrono::steady_clock::now();
  bool notified = true;
  while (notified && std::chrono::steady_clock::now() < start + 100ms) {
    notified = never.wait_until(lock, start + 100ms);  // spurious wake-ups loop
  }
  auto waited = std::chrono::steady_clock::now() - start;
  CHECK_FALSE(notified);
  CHECK(waited >= 100ms);
  CHECK(waited < 5s);
  CHECK(lock.owns_lock());
  CHECK_FALSE(mutex.try_lock());  // still ours
  // A deadline in the past returns at once.
  CHECK_FALSE(never.wait_until(lock, start - 1s));
}

TEST_CASE("FutexCondition: a notify before the deadline ends the wait early") {
  FutexMutex mutex;
  FutexCondition changed;
  bool ready = false;
  std::thread notifier([&] {
    std::this_thread::sleep_for(20ms);
    {
      std::lock_guard lock(mutex);
      ready = true;
    }
    changed.notify_one();
  });
  std::unique_lock lock(mutex);
  auto start = std::chrono::steady_clock::now();
  while (!ready) {
    if (!changed.wait_until(lock, start + 10s)) break;
  }
  CHECK(ready);
  CHECK(std::chrono::steady_clock::now() - start < 5s);
  lock.unlock();
  notifier.join();
}
