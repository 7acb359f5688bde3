// base/rate_limiter: the token bucket the recommender's status writes share.
#include "base/rate_limiter.h"

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

using namespace vscaler;
using namespace std::chrono_literals;
using Clock = base::RateLimiter::Clock;

TEST_CASE("a full bucket lends its burst at once, then one token per 1/rate") {
  base::RateLimiter limiter(100, 3);  // 10 ms a token
  const Clock::time_point t0 = Clock::now() + 1s;
  for (int i = 0; i < 3; ++i) CHECK(limiter.reserve(t0) == t0);
  // Each further caller gets the next free instant, not the same one.
  CHECK(limiter.reserve(t0) - t0 == 10ms);
  CHECK(limiter.reserve(t0) - t0 == 20ms);
  CHECK(limiter.reserve(t0) - t0 == 30ms);
  // 100 ms later the debt (3 tokens) is paid and 7 more accrued, but the bucket holds 3 at most.
  const Clock::time_point t1 = t0 + 100ms;
  for (int i = 0; i < 3; ++i) CHECK(limiter.reserve(t1) == t1);
  CHECK(limiter.reserve(t1) - t1 == 10ms);
}

TEST_CASE("a rate of zero does not limit") {
  base::RateLimiter limiter(0, 1);
  const Clock::time_point t0 = Clock::now();
  for (int i = 0; i < 1000; ++i) CHECK(limiter.reserve(t0) == t0);
  CHECK(limiter.per_second() == 0);
}

TEST_CASE("threads sharing the bucket get no more than burst + rate x time between them") {
  base::RateLimiter limiter(200, 5);  // 5 ms a token
  std::atomic<int> taken{0};
  const auto started = Clock::now();
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 10; ++i) {
        limiter.acquire();
        ++taken;
      }
    });
  }
  for (auto& thread : threads) thread.join();
  const double seconds = std::chrono::duration<double>(Clock::now() - started).count();
  CHECK(taken.load() == 40);
  // 40 tokens: 5 at once, 35 at 200/s = 175 ms at least (sleep_until never wakes early).
  CHECK(seconds >= 0.175);
}

TEST_CASE("try_acquire takes a token only when the bucket holds one, and never goes in debt") {
  base::RateLimiter limiter(10, 2);  // 100 ms a token
  const Clock::time_point t0 = Clock::now() + 1s;
  CHECK(limiter.try_acquire(t0));
  CHECK(limiter.try_acquire(t0));
  CHECK_FALSE(limiter.try_acquire(t0));
  CHECK_FALSE(limiter.try_acquire(t0 + 50ms));
  CHECK(limiter.try_acquire(t0 + 100ms));            // refused calls took nothing: one token came
  CHECK(limiter.reserve(t0 + 100ms) == t0 + 200ms);  // and reserve still queues after it
  base::RateLimiter unlimited(0, 1);
  for (int i = 0; i < 10; ++i) CHECK(unlimited.try_acquire(t0));
}
