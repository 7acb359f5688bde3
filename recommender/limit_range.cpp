// LimitRangeList -> the tightest Container item and Pod max.
#include "recommender/limit_range.h"

#include "recommender/json_fields.h"

namespace vscaler::recommender {
namespace {

// Several LimitRanges all apply: the smallest max (or ratio) is the one that binds.
void keep_smallest(ResourceMap& map, const std::string& resource, const kube::Quantity& value) {
  auto [it, inserted] = map.emplace(resource, value);
  if (!inserted && value < it->second) it->second = value;
}

}  // namespace

kube::Result<std::optional<LimitRangeItem>> container_limit_range(const nlohmann::json& list) {
  const auto* items = child(list, "items");
  if (!items || !items->is_array()) return kube::fail("LimitRangeList: items must be an array");
  LimitRangeItem merged;
  bool found = false;
  for (std::size_t i = 0; i < items->size(); ++i) {
    const auto* spec = child((*items)[i], "spec");
    const auto* limits = spec ? child(*spec, "limits") : nullptr;
    if (!limits || !limits->is_array()) continue;
    for (std::size_t j = 0; j < limits->size(); ++j) {
      const auto& item = (*limits)[j];
      const std::string_view type = string_field(item, "type");
      const std::string path =
          "items[" + std::to_string(i) + "].spec.limits[" + std::to_string(j) + "]";
      if (type == "Pod") {
        auto pod_max = resource_list(child(item, "max"), path + ".max");
        if (!pod_max.ok()) return kube::fail(pod_max.error());
        for (const auto& [resource, value] : *pod_max)
          keep_smallest(merged.pod_max, resource, value);
        found = found || !pod_max->empty();
        continue;
      }
      if (type != "Container") continue;
      auto min = resource_list(child(item, "min"), path + ".min");
      if (!min.ok()) return kube::fail(min.error());
      auto max = resource_list(child(item, "max"), path + ".max");
      if (!max.ok()) return kube::fail(max.error());
      auto default_limit = resource_list(child(item, "default"), path + ".default");
      if (!default_limit.ok()) return kube::fail(default_limit.error());
      for (const auto& [resource, value] : *min) {
        auto [it, inserted] = merged.min.emplace(resource, value);
        if (!inserted && value > it->second) it->second = value;
      }
      for (const auto& [resource, value] : *max) keep_smallest(merged.max, resource, value);
      auto ratio =
          resource_list(child(item, "maxLimitRequestRatio"), path + ".maxLimitRequestRatio");
      if (!ratio.ok()) return kube::fail(ratio.error());
      for (const auto& [resource, value] : *ratio) {
        keep_smallest(merged.max_limit_request_ratio, resource, value);
      }
      for (const auto& [resource, value] : *default_limit)
        merged.default_limit.emplace(resource, value);
      found = found || !min->empty() || !max->empty() || !default_limit->empty() || !ratio->empty();
    }
  }
  if (!found) return std::optional<LimitRangeItem>{};
  return std::optional<LimitRangeItem>{std::move(merged)};
}

AllowedRange within_limit_range(AllowedRange range, const std::optional<LimitRangeItem>& item) {
  if (!item) return range;
  for (const auto& [resource, max] : item->max) {
    auto [it, inserted] = range.max_allowed.emplace(resource, max);
    // A maxAllowed of 0 is no bound (clamp_to_range), so the LimitRange's max bounds instead.
    if (!inserted && (max < it->second || it->second == kube::Quantity())) it->second = max;
  }
  for (const auto& [resource, min] : item->min) {
    auto [it, inserted] = range.min_allowed.emplace(resource, min);
    if (!inserted && it->second < min) it->second = min;
  }
  return range;
}

}  // namespace vscaler::recommender
