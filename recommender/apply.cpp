// Request/limit arithmetic in long double over nano-units, rounded up to whole millicores (cpu)
// or bytes (memory) like every recommended value.
#include "recommender/apply.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>

namespace vscaler::recommender {
namespace {

using kube::Quantity;

// value * numerator / denominator, rounded up to the resource's unit.
Quantity scaled(const std::string& resource, const Quantity& value, const Quantity& numerator,
                const Quantity& denominator) {
  const long double unit = resource == kCpu ? 1e6L : 1e9L;
  long double nanos = static_cast<long double>(value.nanos()) *
                      static_cast<long double>(numerator.nanos()) /
                      static_cast<long double>(denominator.nanos());
  auto units = static_cast<kube::Int128>(std::ceil(nanos / unit - 1e-9L));
  // In `value`'s format, as VPA keeps the original limit's: a 512Mi limit scaled by 300Mi/256Mi
  // is written "600Mi", not "629145600".
  return Quantity::from_nanos(units * static_cast<kube::Int128>(unit), value.format());
}

std::optional<Quantity> lookup(const ResourceMap& map, const std::string& resource) {
  if (const auto* q = find(map, resource)) return *q;
  return std::nullopt;
}

bool positive(const std::optional<Quantity>& q) {
  return q && q->nanos() > 0;
}

}  // namespace

ContainerResources apply_recommendation(const ContainerResources& current,
                                        const ResourceMap& target, const ContainerPolicy& policy,
                                        const LimitRangeItem* limit_range) {
  ContainerResources out = current;
  const bool scale_limits = policy.controlled_values == ControlledValues::kRequestsAndLimits;
  for (const auto& [resource, recommended] : target) {
    if (!policy.controls(resource)) continue;
    const auto old_limit = lookup(current.limits, resource);
    std::optional<Quantity> old_request;
    if (const Quantity* q = effective_request(current.requests, current.limits, resource)) {
      old_request = *q;
    }
    // The limit the pod will run with: the template's, else the LimitRange default.
    auto effective_limit = old_limit;
    if (!effective_limit && limit_range)
      effective_limit = lookup(limit_range->default_limit, resource);
    const bool proportional =
        scale_limits && old_limit && positive(old_request) && positive(effective_limit);

    Quantity request = clamp_to_range(resource, recommended, policy.range);
    if (limit_range) {
      if (auto max = lookup(limit_range->max, resource)) {
        Quantity boundary =
            proportional ? scaled(resource, *max, *old_request, *effective_limit) : *max;
        request = std::min(request, boundary);
      }
      if (auto min = lookup(limit_range->min, resource)) {
        Quantity boundary = *min;
        if (proportional) {
          boundary = std::max(boundary, scaled(resource, *min, *old_request, *effective_limit));
        }
        request = std::max(request, boundary);
      }
    }
    // A limit that stays as it is (RequestsOnly, or the LimitRange default) bounds the request
    // from below too: LimitRanger refuses limit / request above maxLimitRequestRatio. A scaled
    // limit keeps the template's proportion instead.
    if (limit_range && effective_limit && !proportional) {
      if (auto ratio = lookup(limit_range->max_limit_request_ratio, resource);
          ratio && ratio->nanos() > 0) {
        request = std::max(request, scaled(resource, *effective_limit,
                                           Quantity::from_nanos(1'000'000'000), *ratio));
      }
    }
    // With no limit of its own the pod gets the LimitRange default: stay within it.
    if (!old_limit && effective_limit && request > *effective_limit) request = *effective_limit;
    if (!scale_limits && old_limit && request > *old_limit) request = *old_limit;
    out.requests[resource] = request;

    if (scale_limits && old_limit) {
      Quantity limit =
          positive(old_request) ? scaled(resource, *old_limit, request, *old_request) : request;
      if (limit_range) {
        if (auto max = lookup(limit_range->max, resource); max && limit > *max) limit = *max;
      }
      out.limits[resource] = std::max(limit, request);
    }
  }
  return out;
}

bool fit_pod_totals(std::vector<PodMaxMember>& containers, const PodTotals& totals) {
  // A container asking its limit (request == limit: the pod may be Guaranteed) keeps asking it
  // where vscaler sets both: a bound on one side must not change the pod's QoS class (a later
  // resize back could not: the API server refuses a QoS change).
  std::vector<std::pair<ContainerResources*, std::string>> pinned;
  for (auto& c : containers) {
    if (c.policy == nullptr ||
        c.policy->controlled_values != ControlledValues::kRequestsAndLimits) {
      continue;
    }
    for (const auto& [resource, request] : c.resources->requests) {
      auto limit = c.resources->limits.find(resource);
      if (c.policy->controls(resource) && limit != c.resources->limits.end() &&
          limit->second == request) {
        pinned.emplace_back(c.resources, resource);
      }
    }
  }
  bool scaled = false;
  for (bool limits : {false, true}) {
    for (const auto& entry : limits ? totals.limits : totals.requests) {
      // Named, not a structured binding: clang before 16 (the fuzz build) cannot capture one.
      const auto& resource = entry.first;
      const auto& max = entry.second;
      auto section = [limits](const PodMaxMember& c) -> ResourceMap& {
        return limits ? c.resources->limits : c.resources->requests;
      };
      auto adjustable = [&resource, limits](const PodMaxMember& c) {
        return c.policy != nullptr && c.policy->controls(resource) &&
               (!limits || c.policy->controlled_values == ControlledValues::kRequestsAndLimits);
      };
      long double fixed_sum = 0, adjustable_sum = 0;
      for (const auto& c : containers) {
        if (const auto* q = find(section(c), resource)) {
          (adjustable(c) ? adjustable_sum : fixed_sum) += static_cast<long double>(q->nanos());
        }
      }
      const auto bound = static_cast<long double>(max.nanos());
      if (fixed_sum + adjustable_sum <= bound || adjustable_sum <= 0 || fixed_sum >= bound) {
        continue;
      }
      scaled = true;
      const long double factor = (bound - fixed_sum) / adjustable_sum;
      const long double unit = resource == kCpu ? 1e6L : 1e9L;
      for (auto& c : containers) {
        if (!adjustable(c)) continue;
        auto it = section(c).find(resource);
        if (it == section(c).end()) continue;
        // Rounded down: the sum must not land a unit above the max.
        auto units = static_cast<kube::Int128>(
            std::floor(static_cast<long double>(it->second.nanos()) * factor / unit));
        it->second =
            Quantity::from_nanos(units * static_cast<kube::Int128>(unit), it->second.format());
      }
    }
  }
  // Scaled apart, a request could end above its limit: a limit below the request is invalid.
  for (auto& c : containers) {
    if (!scaled || c.policy == nullptr) continue;
    for (auto& [resource, request] : c.resources->requests) {
      auto limit = c.resources->limits.find(resource);
      if (limit != c.resources->limits.end() && request > limit->second) request = limit->second;
    }
  }
  for (auto& [resources, resource] : pinned) {
    Quantity& request = resources->requests.at(resource);
    Quantity& limit = resources->limits.at(resource);
    if (request < limit) limit = request;
  }
  return scaled;
}

void fit_pod_max(std::vector<PodMaxMember>& containers, const ResourceMap& pod_max) {
  fit_pod_totals(containers, PodTotals{pod_max, pod_max});
}

PodTotals pod_totals(const std::vector<ContainerResources>& containers) {
  PodTotals out;
  auto add = [](ResourceMap& sum, const ResourceMap& values) {
    for (const char* resource : {kCpu, kMemory}) {
      const auto* value = find(values, resource);
      if (value == nullptr) continue;
      auto [it, inserted] = sum.emplace(resource, *value);
      if (!inserted) it->second = Quantity::from_nanos(it->second.nanos() + value->nanos());
    }
  };
  for (const auto& c : containers) {
    add(out.requests, c.requests);
    add(out.limits, c.limits);
  }
  return out;
}

std::string limit_range_violation(const ContainerResources& container,
                                  const LimitRangeItem& limit_range) {
  for (bool limits : {false, true}) {
    const char* section = limits ? "limits." : "requests.";
    for (const auto& [resource, value] : limits ? container.limits : container.requests) {
      if (const auto* min = find(limit_range.min, resource); min != nullptr && value < *min) {
        return section + resource + " " + value.to_string() + " is below the LimitRange's min " +
               min->to_string();
      }
      if (const auto* max = find(limit_range.max, resource); max != nullptr && *max < value) {
        return section + resource + " " + value.to_string() + " is above the LimitRange's max " +
               max->to_string();
      }
    }
  }
  for (const auto& [resource, ratio] : limit_range.max_limit_request_ratio) {
    const auto* request = find(container.requests, resource);
    const auto* limit = find(container.limits, resource);
    if (request == nullptr || limit == nullptr || request->nanos() <= 0) continue;
    // limit / request > ratio, compared as limit > ratio * request.
    if (static_cast<long double>(limit->nanos()) > static_cast<long double>(ratio.nanos()) / 1e9L *
                                                       static_cast<long double>(request->nanos())) {
      return "limits." + resource + " " + limit->to_string() + " is more than " +
             ratio.to_string() + " times requests." + resource + " " + request->to_string() +
             " (the LimitRange's maxLimitRequestRatio)";
    }
  }
  return {};
}

}  // namespace vscaler::recommender
