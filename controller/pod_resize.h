// What an in-place mode (InPlaceOrRecreate, InPlace) does with the running pods of one workload
// (DESIGN.md "In-place resize"): per pod, the values it must carry — the same computation as
// every other writer (api::plan_resources on the pod's own spec, the recommendation applied to the
// pod's own requests by recommender::recommended_containers) — where its last resize stands, as
// the kubelet reports it in the pod's status, and whether a resize is due now. Pure: the
// reconciler reads the pods, sends the resizes this decides and reports the counts.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "api/scaler.h"
#include "kube/errors.h"
#include "recommender/apply.h"
#include "recommender/recommendation.h"
#include "recommender/time.h"

namespace vscaler::controller {

/// A resize the API server refused (403, 422) is not sent again unchanged before this long: it
/// would be refused again, while the node's room and the quota change as other pods come and go.
inline constexpr std::chrono::minutes kRefusedResizeRetry{5};

/// How a failed pods/resize call is taken (the in-place and boost steps alike).
enum class ResizeFailure {
  kGone,     ///< 404 naming the pod: it was deleted since it was listed; nothing to do
  kRetry,    ///< a retry may mend it: 429, 5xx, a timeout, a transport failure, a conflict, ...
  kRefused,  ///< refused: 403, 422, or what no retry mends (400, 405, 415, a 404 naming no pod:
             ///< an API server without pods/resize)
};

/// Classifies `error`, the answer to resizing pod `pod`.
ResizeFailure classify_resize_failure(const kube::ApiError& error, std::string_view pod);

/// How soon a resize whose call failed without a refusal (ResizeFailure::kRetry) is sent again:
/// a few seconds, so an overloaded API server is not asked every second, and far less than a
/// refusal's hold.
inline constexpr std::chrono::seconds kCallFailedRecheck{5};
/// The longest an answer's Retry-After holds a resize back (the pod keeps its old values
/// meanwhile, or its boosted CPU).
inline constexpr std::chrono::seconds kCallFailedMaxWait{60};

/// How long after the failed call `error` (ResizeFailure::kRetry) its resize waits:
/// kCallFailedRecheck, or the answer's Retry-After up to kCallFailedMaxWait.
std::chrono::seconds failed_call_wait(const kube::ApiError& error);

/// Where one running pod stands.
enum class PodResizeState {
  kAtTarget,    ///< it carries what the scaler asks for (or, recommended, within the bounds)
  kDue,         ///< a resize must be sent: `patch`
  kInProgress,  ///< asked for, not done yet (not seen, PodResizeInProgress, status behind spec)
  kDeferred,    ///< PodResizePending, reason Deferred (the node has no room now)
  kInfeasible,  ///< PodResizePending, reason Infeasible (the node can never hold it)
  kError,       ///< PodResizeInProgress, reason Error (the runtime failed it)
  kInvalid,     ///< the values cannot be applied validly to this pod (`message` says why)
  /// Due by a recommendation, but resized less than --min-update-interval ago: waits (`since`
  /// is that resize). Set by InPlaceStep, which remembers the resizes it sent.
  kHeld,
};

/// The text of a state, for logs and messages ("InProgress", "Deferred", ...).
std::string_view to_string(PodResizeState state);

/// One running pod of the target.
struct PodResize {
  std::string name;
  std::string uid;
  PodResizeState state = PodResizeState::kAtTarget;
  /// kDue: the pods/resize strategic merge patch, every changed controlled container in one
  /// request ({"spec":{"containers":[{"name":..,"resources":{..}}]}}).
  nlohmann::json patch;
  /// kDue: why (the bounds rule's reason, or the fixed values that differ); kDeferred,
  /// kInfeasible, kError: the kubelet's message; kInvalid: what is invalid.
  std::string message;
  /// kDeferred, kInfeasible, kError, kInProgress: since when the kubelet has reported it (its
  /// condition's lastTransitionTime), when it did.
  std::optional<recommender::TimePoint> since;
  /// The API server refused the resize itself (403 NodeCapacity or a missing node feature, 422
  /// a QoS class change or a node without resize support): set by the step that sent it.
  bool refused = false;
  /// Refused for the node itself: NodeCapacity, or a feature it lacks (never evicted for a
  /// DaemonSet, whose pod comes back on the same node).
  bool node_capacity = false;
  /// Refused by the namespace's ResourceQuota or LimitRange: reported (QuotaExceeded), never
  /// evicted — the replacement would be refused the same way at its creation.
  bool quota = false;
  /// kDue because of a recommendation (bounds, long-lived, a quick OOM), not fixed values:
  /// rate-limited per pod by --min-update-interval.
  bool recommended_due = false;
  /// Due because of VPA's quick-OOM rule: when that OOM kill was. One newer than the pod's last
  /// resize is never held back by the rate limit; an older one was answered by that resize (the
  /// container's lastState keeps it for the pod's life, where VPA's eviction would replace it).
  std::optional<recommender::TimePoint> quick_oom_at;
};

/// The decision for every running pod of one workload, and its counts (status.pods).
struct InPlacePlan {
  std::vector<PodResize> pods;  ///< running pods, in the order given
  std::size_t at_target = 0;
  std::size_t in_progress = 0;  ///< kDue (about to be sent) and kInProgress
  std::size_t pending = 0;      ///< kDeferred, kInfeasible, kError, kInvalid, kHeld
  std::size_t held = 0;         ///< of `pending`, kHeld

