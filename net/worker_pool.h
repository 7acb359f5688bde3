// A fixed set of threads running jobs from a bounded queue: where the admission front end hands
// complete requests, so that handlers never run on (and never stall) the event loop.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace vscaler::net {

/// Runs submitted jobs on `threads` threads, oldest first.
class WorkerPool {
 public:
  /// A job; it must not throw (the front end's jobs catch and count everything themselves).
  using Job = std::function<void()>;

  /// Starts `threads` (at least 1) threads; at most `capacity` jobs wait at any time.
  WorkerPool(std::size_t threads, std::size_t capacity);
  /// Stops (as stop()).
  ~WorkerPool();
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  /// Queues `job`; false (and the job is not run) when the queue is full or the pool stopped.
  bool submit(Job job);
  /// Lets running jobs finish, drops those still waiting, joins the threads. Idempotent.
  void stop();
  /// Jobs waiting to run.
  std::size_t waiting() const;

 private:
  void run();

  const std::size_t capacity_;
  mutable std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<Job> jobs_;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace vscaler::net
