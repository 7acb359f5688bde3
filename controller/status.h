// Status of a VerticalScaler: the conditions and fields the reconciler reports, built so that an
// unchanged outcome yields a byte-identical status (no write) and a condition's
// lastTransitionTime moves only when its status does.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "api/scaler.h"

namespace vscaler::controller {

/// Condition types and reasons of DESIGN.md (the API contract; users match on these strings).
namespace condition {
/// Whether the target workload exists, for every kind.
inline constexpr const char* kTargetFound = "TargetFound";
/// TargetFound's twin that earlier versions wrote, still written for Deployment targets.
inline constexpr const char* kDeploymentFound = "DeploymentFound";
inline constexpr const char* kScaled = "Scaled";
/// Written by the recommender; the reconciler sets it only when the recommender is off.
inline constexpr const char* kRecommendationProvided = "RecommendationProvided";
inline constexpr const char* kReady = "Ready";
/// True while a HorizontalPodAutoscaler scales the target on cpu or memory (warned, not fought);
/// written False once it no longer does, absent when it never did.
inline constexpr const char* kHorizontalPodAutoscalerConflict = "HorizontalPodAutoscalerConflict";
}  // namespace condition
namespace reason {
inline constexpr const char* kFound = "Found";
inline constexpr const char* kNotFound = "NotFound";
inline constexpr const char* kApplied = "Applied";
inline constexpr const char* kContainerNotFound = "ContainerNotFound";
inline constexpr const char* kUpdateModeOff = "UpdateModeOff";
inline constexpr const char* kInvalidResources = "InvalidResources";
inline constexpr const char* kMutatedByAdmission = "MutatedByAdmission";
inline constexpr const char* kPatchFailed = "PatchFailed";
inline constexpr const char* kUpToDate = "UpToDate";
inline constexpr const char* kConflict = "Conflict";
inline constexpr const char* kPending = "Pending";
/// Scaled=False while a recommendation waits for the mode's rules (Ready stays True).
inline constexpr const char* kDeferred = "Deferred";
/// Scaled=False: every controlled container is recommended and none has a recommendation yet.
inline constexpr const char* kAwaitingRecommendation = "AwaitingRecommendation";
/// Scaled=False while running pods are resized in place (Ready stays True).
inline constexpr const char* kResizing = "Resizing";
/// Scaled=False: some running pods cannot be resized now (Deferred, Infeasible, Error, refused).
inline constexpr const char* kResizeInfeasible = "ResizeInfeasible";
/// Scaled=False: a resize was refused by the namespace's ResourceQuota or LimitRange (never
/// answered with an eviction).
inline constexpr const char* kQuotaExceeded = "QuotaExceeded";
/// Scaled=False: an in-place mode on an API server older than 1.33 (no pods/resize); the values
/// apply as in Initial.
inline constexpr const char* kResizeUnsupported = "ResizeUnsupported";
/// HorizontalPodAutoscalerConflict=True: an HPA scales the target on cpu or memory.
inline constexpr const char* kScalesOnCpuOrMemory = "ScalesOnCpuOrMemory";
/// HorizontalPodAutoscalerConflict=False: none does (any more).
inline constexpr const char* kNoConflict = "NoConflict";
/// Ready=False: the spec cannot be used (admitted by an older CRD, or while the validating
/// webhook was down); the message says why.
inline constexpr const char* kInvalidSpec = "InvalidSpec";
/// RecommendationProvided=False when --recommender-interval is 0.
inline constexpr const char* kRecommenderDisabled = "RecommenderDisabled";
}  // namespace reason

/// One metav1.Condition as the reconciler decides it (times are filled in by build_status).
struct Condition {
  std::string type;
  bool status = false;
  std::string reason;
  std::string message;
};

/// Everything a reconcile decided about the status.
struct StatusReport {
  api::TargetRef target;   ///< the workload the scaler targets
  std::string target_uid;  ///< empty when not found
  bool target_found = false;
  /// status.containers; nullopt keeps the stored value (e.g. when the workload was not read).
  std::optional<nlohmann::json> containers;
  bool scaled_now = false;  ///< the workload was written: lastScaleTime becomes now
  /// A recommendation-driven patch was made: lastRecommendationUpdateTime (the rate-limit clock)
  /// becomes now.
  bool recommendation_applied_now = false;
  /// When an earlier write of the workload happened whose status write failed (RFC 3339, ""
  /// when none): written as lastScaleTime / lastRecommendationUpdateTime unless the flags above
  /// say now, or the stored time is as recent. The reconcile that patched is over by then, and
  /// the next finds nothing to patch: without these, the rate-limit clock would stay at the
  /// patch before and the next recommendation would roll out within --min-update-interval.
  std::string scaled_at;
  std::string recommendation_applied_at;  ///< see scaled_at
  /// status.pods of the in-place modes ({total, atTarget, resizing, pending, evicted}); nullopt
  /// removes a stored one (the scaler left those modes) or keeps none.
  std::optional<nlohmann::json> pods;
  /// status.startupBoost ({boosted, ended, stuck, message}) while the scaler boosts pods or has
  /// boosted some; nullopt removes a stored one.
  std::optional<nlohmann::json> startup_boost;
  std::vector<Condition> conditions;  ///< conditions to set; others already stored are kept
};

/// The new status object from the stored one: sets observedGeneration, target, containers,
/// lastScaleTime (now when scaled_now, else scaled_at when later than the stored one),
/// lastRecommendationUpdateTime (likewise with recommendation_applied_now and
/// recommendation_applied_at) and the conditions, keeping each condition's lastTransitionTime
/// when its status did not change. A Deployment target also gets status.deployment and
/// DeploymentFound (TargetFound's twin), as earlier versions wrote them; any other kind drops
/// both (the scaler may have targeted a Deployment before). `now` is RFC 3339.
nlohmann::json build_status(const nlohmann::json& stored, int64_t generation,
                            const StatusReport& report, const std::string& now);

/// The stored status of a scaler whose spec cannot be used: Ready=False, InvalidSpec, `message`,
/// and observedGeneration `generation`; everything else (targets, values) as stored: nothing is
/// applied from an unusable spec, and what was applied before stays.
nlohmann::json build_invalid_status(const nlohmann::json& stored, int64_t generation,
                                    const std::string& message, const std::string& now);

}  // namespace vscaler::controller
