// When a recommendation-driven template patch is due (Auto and Reconcile modes, DESIGN.md "When
// to apply a recommendation"): some controlled container's applied request lies outside
// [lowerBound, upperBound] and applying the target would change its resources, and the last
// recommendation-driven update (status.lastRecommendationUpdateTime) is at least the minimum
// update interval ago. Out of bounds but too soon: deferred until last update + interval.
#pragma once

#include <optional>
#include <span>
#include <string>

#include "recommender/apply.h"
#include "recommender/recommendation.h"
#include "recommender/time.h"

namespace vscaler::recommender {

/// One recommended container as the template carries it now.
struct AppliedContainer {
  std::string name;                                         ///< container name
  ContainerResources current;                               ///< the template's resources
  const ContainerRecommendation* recommendation = nullptr;  ///< its recommendation (none: skip)
  ContainerPolicy policy;                                   ///< what vscaler controls
  const LimitRangeItem* limit_range = nullptr;              ///< the namespace's, if any
  /// The values the container will carry once applied, the pod's `type: Pod` max included
  /// (recommended_containers sets it); unset: apply_recommendation of `current`.
  std::optional<ContainerResources> next = std::nullopt;
};

/// The verdict of decide_update.
enum class UpdateVerdict {
  kInBounds,  ///< every applied request lies within its bounds (or applying changes nothing)
  kDue,       ///< patch now
  kDeferred,  ///< out of bounds, but the minimum update interval has not passed
};

/// decide_update's answer; `reason` names the first container and resource out of bounds.
struct UpdateDecision {
  UpdateVerdict verdict = UpdateVerdict::kInBounds;
  TimePoint not_before;  ///< kDeferred: the earliest time the patch may be made
  std::string reason;    ///< e.g. "container app: cpu request 100m is below lowerBound 269m"
};

/// Applies the rule of the file comment. A controlled request that is missing counts as out of
/// bounds. `last_update` is empty when no recommendation was ever applied.
UpdateDecision decide_update(std::span<const AppliedContainer> containers,
                             std::optional<TimePoint> last_update, Duration min_update_interval,
                             TimePoint now);

}  // namespace vscaler::recommender
