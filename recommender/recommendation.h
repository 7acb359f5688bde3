// The recommendation, as VerticalPodAutoscaler's recommender computes it from a container's
// history: target / lowerBound / upperBound are the 90th / 50th / 95th percentiles of the CPU
// histogram and of the memory-peak histogram, each plus a 15 % safety margin; with a young history
// the upper bound is multiplied by (1 + 1/confidence) and the lower bound by
// (1 + 0.001/confidence)^-2, confidence = min(history length in days, samples / 1440); then the
// per-pod minimums (25m CPU, 250Mi memory, shared equally among the containers VPA counts: not
// Off, in the pods' spec or with a history) raise each bound; last, minAllowed/maxAllowed clamp
// each bound (uncappedTarget = the target before it). Resources a container's
// controlledResources leaves out are not published (controlled_only).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "recommender/aggregate_options.h"
#include "recommender/container_aggregate.h"
#include "recommender/resources.h"

namespace vscaler::recommender {

/// The estimator's constants (VPA's defaults and flags of the same meaning).
struct RecommendationOptions {
  double target_percentile = 0.9;        ///< VPA targetCPUPercentile / memory peaks
  double lower_bound_percentile = 0.5;   ///< lowerBound
  double upper_bound_percentile = 0.95;  ///< upperBound
  double safety_margin = 0.15;           ///< --recommendation-margin-fraction
  double pod_min_cpu_cores = 0.025;      ///< --pod-recommendation-min-cpu-millicores 25
  double pod_min_memory_bytes = 250.0 * 1024 * 1024;  ///< --pod-recommendation-min-memory-mb 250
  /// History length that counts as one unit of confidence (VPA: a day; 1 sample/minute for a
  /// day also gives 1). Independent of the half-lives, so shortened half-lives in tests do not
  /// make a young history look confident.
  Duration confidence_interval = std::chrono::hours(24);
  /// --round-cpu-millicores, --round-memory-bytes: the steps published values round up to.
  Rounding rounding;
};

/// One value per resource, in base units (cores, bytes).
struct Amounts {
  double cpu_cores = 0;     ///< CPU in cores
  double memory_bytes = 0;  ///< memory in bytes
};

/// The three bounds of one container before rounding and clamping (the per-pod minimums
/// applied).
struct Estimate {
  Amounts target;       ///< p90 + margin, at least the per-pod share
  Amounts lower_bound;  ///< p50 + margin, x (1 + 0.001/confidence)^-2, at least the share
  Amounts upper_bound;  ///< p95 + margin, x (1 + 1/confidence), at least the share
};

/// min(history length / confidence interval, samples / minutes of the interval); 0 when empty.
double confidence(const AggregateState& state, Duration confidence_interval);

/// The container's estimate. The per-pod minimums are shared among `containers_sharing` (>= 1)
/// containers (ScalerHistory::recommendations says which).
Estimate estimate(const ContainerAggregate& aggregate, const AggregateOptions& aggregate_options,
                  const RecommendationOptions& options, int containers_sharing);

/// A container's policy bounds (either map may lack cpu or memory).
struct AllowedRange {
  ResourceMap min_allowed;  ///< spec.containers[].minAllowed
  ResourceMap max_allowed;  ///< spec.containers[].maxAllowed
};

/// A container's recommendation in VPA's status shape, rounded up to the Rounding's steps.
struct ContainerRecommendation {
  std::string container_name;   ///< containerName
  ResourceMap target;           ///< what to apply
  ResourceMap lower_bound;      ///< below this an applied request is too small
  ResourceMap upper_bound;      ///< above this an applied request is too large
  ResourceMap uncapped_target;  ///< target before minAllowed/maxAllowed
  friend bool operator==(const ContainerRecommendation&, const ContainerRecommendation&) = default;
};

/// Rounds `estimate` up to quantities once, at `rounding`'s steps (the histograms' doubles are
/// never truncated on the way), then clamps each bound to `range`; uncappedTarget is the rounded
/// value before the clamp.
ContainerRecommendation recommend(const std::string& container_name, const Estimate& estimate,
                                  const AllowedRange& range, const Rounding& rounding = {});

/// Which resources a container's recommendation names: spec.containers[].controlledResources.
struct ControlledResources {
  bool cpu = true;     ///< cpu is controlled
  bool memory = true;  ///< memory is controlled
};

/// `recommendation` without the resources `controlled` leaves out, in every bound and in
/// uncappedTarget: VPA (logic/recommender.go FilterControlledResources) publishes no value for a
/// resource it does not control, so its tools read only what a scaler may apply.
ContainerRecommendation controlled_only(ContainerRecommendation recommendation,
                                        ControlledResources controlled);

/// One entry of status.recommendation.containerRecommendations:
/// {containerName, target, lowerBound, upperBound, uncappedTarget}, quantities as strings.
nlohmann::json to_json(const ContainerRecommendation& recommendation);

/// The inverse of to_json over a whole status.recommendation ({containerRecommendations: [...]});
/// null or absent containerRecommendations is an empty list. An error names the field
/// ("status.recommendation.containerRecommendations[0].target.cpu: ...").
kube::Result<std::vector<ContainerRecommendation>> parse_recommendation(
    const nlohmann::json& recommendation);

/// `value` clamped to [min, max] of `resource` in `range` (a missing side, or one of 0, does not
/// clamp).
kube::Quantity clamp_to_range(const std::string& resource, const kube::Quantity& value,
                              const AllowedRange& range);

}  // namespace vscaler::recommender
