// A pool of threads running jobs by key, where a newer job of a key replaces the one still
// waiting (client-go's workqueue rules): the recommender's status writes. A pass hands over one
// publication per scaler and goes on; when the API server is slower than the pass (the first
// passes of 10,000 scalers), the next pass's publication of a scaler whose write still waits
// takes its place, so the backlog never exceeds one write per scaler, and the API server never
// gets a write that a newer one already outdated.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace vscaler::base {

/// Runs submitted jobs on `threads` threads, oldest key first; at most one job per key waits, and
/// a key runs on one thread at a time (a job submitted while its key runs waits for it).
class CoalescingPool {
 public:
  /// A job; it must not throw (its caller catches and counts what it must).
  using Job = std::function<void()>;

  /// Starts `threads` (at least 1) threads.
  explicit CoalescingPool(std::size_t threads);
  /// Stops (as stop()).
  ~CoalescingPool();
  CoalescingPool(const CoalescingPool&) = delete;
  CoalescingPool& operator=(const CoalescingPool&) = delete;

  /// Queues `job` for `key`, never waiting. A job of `key` still waiting is replaced (it keeps
  /// its place in line) and true is returned: the newer job holds everything the older would
  /// have done. False (the job is not run) once the pool stopped.
  bool submit(const std::string& key, Job job);
  /// Returns once every job submitted so far has finished (none waiting, none running).
  void wait_idle();
  /// Drops the jobs still waiting (running ones finish); returns how many were dropped.
  std::size_t drop_waiting();
  /// Lets running jobs finish, drops those still waiting, joins the threads. Idempotent.
  void stop();
  /// Jobs waiting to run.
  std::size_t waiting() const;
  /// Jobs replaced by a newer one of their key since the pool started.
  std::size_t replaced() const;

 private:
  void run();
  // The first key in line that is not running, or order_.end(); with mutex_ held.
  std::deque<std::string>::iterator next_runnable();

  mutable std::mutex mutex_;
  std::condition_variable ready_;    // a job was queued, a key stopped running, or stopping
  std::condition_variable idle_;     // the last job finished
  std::deque<std::string> order_;    // waiting keys, oldest first
  std::map<std::string, Job> jobs_;  // the waiting job of each key in order_
  std::set<std::string> running_;    // keys a thread is running
  std::size_t replaced_ = 0;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace vscaler::base
