// The recommendation applied to a scaler's recommended containers: maps api's spec entries
// (api::ContainerResources, api::ControlledValues) onto the recommender's policy types — the one
// place the two meet — and computes, per container of the workload's template, the values the
// recommendation gives it (apply_recommendation). The reconciler and the admission hook both take
// the values they write from here, and decide_update its inputs.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "api/resources.h"
#include "api/scaler.h"
#include "recommender/apply.h"
#include "recommender/recommendation.h"
#include "recommender/update_rule.h"

namespace vscaler::recommender {

/// The scaler's status.recommendation; empty when absent or unreadable (the reconciler logs it).
/// Derived once per scaler and kept with it (Scaler::derived_recommendation): the admission hooks
/// ask for every review of its workload and of each of its pods, and parsing it was half of such
/// a review's handler (5.4 of 11.8 us for 2 containers).
std::shared_ptr<const std::vector<ContainerRecommendation>> recommendations_of(
    const api::Scaler& scaler);

/// The cpu/memory requests and limits `object`'s pod counts for, as the scheduler and
/// ResourceQuota count them: its containers' sums plus the sidecars' (init containers with
/// restartPolicy Always), or a regular init container's need (with the sidecars started before
/// it) where that is more, or the pod-level resources where they are set and more.
PodTotals pod_totals_of(const nlohmann::json& object);

/// The same once `plan` (made for `object`) is written.
PodTotals pod_totals_after(const nlohmann::json& object, const api::ResourcePlan& plan);

/// What `object`'s containers share the pod's totals with while they run: the sidecars' sums.
/// A budget for the containers is the pod's, less these (minus_bounded).
PodTotals shared_with_containers(const nlohmann::json& object);

/// `bound` less `taken` for each key of `bound` (at least zero).
PodTotals minus_bounded(const PodTotals& bound, const PodTotals& taken);

/// `headroom` with `spent` taken off each of its keys (at least zero) and `earned` (negative
/// growth: a pod made smaller) never added: the quota controller counts that back itself.
PodTotals spend(const PodTotals& headroom, const PodTotals& before, const PodTotals& after);

/// `a` + `b` for each key of `b` (keys only in `a` are dropped: `b` says what is bounded).
PodTotals bounded_sum(const PodTotals& a, const PodTotals& b);

/// `bound` with each of its keys raised to `floor`'s value where that is more (keys only in
/// `floor` stay unbounded).
PodTotals at_least(const PodTotals& bound, const PodTotals& floor);

/// "requests.cpu 1200m above the 800m left" for the first sum of `totals` above its `bound`;
/// empty when every bounded sum fits.
std::string exceeds(const PodTotals& totals, const PodTotals& bound);

/// Whether headroom `now` offers more than `then` anywhere (nullopt: no quota, unbounded): a
/// bound gone, or some bounded key with more left. Only more room can take what less refused.
bool grew(const std::optional<PodTotals>& then, const std::optional<PodTotals>& now);

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
  /// The values of every container of the pod once applied (recommended and not), in order.
  std::vector<ContainerResources> pod;
  /// True when `budget` scaled some recommended value down.
  bool budget_capped = false;
};

/// For every container of `workload` (its pod spec: a workload's template or a Pod, see
/// api::pod_spec_of) whose entry in `scaler` is a recommended one: `recommendations`' target
/// applied to its current resources under its policy and `limit_range` (nullptr: none), the
/// pod's sums then kept within `budget` (nullptr: none; a ResourceQuota's headroom, see
/// fit_pod_totals). Fixed and "Off" entries are not touched.
RecommendedContainers recommended_containers(
    const api::Scaler& scaler, const nlohmann::json& workload,
    const std::vector<ContainerRecommendation>& recommendations,
    const LimitRangeItem* limit_range = nullptr, const PodTotals* budget = nullptr);

}  // namespace vscaler::recommender