  /// Pods not running yet (Pending, not being deleted), plus those the workload's replica count
  /// says are still to be created: a new pod may need a resize once it runs (one created while
  /// the pod admission hook could not give it the values).
  std::size_t starting = 0;
  /// With a quota headroom: what is left of it once every due pod is resized.
  std::optional<recommender::PodTotals> quota_left;

  /// Pods counted: running, not being deleted.
  std::size_t total() const { return pods.size(); }
};

/// Where the kubelet stands on a pod's last resize, as its status reports it.
struct ResizeProgress {
  /// kAtTarget (done, or never asked), kInProgress (not seen yet, PodResizeInProgress, or the
  /// status behind the spec), kDeferred, kInfeasible (PodResizePending) or kError.
  PodResizeState state = PodResizeState::kAtTarget;
  std::string message;  ///< the kubelet's, for kDeferred, kInfeasible and kError
  std::optional<recommender::TimePoint> since;  ///< the condition's lastTransitionTime
};

/// The progress of `pod`'s last resize of its containers named in `containers` (their cpu/memory
/// in the status compared with the spec).
ResizeProgress resize_progress(const nlohmann::json& pod,
                               const std::vector<std::string>& containers);

/// Whether InPlaceOrRecreate may evict `pod` (of a workload of `kind`) to recreate it with the
/// values, at `now` (VPA's rules, DESIGN.md "When a pod cannot be resized"): Infeasible or Error
/// at once, Deferred after 5 minutes, in progress after an hour, refused by the API server (but
/// never for a ResourceQuota or LimitRange); a DaemonSet's pod (it comes back on the same node)
/// only for Infeasible or Error.
bool evictable(const PodResize& pod, std::string_view kind, recommender::TimePoint now);

/// VPA's updater rules for recommended values, besides the bounds (DESIGN.md "In-place resize").
struct InPlaceRules {
  recommender::TimePoint now;  ///< the clock the two rules below read
  /// A pod running this long is resized when its requests are more than `long_lived_diff` from
  /// the target (VPA: 12 h, 10 %), even within the bounds
  /// (--in-recommendation-bounds-eviction-lifetime-threshold).
  std::chrono::milliseconds long_lived{std::chrono::hours(12)};
  double long_lived_diff = 0.10;
  /// A container OOM-killed this soon after it started makes its pod due at once (VPA's quick-OOM
  /// rule: 10 minutes, --evict-after-oom-threshold).
  std::chrono::milliseconds quick_oom{std::chrono::minutes(10)};
  /// VPA's --min-update-interval: a pod due for a recommendation sooner than this after its last
  /// recommendation-driven resize (`resized_at`) is kHeld, and what it would grow by is left to
  /// the pods after it under a ResourceQuota. A quick OOM newer than that resize is not held.
  std::chrono::milliseconds min_update_interval{std::chrono::minutes(10)};
  /// When this process last resized each pod (by uid) for a recommendation; nullptr: none.
  const std::map<std::string, recommender::TimePoint>* resized_at = nullptr;
  /// True for a due pod whose patch this pass will not send (the same patch was refused, or its
  /// call failed, a moment ago): what it would grow by is left to the pods after it under a
  /// ResourceQuota. Empty: every due pod is sent.
  std::function<bool(const PodResize&)> waits;
};

/// Decides for each of `pods` (pod objects as listed; those not Running or being deleted are
/// skipped) of `scaler`'s target. Fixed values: a pod whose controlled containers differ is due.
/// Recommended values (`recommendations`, capped by `limit_range`, nullptr: none): a pod whose
/// request for a controlled resource lies outside [lowerBound, upperBound] is due, to the target
/// applied to its own requests (limits in proportion, as for the template); so is one that has
/// run longer than rules.long_lived with requests far from the target, and one OOM-killed soon
/// after it started (`rules`; `recommended_due` marks these; one resized for a recommendation
/// less than rules.min_update_interval ago is kHeld instead of kDue). A pod
/// with a resize in progress is left alone; a Deferred, Infeasible or failed one is due again only
/// when the values wanted now differ from those it was asked for, and in InPlace (which never
/// evicts) an Infeasible or failed one only when they ask no more than that attempt (VPA's rule).
/// With `quota_headroom` (the namespace's ResourceQuota headroom, QuotaCache::headroom) the
/// recommended values of each due pod are scaled down so its growth fits what is left, the pods
/// before it counted first (the plan's `quota_left` says what is left after them; a pod with no
/// room at all is kInfeasible with `quota`, never evicted); fixed
/// values are the scaler's as written and left to the API server's verdict (QuotaExceeded).
InPlacePlan plan_in_place(const api::Scaler& scaler, const std::vector<nlohmann::json>& pods,
                          const std::vector<recommender::ContainerRecommendation>& recommendations,
                          const recommender::LimitRangeItem* limit_range = nullptr,
                          const InPlaceRules& rules = {},
                          const std::optional<recommender::PodTotals>& quota_headroom = {});

}  // namespace vscaler::controller
