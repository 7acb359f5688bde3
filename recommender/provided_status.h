// The recommender's part of a VerticalScaler's status: status.recommendation (VPA's shape) and
// the RecommendationProvided condition (metav1.Condition), computed from the stored status so
// that an unchanged outcome yields no write and the condition's lastTransitionTime moves only
// when its status flips. A young history's bounds move a little every pass (confidence grows),
// so bounds within kBoundWriteTolerance of the stored ones count as unchanged: without it every
// young scaler's status is written every pass (1,000 writes per pass at 1,000 scalers), while
// targets, which the webhook and reconciler apply, are always written exact. Everything else in
// the status (the reconciler's fields and conditions, lastRecommendationUpdateTime) is left as
// stored.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "recommender/scaler_history.h"

namespace vscaler::recommender {

/// The condition type the recommender owns.
inline constexpr const char* kRecommendationProvided = "RecommendationProvided";

/// The relative change of a lowerBound or upperBound below which the stored bound is kept (the
/// bounds only decide whether an applied request is far enough off to act on).
inline constexpr double kBoundWriteTolerance = 0.05;

/// What a pass publishes for one scaler.
struct Publication {
  ProvidedReason reason = ProvidedReason::kInsufficientHistory;  ///< True only for kRecommended
  std::string message;  ///< what the pass saw ("3 pods, 3 with metrics, 6 container samples")
  /// status.recommendation to write; nullopt keeps the stored one (NoMetrics, NoPodsMatched,
  /// InsufficientHistory keep the last recommendation).
  std::optional<nlohmann::json> recommendation;
};

/// Whether the status.recommendation `next` says nothing new next to `stored`: the same
/// containers in the same order, the same target and uncappedTarget, and every lowerBound and
/// upperBound within kBoundWriteTolerance of the stored one. Unparsable input compares exactly.
bool same_recommendation(const nlohmann::json& stored, const nlohmann::json& next);

/// The `status` of a merge patch that makes `stored_status` say `publication` (the
/// recommendation when set, and every stored condition with RecommendationProvided set), or
/// nullopt when it already does. `now` (RFC 3339) becomes lastTransitionTime only on a flip.
std::optional<nlohmann::json> status_update(const nlohmann::json& stored_status,
                                            std::int64_t generation, const Publication& publication,
                                            const std::string& now);

}  // namespace vscaler::recommender
