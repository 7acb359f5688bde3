// Applying a recommendation to one container's resources, as pure functions on resource maps.
//   RequestsAndLimits (default): the request becomes the target; each limit is scaled by
//     new/old request, keeping the template's limit:request proportion (limit >= request).
//   RequestsOnly: limits are never touched; the request is capped at an existing limit.
// A missing request counts as equal to its limit (the API server defaults it so). minAllowed /
// maxAllowed bound the request; a namespace LimitRange's Container item caps the result as VPA
// does: the request is held where the proportional limit stays within max and both stay above
// min, and at most the default limit when the template sets no limit (LimitRanger would give the
// pod that limit, and a request above it would make the pod invalid); a limit left as it is
// (RequestsOnly, or the default limit) holds the request at limit / maxLimitRequestRatio or more.
// A `type: Pod` max scales the pod's recommended containers down together (fit_pod_max).
#pragma once

#include <string>
#include <vector>

#include "recommender/recommendation.h"
#include "recommender/resources.h"

namespace vscaler::recommender {

/// Which values of a container vscaler writes (spec.containers[].controlledValues).
enum class ControlledValues { kRequestsAndLimits, kRequestsOnly };

/// A recommended container's policy (spec.containers[] with vscaler's defaults filled in).
struct ContainerPolicy {
  bool control_cpu = true;     ///< controlledResources contains cpu
  bool control_memory = true;  ///< controlledResources contains memory
  ControlledValues controlled_values = ControlledValues::kRequestsAndLimits;
  AllowedRange range;  ///< minAllowed / maxAllowed

  /// True when `resource` ("cpu" / "memory") is controlled.
  bool controls(const std::string& resource) const {
    return resource == kCpu ? control_cpu : resource == kMemory && control_memory;
  }
};

/// A namespace's LimitRanges as they bound one container: the `type: Container` item (min, max,
/// default = the default limit, maxLimitRequestRatio) and the `type: Pod` max, which bounds the
/// sum over the pod's containers.
struct LimitRangeItem {
  ResourceMap min;                        ///< requests and limits at least this
  ResourceMap max;                        ///< requests and limits at most this
  ResourceMap default_limit;              ///< the limit LimitRanger gives a container without one
  ResourceMap max_limit_request_ratio{};  ///< limit / request at most this
  ResourceMap pod_max{};  ///< `type: Pod` max: the containers' requests and limits summed
  friend bool operator==(const LimitRangeItem&, const LimitRangeItem&) = default;
};

/// A container's resources (the template's requests and limits).
struct ContainerResources {
  ResourceMap requests;  ///< resources.requests
  ResourceMap limits;    ///< resources.limits
  friend bool operator==(const ContainerResources&, const ContainerResources&) = default;
};

/// `current` with `target` applied under `policy` and `limit_range` (nullptr: none). Keys the
/// policy does not control, and resources the target lacks, are left exactly as they are.
ContainerResources apply_recommendation(const ContainerResources& current,
                                        const ResourceMap& target, const ContainerPolicy& policy,
                                        const LimitRangeItem* limit_range = nullptr);

/// One container of a pod as fit_pod_max sees it.
struct PodMaxMember {
  ContainerResources* resources;  ///< the values the pod will carry (changed in place)
  /// Its policy when vscaler recommends it (what it controls may be scaled down: requests of
  /// controlled resources, and their limits under RequestsAndLimits); nullptr: fixed.
  const ContainerPolicy* policy;
};

/// The most a pod's containers may sum to, requests and limits apart (a ResourceQuota's headroom
/// bounds them apart: requests.cpu, limits.cpu, ...). A resource absent is unbounded.
struct PodTotals {
  ResourceMap requests;
  ResourceMap limits;
  friend bool operator==(const PodTotals&, const PodTotals&) = default;
};

/// Scales the adjustable requests of each resource in `totals.requests`, and the adjustable
/// limits of each in `totals.limits`, down by one factor per sum, as VPA does, until the pod's
/// sums stay within them. Where the fixed values alone reach a bound, the adjustable ones are
/// left as they are: nothing vscaler writes could make that pod admissible, and the API server's
/// message names the problem. True when some value was scaled down.
bool fit_pod_totals(std::vector<PodMaxMember>& containers, const PodTotals& totals);

/// fit_pod_totals with `pod_max` (a `type: Pod` LimitRange max, which LimitRanger checks on the
/// summed requests and on the summed limits) bounding both.
void fit_pod_max(std::vector<PodMaxMember>& containers, const ResourceMap& pod_max);

/// The pod's cpu/memory requests and limits summed over `containers`.
PodTotals pod_totals(const std::vector<ContainerResources>& containers);

/// What LimitRanger would refuse in `container` under `limit_range` (its `type: Container` min,
/// max and maxLimitRequestRatio, for the values the container sets; defaults it would add are
/// not guessed): "limits.cpu 2 is above the LimitRange's max 1"; empty when nothing.
std::string limit_range_violation(const ContainerResources& container,
                                  const LimitRangeItem& limit_range);

}  // namespace vscaler::recommender
