// A pool of threads running jobs by key, where a newer job of a key replaces the one still
// waiting (client-go's workqueue rules): the recommender's status writes. A pass hands over one
// publication per scaler and goes on; when the API server is slower than the pass (the first
// passes of 10,000 scalers), the next pass's publication of a scaler whose write still waits
// takes its place, so the backlog never exceeds one write per scaler, and the API server never
// gets a write that a newer one already outdated.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <utility>
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
  /// Drops the job of `key` still waiting, if any (one running finishes); true when one was.
  bool cancel(const std::string& key);
  /// Returns once every job submitted so far has finished (none waiting, none running).
  void wait_idle();
  /// Drops the jobs still waiting (running ones finish); returns how many were dropped.
  std::size_t drop_waiting();
  /// Lets running jobs finish, drops those still waiting, joins the threads. Idempotent.
  void stop();
  /// Jobs waiting to run.
  std::size_t waiting() const;
  /// Whether a job of `key` is running now.
  bool running(const std::string& key) const;
  /// Whether a job of `key` waits or runs.
  bool pending(const std::string& key) const;
  /// Jobs replaced by a newer one of their key since the pool started.
  std::size_t replaced() const;

 private:
  void run();
  // A waiting job and its place in line (a replacement keeps it).
  struct Waiting {
    Job job;
    std::uint64_t place = 0;
  };
  // Whether `entry` of order_ is a waiting job's place; with mutex_ held.
  bool holds_place(const std::pair<std::uint64_t, std::string>& entry) const;
  // The first place in line of a key that is not running, or order_.end(); drops the places in
  // front that no longer count (cancelled). With mutex_ held.
  std::deque<std::pair<std::uint64_t, std::string>>::iterator next_runnable();

  mutable std::mutex mutex_;
  std::condition_variable ready_;  // a job was queued, a key stopped running, or stopping
  std::condition_variable idle_;   // the last job finished
  // Places in line, oldest first. A cancelled key's place stays until it reaches the front
  // (erasing it from the middle is a scan of up to 10,000): a place counts only while jobs_ holds
  // its key at that place, so a key submitted again after a cancel goes to the back.
  std::deque<std::pair<std::uint64_t, std::string>> order_;
  std::map<std::string, Waiting> jobs_;  // the waiting job of each key
  std::uint64_t next_place_ = 0;
  std::set<std::string> running_;  // keys a thread is running
  std::size_t replaced_ = 0;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace vscaler::base
