// What a scaler's recommendation (status.recommendation, written by the recommender) means for one
// reconcile of its workload: the values it gives each recommended container and whether a
// recommendation-driven patch is due now, deferred, or not needed (DESIGN.md "When to apply a
// recommendation"; the rule itself is recommender::decide_update).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "api/scaler.h"
#include "recommender/desired.h"
#include "recommender/time.h"
#include "recommender/update_rule.h"

namespace vscaler::controller {

/// The recommendation's side of one reconcile. Not copyable: `containers` points into
/// `recommendations`.
struct RecommendationStep {
  RecommendationStep() = default;
  RecommendationStep(const RecommendationStep&) = delete;
  RecommendationStep& operator=(const RecommendationStep&) = delete;
  RecommendationStep(RecommendationStep&&) = default;

  std::vector<recommender::ContainerRecommendation> recommendations;  ///< from status
  recommender::RecommendedContainers containers;                      ///< per recommended container
  recommender::UpdateDecision decision;  ///< the bounds rule and rate limit
  std::string error;  ///< status.recommendation did not parse (then nothing is recommended)
};

/// Reads the scaler's status (recommendation, lastRecommendationUpdateTime) against `workload`'s
/// template and decides with `min_update_interval` at `now`; `limit_range` (the namespace's,
/// nullptr: none) caps the values applied. `applied_since` (RFC 3339, "" for none): a later
/// recommendation-driven patch than the status says, whose status write failed: the rate limit
/// counts from the later of the two.
RecommendationStep plan_recommendation(const api::Scaler& scaler, const nlohmann::json& workload,
                                       recommender::Duration min_update_interval,
                                       recommender::TimePoint now,
                                       const recommender::LimitRangeItem* limit_range = nullptr,
                                       const std::string& applied_since = {});

/// The wall clock at the recommender's resolution.
recommender::TimePoint wall_now();

}  // namespace vscaler::controller
