// Request/limit arithmetic in long double over nano-units, rounded up to whole millicores (cpu)
// or bytes (memory) like every recommended value.
#include "recommender/apply.h"

#include <algorithm>
#include <cmath>
#include <optional>

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
  return Quantity::from_nanos(units * static_cast<kube::Int128>(unit));
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
    auto old_request = lookup(current.requests, resource);
    if (!old_request) old_request = old_limit;  // the API server defaults a request to its limit
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

}  // namespace vscaler::recommender
