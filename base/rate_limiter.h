// A token bucket shared by threads: at most `burst` calls at once, then `per_second` on average.
// The recommender's status writes go through one, so that a pass over 10,000 scalers, however
// many threads carry it, asks the API server for a bounded rate of writes (what client-go's
// --kube-api-qps/--kube-api-burst do for VerticalPodAutoscaler).
#pragma once

#include <chrono>
#include <mutex>

namespace vscaler::base {

/// The bucket (see the file comment). Thread-safe.
class RateLimiter {
 public:
  using Clock = std::chrono::steady_clock;

  /// `per_second` > 0 tokens are added each second, up to `burst` (at least 1); the bucket
  /// starts full. `per_second` <= 0: no limit (acquire never waits).
  RateLimiter(double per_second, double burst);

  /// Takes a token, sleeping until there is one (never spinning). Callers are served in the
  /// order they ask: each takes the next free instant, so N waiting threads sleep N different
  /// times instead of waking together.
  void acquire();
  /// Takes a token at `now` and returns when it may be used (`now` when the bucket held one):
  /// acquire() without the sleep, for tests and for callers that sleep their own way.
  Clock::time_point reserve(Clock::time_point now);
  /// Takes a token at `now` if the bucket holds one; false (nothing taken) otherwise: for
  /// callers that refuse rather than wait.
  bool try_acquire(Clock::time_point now);

  /// The configured rate (0: unlimited).
  double per_second() const { return per_second_; }

 private:
  void refill(Clock::time_point now);  // with mutex_ held

  const double per_second_;
  const double burst_;
  std::mutex mutex_;
  double tokens_;               // may go below zero: tokens promised to sleepers
  Clock::time_point refilled_;  // when tokens_ was last brought up to date
};

}  // namespace vscaler::base
