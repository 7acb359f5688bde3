#include "controller/unclaimed_creates.h"

namespace vscaler::controller {

UnclaimedCreates::UnclaimedCreates(std::chrono::milliseconds ttl, std::size_t capacity)
    : ttl_(ttl), capacity_(capacity == 0 ? 1 : capacity) {}

std::string UnclaimedCreates::key(std::string_view ns, std::string_view kind,
                                  std::string_view name) {
  std::string out;
  out.reserve(ns.size() + kind.size() + name.size() + 2);
  out.append(ns).append("/").append(kind).append("/").append(name);
  return out;
}

void UnclaimedCreates::record(std::string_view workload_key, Clock::time_point now) {
  std::lock_guard lock(mutex_);
  prune(now);
  while (order_.size() >= capacity_) {
    auto& [oldest, at] = order_.front();
    auto found = recorded_.find(oldest);
    if (found != recorded_.end() && found->second == at) recorded_.erase(found);
    order_.pop_front();
  }
  std::string key(workload_key);
  recorded_[key] = now;
  order_.emplace_back(std::move(key), now);
}

bool UnclaimedCreates::take(std::string_view workload_key, Clock::time_point now) {
  std::lock_guard lock(mutex_);
  prune(now);
  auto found = recorded_.find(std::string(workload_key));
  if (found == recorded_.end()) return false;
  recorded_.erase(found);  // its entry in order_ goes when it reaches the front
  return true;
}

std::size_t UnclaimedCreates::size() const {
  std::lock_guard lock(mutex_);
  return recorded_.size();
}

void UnclaimedCreates::prune(Clock::time_point now) {
  while (!order_.empty() && order_.front().second + ttl_ <= now) {
    auto found = recorded_.find(order_.front().first);
    if (found != recorded_.end() && found->second == order_.front().second) recorded_.erase(found);
    order_.pop_front();
  }
}

}  // namespace vscaler::controller
