// Kill keys are 64-bit FNV-1a hashes of "uid/container/restartCount": 8 bytes a kill.
#include "recommender/oom_dedup.h"

#include <algorithm>
#include <string>

#include "recommender/hash.h"

namespace vscaler::recommender {

bool OomDedup::first_time(std::string_view pod_uid, std::string_view container,
                          std::int64_t restart_count) {
  std::uint64_t h = fnv1a(kFnvBasis, pod_uid);
  h = fnv1a(h, "/");
  h = fnv1a(h, container);
  h = fnv1a(h, "/");
  h = fnv1a(h, std::to_string(restart_count));
  // A linear scan: kills are rare, and a hash set beside the ring cost 56 bytes in every
  // scaler's history even when empty.
  if (std::find(order_.begin(), order_.end(), h) != order_.end()) return false;
  if (order_.size() < capacity_) {
    order_.push_back(h);
    return true;
  }
  order_[head_] = h;  // full: the oldest makes room
  head_ = (head_ + 1) % capacity_;
  return true;
}

}  // namespace vscaler::recommender
