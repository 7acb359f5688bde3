#include "base/coalescing_pool.h"

#include <algorithm>

namespace vscaler::base {

CoalescingPool::CoalescingPool(std::size_t threads) {
  threads = std::max<std::size_t>(1, threads);
  threads_.reserve(threads);
  for (std::size_t i = 0; i < threads; ++i) threads_.emplace_back([this] { run(); });
}

CoalescingPool::~CoalescingPool() {
  stop();
}

bool CoalescingPool::submit(const std::string& key, Job job) {
  Job outdated;  // destroyed outside the lock (a job's captures may be large)
  {
    std::lock_guard lock(mutex_);
    if (stopping_) return false;
    auto [it, inserted] = jobs_.try_emplace(key);
    if (inserted) {
      it->second.place = next_place_++;
      order_.emplace_back(it->second.place, key);
    } else {
      outdated = std::move(it->second.job);
      ++replaced_;
    }
    it->second.job = std::move(job);
  }
  ready_.notify_one();
  return true;
}

bool CoalescingPool::cancel(const std::string& key) {
  Job cancelled;  // destroyed outside the lock
  std::lock_guard lock(mutex_);
  auto it = jobs_.find(key);
  if (it == jobs_.end()) return false;
  cancelled = std::move(it->second.job);
  jobs_.erase(it);  // its entry in order_ is dropped when it reaches the front
  if (jobs_.empty() && running_.empty()) idle_.notify_all();
  return true;
}

void CoalescingPool::wait_idle() {
  std::unique_lock lock(mutex_);
  idle_.wait(lock, [this] { return jobs_.empty() && running_.empty(); });  // stop() empties jobs_
}

std::size_t CoalescingPool::drop_waiting() {
  std::map<std::string, Waiting> dropped;
  {
    std::lock_guard lock(mutex_);
    dropped.swap(jobs_);
    order_.clear();
    if (running_.empty()) idle_.notify_all();
  }
  return dropped.size();
}

void CoalescingPool::stop() {
  std::vector<std::thread> threads;
  std::map<std::string, Waiting> dropped;
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
    threads.swap(threads_);
    dropped.swap(jobs_);
    order_.clear();
  }
  ready_.notify_all();
  for (auto& thread : threads) thread.join();
  idle_.notify_all();
}

std::size_t CoalescingPool::waiting() const {
  std::lock_guard lock(mutex_);
  return jobs_.size();
}

bool CoalescingPool::running(const std::string& key) const {
  std::lock_guard lock(mutex_);
  return running_.count(key) > 0;
}

bool CoalescingPool::pending(const std::string& key) const {
  std::lock_guard lock(mutex_);
  return running_.count(key) > 0 || jobs_.count(key) > 0;
}

std::size_t CoalescingPool::replaced() const {
  std::lock_guard lock(mutex_);
  return replaced_;
}

bool CoalescingPool::holds_place(const std::pair<std::uint64_t, std::string>& entry) const {
  auto it = jobs_.find(entry.second);
  return it != jobs_.end() && it->second.place == entry.first;
}

std::deque<std::pair<std::uint64_t, std::string>>::iterator CoalescingPool::next_runnable() {
  while (!order_.empty() && !holds_place(order_.front())) order_.pop_front();
  // Keys re-submitted while running are rare (a write slower than a pass): the scan passes over
  // about as many keys as there are threads.
  return std::find_if(order_.begin(), order_.end(), [this](const auto& entry) {
    return holds_place(entry) && running_.count(entry.second) == 0;
  });
}

void CoalescingPool::run() {
  std::unique_lock lock(mutex_);
  while (true) {
    auto next = order_.end();
    ready_.wait(lock, [this, &next] {
      if (stopping_) return true;
      next = next_runnable();
      return next != order_.end();
    });
    if (stopping_) return;
    std::string key = std::move(next->second);
    order_.erase(next);
    auto it = jobs_.find(key);
    Job job = std::move(it->second.job);
    jobs_.erase(it);
    running_.insert(key);
    lock.unlock();
    job();
    job = nullptr;  // captures released before the lock is taken again
    lock.lock();
    running_.erase(key);
    if (running_.empty() && jobs_.empty()) idle_.notify_all();
    // Its key may wait behind this run: another thread may take it now.
    if (jobs_.count(key)) ready_.notify_one();
  }
}

}  // namespace vscaler::base
