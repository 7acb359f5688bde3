// Waiting in unit tests for something another thread does: polls a condition until it holds or
// a deadline passes (generous deadlines: they bound a hang, they do not measure speed).
#pragma once

#include <chrono>
#include <functional>
#include <thread>

namespace vscaler::testing {

/// True as soon as `condition` holds, polled every 5 ms; false if it still does not after
/// `timeout`.
inline bool eventually(const std::function<bool()>& condition,
                       std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (condition()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return condition();
}

}  // namespace vscaler::testing
