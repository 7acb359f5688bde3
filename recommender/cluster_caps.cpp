// The largest node and the caps it and the global flags make.
#include "recommender/cluster_caps.h"

#include "recommender/json_fields.h"

namespace vscaler::recommender {

void LargestNode::add(const nlohmann::json& node) {
  const nlohmann::json* status = child(node, "status");
  const nlohmann::json* allocatable = status ? child(*status, "allocatable") : nullptr;
  if (allocatable == nullptr) return;
  for (const char* resource : {kCpu, kMemory}) {
    const nlohmann::json* value = child(*allocatable, resource);
    if (value == nullptr || !value->is_string()) continue;
    auto quantity = kube::Quantity::parse(value->get_ref<const std::string&>());
    if (!quantity.ok()) continue;
    auto it = largest_.find(resource);
    if (it == largest_.end()) {
      largest_.emplace(resource, *quantity);
    } else if (*quantity > it->second) {
      it->second = *quantity;
    }
  }
}

ResourceMap cluster_caps(const ResourceMap& largest_node, const ResourceMap& global_max) {
  ResourceMap caps = largest_node;
  for (const auto& [resource, value] : global_max) {
    if (value == kube::Quantity()) continue;  // a flag of 0 caps nothing, as in VPA
    auto it = caps.find(resource);
    if (it == caps.end()) {
      caps.emplace(resource, value);
    } else if (value < it->second) {
      it->second = value;
    }
  }
  return caps;
}

AllowedRange within_cluster_caps(AllowedRange range, const ResourceMap& caps) {
  for (const auto& [resource, cap] : caps) {
    // A maxAllowed of 0 is no bound (clamp_to_range): the caps stand in for it as for a missing
    // one, or the largest node would no longer cap.
    auto [it, inserted] = range.max_allowed.emplace(resource, cap);
    if (!inserted && it->second == kube::Quantity()) it->second = cap;
  }
  return range;
}

}  // namespace vscaler::recommender
