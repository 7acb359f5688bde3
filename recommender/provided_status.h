// The recommender's part of a VerticalScaler's status: status.recommendation (VPA's shape) and
// the RecommendationProvided condition (metav1.Condition), computed from the stored status so
// that an unchanged outcome yields no write and the condition's lastTransitionTime moves only
// when its status flips. A young history's bounds move a little every pass (confidence grows),
// so bounds within kBoundWriteTolerance of the stored ones count as unchanged: without it every
// young scaler's status is written every pass (1,000 writes per pass at 1,000 scalers), while
// targets, which the webhook and reconciler apply, are always written exact. A young upperBound
// (p95 x (1 + 1/confidence), tens of times the target) falls by ~1/n of itself in the n-th pass,
// over 5 % for the first ~20 passes: while both it and the stored one lie above every request
// the workload carries, no decision can tell them apart (only a request above upperBound is
// acted on), so there it is rewritten only when it moved by kFarBoundWriteFactor. Everything
// else in the status (the reconciler's fields and conditions, lastRecommendationUpdateTime) is
// left as stored.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "recommender/pods.h"
#include "recommender/resources.h"
#include "recommender/scaler_history.h"

namespace vscaler::recommender {

/// The condition type the recommender owns.
inline constexpr const char* kRecommendationProvided = "RecommendationProvided";

/// The relative change of a lowerBound or upperBound below which the stored bound is kept (the
/// bounds only decide whether an applied request is far enough off to act on).
inline constexpr double kBoundWriteTolerance = 0.05;

/// The factor by which an upperBound above every applied request (RequestCeilings) must move
/// before it is rewritten: the shown bound is then never more than 25 % off, and a young
/// history's rewrites, one every pass for its first ~20 passes, become one each time its length
/// grows by a quarter (about 10 in those 20 passes and 8 from the 20th to the 120th, where 5 %
/// writes 20 and 37).
inline constexpr double kFarBoundWriteFactor = 1.25;

/// Per container name, the highest request per resource among the workload's template and the
/// pods a pass saw (a resource nobody requests counts as 0: a missing request is acted on
/// whatever the bounds say). A container not named here gets the plain tolerance.
using RequestCeilings = std::map<std::string, ResourceMap, std::less<>>;

/// What a pass publishes for one scaler.
struct Publication {
  ProvidedReason reason = ProvidedReason::kInsufficientHistory;  ///< True only for kRecommended
  std::string message;  ///< what the pass saw ("3 pods, 3 with metrics, 6 container samples")
  /// status.recommendation to write; nullopt keeps the stored one (NoMetrics, NoPodsMatched,
  /// InsufficientHistory keep the last recommendation).
  std::optional<nlohmann::json> recommendation;
  /// What the workload requests now: an upperBound above it may lag (kFarBoundWriteFactor).
  RequestCeilings request_ceilings = {};
};

/// Raises `ceilings` to the requests of `containers` (a request missing where a limit is set
/// counts as the limit, as the API server defaults it).
void raise_request_ceilings(RequestCeilings& ceilings, const std::vector<PodContainer>& containers);

/// Whether the status.recommendation `next` says nothing new next to `stored`: the same
/// containers in the same order, the same target and uncappedTarget, and every lowerBound and
/// upperBound within kBoundWriteTolerance of the stored one, or, for an upperBound whose old and
/// new values both lie at or above the container's request ceiling, within kFarBoundWriteFactor.
/// Unparsable input compares exactly.
bool same_recommendation(const nlohmann::json& stored, const nlohmann::json& next,
                         const RequestCeilings& ceilings = {});

/// The `status` of a merge patch that makes `stored_status` say `publication` (the
/// recommendation when set, and every stored condition with RecommendationProvided set), or
/// nullopt when it already does. `now` (RFC 3339) becomes lastTransitionTime only on a flip.
std::optional<nlohmann::json> status_update(const nlohmann::json& stored_status,
                                            std::int64_t generation, const Publication& publication,
                                            const std::string& now);

}  // namespace vscaler::recommender
