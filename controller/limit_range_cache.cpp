// LimitRangeCache: rebuilt from the informer's store, read by the hook and the reconciler.
#include "controller/limit_range_cache.h"

#include "recommender/limit_range.h"

namespace vscaler::controller {

LimitRangeCache::LimitRangeCache() : map_(std::make_shared<const Map>()) {}

std::shared_ptr<const recommender::LimitRangeItem> LimitRangeCache::of(std::string_view ns) const {
  std::shared_ptr<const Map> map = map_.load(std::memory_order_acquire);
  auto it = map->find(ns);
  return it == map->end() ? nullptr : it->second;
}

int LimitRangeCache::rebuild(const std::vector<std::shared_ptr<const nlohmann::json>>& limit_ranges,
                             std::vector<std::string>* changed) {
  // Grouped by namespace into LimitRangeLists, the shape container_limit_range merges.
  std::map<std::string, nlohmann::json, std::less<>> lists;
  for (const auto& object : limit_ranges) {
    if (!object || !object->is_object()) continue;
    auto metadata = object->find("metadata");
    if (metadata == object->end() || !metadata->is_object()) continue;
    auto ns = metadata->find("namespace");
    if (ns == metadata->end() || !ns->is_string()) continue;
    nlohmann::json& list = lists[ns->get<std::string>()];
    if (list.is_null()) list = {{"items", nlohmann::json::array()}};
    list["items"].push_back(*object);
  }
  auto next = std::make_shared<Map>();
  int unreadable = 0;
  for (const auto& [ns, list] : lists) {
    auto merged = recommender::container_limit_range(list);
    if (!merged.ok()) {
      ++unreadable;
      continue;
    }
    if (*merged) {
      next->emplace(ns, std::make_shared<const recommender::LimitRangeItem>(std::move(**merged)));
    }
  }
  std::shared_ptr<const Map> previous = map_.exchange(next, std::memory_order_acq_rel);
  if (changed) {
    // Both maps are sorted by namespace: one merge walk finds what appeared, went or differs.
    auto old_it = previous->begin();
    auto new_it = next->begin();
    while (old_it != previous->end() || new_it != next->end()) {
      if (new_it == next->end() || (old_it != previous->end() && old_it->first < new_it->first)) {
        changed->push_back((old_it++)->first);
      } else if (old_it == previous->end() || new_it->first < old_it->first) {
        changed->push_back((new_it++)->first);
      } else {
        if (!(*old_it->second == *new_it->second)) changed->push_back(new_it->first);
        ++old_it;
        ++new_it;
      }
    }
  }
  return unreadable;
}

}  // namespace vscaler::controller
