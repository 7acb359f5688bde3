#include "base/worker_pool.h"

#include <algorithm>

namespace vscaler::base {

WorkerPool::WorkerPool(std::size_t threads, std::size_t capacity)
    : capacity_(std::max<std::size_t>(1, capacity)) {
  threads = std::max<std::size_t>(1, threads);
  threads_.reserve(threads);
  for (std::size_t i = 0; i < threads; ++i) threads_.emplace_back([this] { run(); });
}

WorkerPool::~WorkerPool() {
  stop();
}

bool WorkerPool::submit(Job job) {
  {
    std::lock_guard lock(mutex_);
    if (stopping_ || jobs_.size() >= capacity_) return false;
    jobs_.push_back(std::move(job));
  }
  ready_.notify_one();
  return true;
}

void WorkerPool::wait_idle() {
  std::unique_lock lock(mutex_);
  idle_.wait(lock, [this] { return jobs_.empty() && running_ == 0; });  // stop() empties jobs_
}

void WorkerPool::stop() {
  std::vector<std::thread> threads;
  std::deque<Job> dropped;
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
    threads.swap(threads_);
    dropped.swap(jobs_);
  }
  ready_.notify_all();
  for (auto& thread : threads) thread.join();
  idle_.notify_all();
  // `dropped` is destroyed here, outside the lock (a job's captures may be large).
}

std::size_t WorkerPool::waiting() const {
  std::lock_guard lock(mutex_);
  return jobs_.size();
}

void WorkerPool::run() {
  std::unique_lock lock(mutex_);
  while (true) {
    ready_.wait(lock, [this] { return stopping_ || !jobs_.empty(); });
    if (stopping_) return;
    Job job = std::move(jobs_.front());
    jobs_.pop_front();
    ++running_;
    lock.unlock();
    job();
    job = nullptr;  // captures released before the lock is taken again
    lock.lock();
    --running_;
    if (running_ == 0 && jobs_.empty()) idle_.notify_all();
  }
}

}  // namespace vscaler::base
