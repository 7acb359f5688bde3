// Entry -> policy, template JSON -> resource maps, target -> desired keys.
#include "recommender/desired.h"

namespace vscaler::recommender {
namespace {

using nlohmann::json;

ResourceMap to_recommender(const api::ResourceMap& map) {
  return ResourceMap(map.begin(), map.end());
}

api::ResourceMap to_api(const ResourceMap& map) {
  return api::ResourceMap(map.begin(), map.end());
}

/// Parses the cpu/memory members of one requests/limits object.
ResourceMap section_of(const json& resources, const char* section) {
  ResourceMap out;
  auto values = resources.find(section);
  if (values == resources.end() || !values->is_object()) return out;
  for (const char* resource : {kCpu, kMemory}) {
    auto value = values->find(resource);
    if (value == values->end()) continue;
    auto parsed = value->is_string() ? kube::Quantity::parse(value->get_ref<const std::string&>())
                                     : kube::Quantity::parse(value->dump());
    if (parsed.ok()) out.emplace(resource, *parsed);
  }
  return out;
}

}  // namespace

std::vector<ContainerRecommendation> recommendations_of(const api::Scaler& scaler) {
  if (scaler.stored_recommendation.empty()) return {};
  auto parsed = parse_recommendation(scaler.recommendation());
  return parsed.ok() ? std::move(parsed).value() : std::vector<ContainerRecommendation>{};
}

ContainerPolicy policy_of(const api::ContainerResources& entry) {
  ContainerPolicy policy;
  policy.control_cpu = entry.controls_cpu;
  policy.control_memory = entry.controls_memory;
  policy.controlled_values = entry.controlled_values == api::ControlledValues::kRequestsOnly
                                 ? ControlledValues::kRequestsOnly
                                 : ControlledValues::kRequestsAndLimits;
  policy.range.min_allowed = to_recommender(entry.min_allowed);
  policy.range.max_allowed = to_recommender(entry.max_allowed);
  return policy;
}

ContainerResources resources_of(const json& resources) {
  if (!resources.is_object()) return {};
  return {section_of(resources, "requests"), section_of(resources, "limits")};
}

RecommendedContainers recommended_containers(
    const api::Scaler& scaler, const json& workload,
    const std::vector<ContainerRecommendation>& recommendations,
    const LimitRangeItem* limit_range) {
  RecommendedContainers out;
  // Every container of the pod with the values it will carry: recommended ones with their
  // recommendation applied, the others as they are (they count in a `type: Pod` max).
  std::vector<ContainerResources> pod;
  std::vector<std::size_t> applied_at;  // out.applied[i] is pod[applied_at[i]]
  for (const json& container : api::pod_containers_of(workload)) {
    if (!container.is_object()) continue;
    auto name = container.find("name");
    if (name == container.end() || !name->is_string()) continue;
    const std::string& container_name = name->get_ref<const std::string&>();
    auto resources = container.find("resources");
    ContainerResources current = resources_of(resources == container.end() ? json() : *resources);
    const api::ContainerResources* entry = scaler.entry_for(container_name);
    const ContainerRecommendation* recommendation = nullptr;
    if (entry != nullptr && entry->recommended()) {
      for (const auto& r : recommendations) {
        if (r.container_name == container_name) recommendation = &r;
      }
      if (recommendation == nullptr) out.awaiting.push_back(container_name);
    }
    if (recommendation == nullptr) {
      pod.push_back(std::move(current));
      continue;
    }
    AppliedContainer applied;
    applied.name = container_name;
    applied.current = std::move(current);
    applied.recommendation = recommendation;
    applied.policy = policy_of(*entry);
    applied.limit_range = limit_range;
    pod.push_back(
        apply_recommendation(applied.current, recommendation->target, applied.policy, limit_range));
    applied_at.push_back(pod.size() - 1);
    out.applied.push_back(std::move(applied));
  }
  if (limit_range != nullptr && !limit_range->pod_max.empty()) {
    std::vector<PodMaxMember> containers;
    for (auto& resources : pod) containers.push_back({&resources, nullptr});
    for (std::size_t i = 0; i < out.applied.size(); ++i) {
      containers[applied_at[i]].policy = &out.applied[i].policy;
    }
    fit_pod_max(containers, limit_range->pod_max);
  }
  for (std::size_t i = 0; i < out.applied.size(); ++i) {
    AppliedContainer& applied = out.applied[i];
    const ContainerResources& next = pod[applied_at[i]];
    applied.next = next;
    // Only the keys the recommendation sets: requests of controlled resources it has a target
    // for, and their limits when it scales them.
    ResourceMap requests, limits;
    for (const auto& [resource, value] : applied.recommendation->target) {
      if (!applied.policy.controls(resource)) continue;
      if (const auto* request = find(next.requests, resource)) requests.emplace(resource, *request);
      if (applied.policy.controlled_values == ControlledValues::kRequestsAndLimits &&
          find(applied.current.limits, resource) != nullptr) {
        if (const auto* limit = find(next.limits, resource)) limits.emplace(resource, *limit);
      }
    }
    out.desired[applied.name] = api::DesiredValues{to_api(requests), to_api(limits)};
  }
  return out;
}

}  // namespace vscaler::recommender
