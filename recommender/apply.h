// Applying a recommendation to one container's resources, as pure functions on resource maps.
//   RequestsAndLimits (default): the request becomes the target; each limit is scaled by
//     new/old request, keeping the template's limit:request proportion (limit >= request).
//   RequestsOnly: limits are never touched; the request is capped at an existing limit.
// A missing request counts as equal to its limit (the API server defaults it so). minAllowed /
// maxAllowed bound the request; a namespace LimitRange's Container item caps the result as VPA
// does: the request is held where the proportional limit stays within max and both stay above
// min, and at most the default limit when the template sets no limit (LimitRanger would give the
// pod that limit, and a request above it would make the pod invalid).
#pragma once

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

/// A LimitRange's `type: Container` item (min, max, default = the default limit).
struct LimitRangeItem {
  ResourceMap min;            ///< requests and limits at least this
  ResourceMap max;            ///< requests and limits at most this
  ResourceMap default_limit;  ///< the limit LimitRanger gives a container without one
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

}  // namespace vscaler::recommender
