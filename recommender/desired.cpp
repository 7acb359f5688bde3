// Entry -> policy, template JSON -> resource maps, target -> desired keys.
#include "recommender/desired.h"

#include <algorithm>

namespace vscaler::recommender {
namespace {

using kube::Quantity;
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

/// Each value of `next` that `wanted` had at or above `current` but that is now below it goes
/// back up to `current`.
void keep_current(ContainerResources& next, const ContainerResources& current,
                  const ContainerResources& wanted) {
  for (bool limits : {false, true}) {
    ResourceMap& values = limits ? next.limits : next.requests;
    const ResourceMap& had = limits ? current.limits : current.requests;
    const ResourceMap& asked = limits ? wanted.limits : wanted.requests;
    for (auto& [resource, value] : values) {
      const auto* was = find(had, resource);
      const auto* want = find(asked, resource);
      if (was != nullptr && want != nullptr && !(*want < *was) && value < *was) value = *was;
    }
  }
}

}  // namespace

namespace {

// What recommendations_of keeps in a scaler, with the text it was derived from.
struct DerivedRecommendations {
  std::string text;
  std::vector<ContainerRecommendation> list;
};

}  // namespace

std::shared_ptr<const std::vector<ContainerRecommendation>> recommendations_of(
    const api::Scaler& scaler) {
  static const auto kNone = std::make_shared<const std::vector<ContainerRecommendation>>();
  if (scaler.stored_recommendation.empty()) return kNone;
  auto kept =
      std::static_pointer_cast<const DerivedRecommendations>(scaler.derived_recommendation.get());
  if (kept == nullptr || kept->text != scaler.stored_recommendation) {
    auto parsed = parse_recommendation(scaler.recommendation());
    kept = std::make_shared<const DerivedRecommendations>(DerivedRecommendations{
        scaler.stored_recommendation,
        parsed.ok() ? std::move(parsed).value() : std::vector<ContainerRecommendation>{}});
    scaler.derived_recommendation.set(kept);
  }
  return {kept, &kept->list};  // shares ownership of what was kept
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

namespace {

// ResourceMap operations on cpu and memory, the two a quota bounds here.
void add_to(ResourceMap& sum, const ResourceMap& values) {
  for (const auto& [resource, value] : values) {
    auto [it, inserted] = sum.emplace(resource, value);
    if (!inserted) it->second = Quantity::from_nanos(it->second.nanos() + value.nanos());
  }
}
void raise_to(ResourceMap& out, const ResourceMap& values) {
  for (const auto& [resource, value] : values) {
    auto [it, inserted] = out.emplace(resource, value);
    if (!inserted && it->second < value) it->second = value;
  }
}
ResourceMap plus(ResourceMap a, const ResourceMap& b) {
  add_to(a, b);
  return a;
}

// The sidecars' sums and the largest need of a regular init container (itself and the sidecars
// started before it), as the scheduler and ResourceQuota count a pod (KEP-753).
struct InitNeeds {
  PodTotals sidecars;
  PodTotals peak;
};
InitNeeds init_needs(const json& object) {
  InitNeeds out;
  const json* spec = api::pod_spec_of(object);
  if (spec == nullptr) return out;
  auto init = spec->find("initContainers");
  if (init == spec->end() || !init->is_array()) return out;
  for (const json& container : *init) {
    if (!container.is_object()) continue;
    auto resources = container.find("resources");
    PodTotals own = pod_totals({resources_of(resources == container.end() ? json() : *resources)});
    auto policy = container.find("restartPolicy");
    if (policy != container.end() && policy->is_string() && *policy == "Always") {
      add_to(out.sidecars.requests, own.requests);
      add_to(out.sidecars.limits, own.limits);
    } else {
      raise_to(out.peak.requests, plus(own.requests, out.sidecars.requests));
      raise_to(out.peak.limits, plus(own.limits, out.sidecars.limits));
    }
  }
  return out;
}

// What the pod counts for, from its app containers' sums: those plus the sidecars, or an init
// container's peak where that is more; and the pod-level resources (spec.resources, or
// `pod_level` when a plan raised them) where they are set and say more. (ResourceQuota counts a
// pod-level limit in place of the containers' limits, which may sum to more: counting the larger
// may leave a pod unpatched that would have fit, never patch one the quota then refuses; and
// these totals also bound what the containers may sum to.)
PodTotals effective(const json& object, PodTotals containers, const json* pod_level = nullptr) {
  InitNeeds init = init_needs(object);
  add_to(containers.requests, init.sidecars.requests);
  add_to(containers.limits, init.sidecars.limits);
  raise_to(containers.requests, init.peak.requests);
  raise_to(containers.limits, init.peak.limits);
  if (const json* spec = api::pod_spec_of(object); pod_level == nullptr && spec != nullptr) {
    auto found = spec->find("resources");
    if (found != spec->end()) pod_level = &*found;
  }
  if (pod_level != nullptr && pod_level->is_object()) {
    PodTotals own = pod_totals({resources_of(*pod_level)});
    raise_to(containers.requests, own.requests);
    raise_to(containers.limits, own.limits);
  }
  return containers;
}

}  // namespace

PodTotals pod_totals_of(const json& object) {
  std::vector<ContainerResources> containers;
  for (const json& container : api::pod_containers_of(object)) {
    if (!container.is_object()) continue;
    auto resources = container.find("resources");
    containers.push_back(resources_of(resources == container.end() ? json() : *resources));
  }
  return effective(object, pod_totals(containers));
}

PodTotals shared_with_containers(const json& object) {
  return init_needs(object).sidecars;
}

PodTotals minus_bounded(const PodTotals& bound, const PodTotals& taken) {
  PodTotals out = bound;
  for (bool limits : {false, true}) {
    const ResourceMap& off = limits ? taken.limits : taken.requests;
    for (auto& [resource, value] : limits ? out.limits : out.requests) {
      const auto* t = find(off, resource);
      if (t == nullptr) continue;
      value = Quantity::from_nanos(std::max<kube::Int128>(0, value.nanos() - t->nanos()),
                                   value.format());
    }
  }
  return out;
}

PodTotals at_least(const PodTotals& bound, const PodTotals& floor) {
  PodTotals out = bound;
  for (bool limits : {false, true}) {
    const ResourceMap& low = limits ? floor.limits : floor.requests;
    for (auto& [resource, value] : limits ? out.limits : out.requests) {
      if (const auto* f = find(low, resource); f != nullptr && value < *f) value = *f;
    }
  }
  return out;
}

PodTotals pod_totals_after(const json& object, const api::ResourcePlan& plan) {
  std::vector<ContainerResources> containers;
  std::size_t index = 0;
  for (const json& container : api::pod_containers_of(object)) {
    const json* resources = nullptr;
    for (const auto& c : plan.containers) {
      if (c.index == index) resources = &c.merged;
    }
    ++index;
    if (!container.is_object()) continue;
    if (resources == nullptr) {
      auto found = container.find("resources");
      resources = found == container.end() ? nullptr : &*found;
    }
    containers.push_back(resources_of(resources == nullptr ? json() : *resources));
  }
  return effective(object, pod_totals(containers),
                   plan.pod_resources_changed ? &plan.pod_resources : nullptr);
}

PodTotals spend(const PodTotals& headroom, const PodTotals& before, const PodTotals& after) {
  PodTotals out = headroom;
  for (bool limits : {false, true}) {
    const ResourceMap& was = limits ? before.limits : before.requests;
    const ResourceMap& now = limits ? after.limits : after.requests;
    for (auto& [resource, left] : limits ? out.limits : out.requests) {
      const auto* next = find(now, resource);
      if (next == nullptr) continue;
      const auto* prev = find(was, resource);
      const kube::Int128 grown = next->nanos() - (prev == nullptr ? 0 : prev->nanos());
      if (grown <= 0) continue;
      left = Quantity::from_nanos(std::max<kube::Int128>(0, left.nanos() - grown), left.format());
    }
  }
  return out;
}

PodTotals bounded_sum(const PodTotals& a, const PodTotals& b) {
  PodTotals out = b;
  for (bool limits : {false, true}) {
    const ResourceMap& add = limits ? a.limits : a.requests;
    for (auto& [resource, value] : limits ? out.limits : out.requests) {
      if (const auto* more = find(add, resource)) {
        value = Quantity::from_nanos(value.nanos() + more->nanos(), value.format());
      }
    }
  }
  return out;
}

bool grew(const std::optional<PodTotals>& then, const std::optional<PodTotals>& now) {
  if (!now) return then.has_value();
  if (!then) return false;  // a quota where there was none: less room, if anything
  auto more = [](const ResourceMap& before, const ResourceMap& after) {
    for (const auto& [resource, left] : before) {
      auto found = after.find(resource);
      if (found == after.end() || left < found->second) return true;
    }
    return false;
  };
  return more(then->requests, now->requests) || more(then->limits, now->limits);
}

std::string exceeds(const PodTotals& totals, const PodTotals& bound) {
  for (bool limits : {false, true}) {
    const ResourceMap& have = limits ? totals.limits : totals.requests;
    for (const auto& [resource, max] : limits ? bound.limits : bound.requests) {
      const auto* value = find(have, resource);
      if (value != nullptr && max < *value) {
        return std::string(limits ? "limits." : "requests.") + resource + " " + value->to_string() +
               " above the " + max.to_string() + " left";
      }
    }
  }
  return {};
}

RecommendedContainers recommended_containers(
    const api::Scaler& scaler, const json& workload,
    const std::vector<ContainerRecommendation>& recommendations, const LimitRangeItem* limit_range,
    const PodTotals* budget) {
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
  const bool pod_max = limit_range != nullptr && !limit_range->pod_max.empty();
  if (pod_max || budget != nullptr) {
    std::vector<PodMaxMember> containers;
    for (auto& resources : pod) containers.push_back({&resources, nullptr});
    for (std::size_t i = 0; i < out.applied.size(); ++i) {
      containers[applied_at[i]].policy = &out.applied[i].policy;
    }
    if (pod_max) fit_pod_max(containers, limit_range->pod_max);
    if (budget != nullptr) {
      const std::vector<ContainerResources> wanted = pod;
      out.budget_capped = fit_pod_totals(containers, *budget);
      // A budget holds growth back; it never takes a container below what it has (the scaling
      // rounds down, by a unit).
      for (std::size_t i = 0; i < out.applied.size(); ++i) {
        keep_current(pod[applied_at[i]], out.applied[i].current, wanted[applied_at[i]]);
      }
    }
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
  out.pod = std::move(pod);
  return out;
}

}  // namespace vscaler::recommender
