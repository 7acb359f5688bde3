// The recommendation applied to a scaler's recommended containers: maps api's spec entries
// (api::ContainerResources, api::ControlledValues) onto the recommender's policy types — the one
// place the two meet — and computes, per container of the workload's template, the values the
// recommendation gives it (apply_recommendation). The reconciler and the admission hook both take
// the values they write from here, and decide_update its inputs.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "api/resources.h"
#include "api/scaler.h"
#include "recommender/apply.h"
#include "recommender/recommendation.h"
#include "recommender/update_rule.h"

namespace vscaler::recommender {

/// The scaler's status.recommendation; empty when absent or unreadable (the reconciler logs it).
std::vector<ContainerRecommendation> recommendations_of(const api::Scaler& scaler);

/// A spec entry's recommendation policy with vscaler's defaults (already filled in by parsing).
ContainerPolicy policy_of(const api::ContainerResources& entry);

/// A container's `resources` JSON (as the template stores it) as requests and limits; only cpu
/// and memory, unparsable values skipped.
ContainerResources resources_of(const nlohmann::json& resources);

/// What a scaler's recommendation means for one workload's template.
struct RecommendedContainers {
  /// Per recommended container that has a recommendation: the keys the target sets.
  api::DesiredResources desired;
  /// The same containers as decide_update reads them; `recommendation` points into the list
  /// given to recommended_containers, which must outlive this.
  std::vector<AppliedContainer> applied;
  /// Recommended containers of the template with no recommendation yet.
  std::vector<std::string> awaiting;
};

/// For every container of `workload` (its pod spec: a workload's template or a Pod, see
/// api::pod_spec_of) whose entry in `scaler` is a recommended one: `recommendations`' target
/// applied to its current resources under its policy and `limit_range` (nullptr: none). Fixed and
/// "Off" entries are not touched.
RecommendedContainers recommended_containers(
    const api::Scaler& scaler, const nlohmann::json& workload,
    const std::vector<ContainerRecommendation>& recommendations,
    const LimitRangeItem* limit_range = nullptr);

}  // namespace vscaler::recommender
