// Gate: holds the test jobs that wait on it (a worker kept busy) until the test opens it.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>

namespace vscaler::testing {

/// Holds the jobs that wait on it until open() (or 5 s: a failing test must still end).
class Gate {
 public:
  void wait() {
    std::unique_lock lock(mutex_);
    opened_cv_.wait_for(lock, std::chrono::seconds(5), [this] { return opened_; });
  }
  void open() {
    {
      std::lock_guard lock(mutex_);
      opened_ = true;
    }
    opened_cv_.notify_all();
  }

 private:
  std::mutex mutex_;
  std::condition_variable opened_cv_;
  bool opened_ = false;
};

}  // namespace vscaler::testing
