#include "base/rate_limiter.h"

#include <algorithm>
#include <thread>

namespace vscaler::base {

RateLimiter::RateLimiter(double per_second, double burst)
    : per_second_(std::max(0.0, per_second)),
      burst_(std::max(1.0, burst)),
      tokens_(burst_),
      refilled_(Clock::now()) {}

void RateLimiter::refill(Clock::time_point now) {
  if (now > refilled_) {
    const double elapsed = std::chrono::duration<double>(now - refilled_).count();
    tokens_ = std::min(burst_, tokens_ + elapsed * per_second_);
    refilled_ = now;
  }
}

bool RateLimiter::try_acquire(Clock::time_point now) {
  if (per_second_ <= 0) return true;
  std::lock_guard lock(mutex_);
  refill(now);
  if (tokens_ < 1) return false;
  tokens_ -= 1;
  return true;
}

RateLimiter::Clock::time_point RateLimiter::reserve(Clock::time_point now) {
  if (per_second_ <= 0) return now;
  std::lock_guard lock(mutex_);
  refill(now);
  tokens_ -= 1;
  if (tokens_ >= 0) return now;
  // In debt: this token exists once the debt is paid back at the rate.
  const auto wait = std::chrono::duration<double>(-tokens_ / per_second_);
  return refilled_ + std::chrono::duration_cast<Clock::duration>(wait);
}

void RateLimiter::acquire() {
  const Clock::time_point at = reserve(Clock::now());
  std::this_thread::sleep_until(at);
}

}  // namespace vscaler::base
