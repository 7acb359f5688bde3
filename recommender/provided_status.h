// The recommender's part of a VerticalScaler's status: status.recommendation (VPA's shape) and
// the RecommendationProvided condition (metav1.Condition), computed from the stored status so
// that an unchanged outcome yields no write and the condition's lastTransitionTime moves only
// when its status flips. Targets, which the webhook and reconciler apply, are always written
// exact. The bounds only decide whether an applied request is off enough to act on (below
// lowerBound or above upperBound), and a young history's move every pass: its upperBound
// (p95 x (1 + 1/confidence), tens of times the target) falls by ~1/n of itself in the n-th pass,
// and a percentile a bucket (5 %) away flips both. So a bound within kBoundWriteTolerance of the
// stored one counts as unchanged, and one that lies, stored and new, beyond every request the
// workload carries (a lowerBound under the lowest, an upperBound over the highest) within
// kFarBoundWriteFactor: no decision can tell those two apart. Without that, a young 10,000-scaler
// install wrote every status every pass for its first ~20 passes. Such a far bound is even kept
// whatever its move except in one pass of kFarBoundRefreshPasses, chosen per scaler
// (Publication::refresh_far_bounds): 10,000 histories created in the same minute age together,
// and their upperBounds crossed 25 % in the same pass, a burst of thousands of writes every few
// passes. Everything else in the status
// (the reconciler's fields and conditions, lastRecommendationUpdateTime) is left as stored.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "recommender/pods.h"
#include "recommender/resources.h"
#include "recommender/scaler_history.h"

namespace vscaler::recommender {

/// The condition type the recommender owns.
inline constexpr const char* kRecommendationProvided = "RecommendationProvided";

/// The relative change of a lowerBound or upperBound below which the stored bound is kept.
inline constexpr double kBoundWriteTolerance = 0.05;

/// The factor by which a bound beyond every applied request (RequestSpans) must move before it
/// is rewritten: the shown bound is then never more than 25 % off, and a young upperBound's
/// rewrites, one every pass for its first ~20 passes, become one each time the history grows by
/// a quarter (about 10 in those 20 passes and 8 from the 20th to the 120th, where 5 % writes 20
/// and 37); a percentile's one-bucket flips (5 %) write nothing.
inline constexpr double kFarBoundWriteFactor = 1.25;

/// A scaler's far bounds (see kFarBoundWriteFactor) are rewritten, when they moved that much, in
/// one pass of this many, the pass picked by the scaler's uid; in the others they are kept
/// whatever their move. So the shown far bound is within kFarBoundWriteFactor of the value computed
/// in the scaler's last refresh pass, at most three passes ago, and the rewrites of histories that
/// age together are spread over four passes instead of landing in one.
inline constexpr unsigned kFarBoundRefreshPasses = 4;

/// One container's requests, per resource, among the workload's template and the pods a pass
/// saw. A resource nobody requests has no entry: no decision rests on its bounds then (a missing
/// request is acted on whatever they say).
struct RequestSpan {
  ResourceMap lowest;   ///< the lowest request: a lowerBound under it decides nothing
  ResourceMap highest;  ///< the highest request: an upperBound over it decides nothing
};

/// Per container name. A container not named here gets the plain tolerance only.
using RequestSpans = std::map<std::string, RequestSpan, std::less<>>;

/// What a pass publishes for one scaler.
struct Publication {
  ProvidedReason reason = ProvidedReason::kInsufficientHistory;  ///< True only for kRecommended
  std::string message;  ///< what the pass saw ("3 pods, 3 with metrics, 6 container samples")
  /// status.recommendation to write; nullopt keeps the stored one (NoMetrics, NoPodsMatched,
  /// InsufficientHistory keep the last recommendation).
  std::optional<nlohmann::json> recommendation;
  /// What the workload requests now: a bound beyond it may lag (kFarBoundWriteFactor).
  RequestSpans request_spans = {};
  /// Whether a bound beyond every request that moved more than kFarBoundWriteFactor is rewritten
  /// in this pass; false keeps it whatever its move (kFarBoundRefreshPasses).
  bool refresh_far_bounds = true;
};

/// Whether the pass numbered `pass` is the one of kFarBoundRefreshPasses in which the scaler with
/// `uid` has its far bounds rewritten (Publication::refresh_far_bounds). Stable across processes.
bool far_bound_refresh_pass(std::string_view uid, std::uint64_t pass);

/// Widens `spans` to the requests of `containers` (a request missing where a limit is set counts
/// as the limit, as the API server defaults it).
void widen_request_spans(RequestSpans& spans, const std::vector<PodContainer>& containers);

/// Whether the status.recommendation `next` says nothing new next to `stored`: the same
/// containers in the same order, the same target and uncappedTarget, and every lowerBound and
/// upperBound within kBoundWriteTolerance of the stored one, or, when both values lie beyond the
/// container's requests (`spans`), within kFarBoundWriteFactor (`refresh_far_bounds`) or anywhere
/// (not). Unparsable input compares exactly.
bool same_recommendation(const nlohmann::json& stored, const nlohmann::json& next,
                         const RequestSpans& spans = {}, bool refresh_far_bounds = true);

/// The `status` of a merge patch that makes `stored_status` say `publication` (the
/// recommendation when set, and every stored condition with RecommendationProvided set), or
/// nullopt when it already does. `now` (RFC 3339) becomes lastTransitionTime only on a flip.
std::optional<nlohmann::json> status_update(const nlohmann::json& stored_status,
                                            std::int64_t generation, const Publication& publication,
                                            const std::string& now);

}  // namespace vscaler::recommender
