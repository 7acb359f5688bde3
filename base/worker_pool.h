// A fixed set of threads running jobs from a bounded queue: where the admission front end hands
// complete requests (so that handlers never run on, and never stall, the event loop). The
// recommender's status writes, one per scaler and replaceable, go to base::CoalescingPool.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace vscaler::base {

/// Runs submitted jobs on `threads` threads, oldest first.
class WorkerPool {
 public:
  /// A job; it must not throw (its caller catches and counts what it must).
  using Job = std::function<void()>;

  /// Starts `threads` (at least 1) threads; at most `capacity` jobs wait at any time.
  WorkerPool(std::size_t threads, std::size_t capacity);
  /// Stops (as stop()).
  ~WorkerPool();
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  /// Queues `job`; false (and the job is not run) when the queue is full or the pool stopped.
  /// For a producer that must never wait (an event loop).
  bool submit(Job job);
  /// Returns once every job submitted so far has finished (none waiting, none running).
  void wait_idle();
  /// Lets running jobs finish, drops those still waiting, joins the threads. Idempotent.
  void stop();
  /// Jobs waiting to run.
  std::size_t waiting() const;

 private:
  void run();

  const std::size_t capacity_;
  mutable std::mutex mutex_;
  std::condition_variable ready_;  // a job was queued, or stopping
  std::condition_variable idle_;   // the last job finished
  std::deque<Job> jobs_;
  std::size_t running_ = 0;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace vscaler::base
