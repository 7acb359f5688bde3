// The in-place modes' step of a reconcile (DESIGN.md "In-place resize"): lists the running pods
// of the target (its spec.selector, each pod's owner checked as pod admission does), decides per
// pod (controller/pod_resize.h), sends the resizes that are due through `pods/resize` — all
// controlled containers of a pod in one request — and remembers, per scaler, where each pod
// stood, so that transitions are counted once (vscaler_pod_resizes_total) and a scaler with
// resizes in flight is re-checked with a growing backoff, never polled once all pods carry the
// values.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "api/scaler.h"
#include "controller/pod_resize.h"
#include "controller/reconcile_api.h"
#include "recommender/recommendation.h"
#include "recommender/time.h"

namespace vscaler::controller {

/// What the step counts (vscaler_pod_resizes_total{result}).
class ResizeMetrics {
 public:
  virtual ~ResizeMetrics() = default;
  /// `result`: requested, completed, deferred, infeasible, error.
  virtual void on_pod_resize(const char* /*result*/) {}
  /// `result`: evicted, blocked (a PodDisruptionBudget said 429) (vscaler_pod_evictions_total).
  virtual void on_pod_eviction(const char* /*result*/) {}
  /// `result`: ended, infeasible, error (vscaler_startup_boosts_total; see boost_step.h).
  virtual void on_startup_boost(const char* /*result*/) {}
};

/// The running and starting pods of `scaler`'s target `workload` (as just read): its
/// spec.selector's pods whose owner chain is that workload (another workload's pods may match
/// the selector). The error names a selector that cannot be used.
kube::Result<std::vector<nlohmann::json>, kube::ApiError> list_target_pods(
    ReconcileApi& api, const api::Scaler& scaler, const nlohmann::json& workload);

/// One step's outcome.
struct InPlaceResult {
  /// Every running pod after the sends (a resize sent now is kInProgress; one the API server
  /// refused is kInfeasible with its answer as the message).
  InPlacePlan plan;
  std::size_t requested = 0;  ///< resizes sent and accepted now
  /// Pods this process evicted for the scaler so far (InPlaceOrRecreate; status.pods.evicted).
  std::size_t evicted = 0;
  /// Containers the kubelet restarted for resizes this process sent, as their resizePolicy says
  /// (RestartContainer), so far (status.pods.restarted).
  std::size_t restarted = 0;
  /// When to look again while some pod is not done (in flight or waiting on its node): a
  /// backoff from 1 s doubling to 30 s, and not before a failed call's wait is over
  /// (failed_call_wait); zero when every pod carries the values.
  std::chrono::milliseconds recheck_after{0};
};

/// The step, with its memory of each scaler's pods. Thread-safe (workers run different keys).
class InPlaceStep {
 public:
  /// `min_update_interval` (--min-update-interval): the least time between two
  /// recommendation-driven resizes of one pod; `rules`: VPA's lifetime and quick-OOM thresholds
  /// (their `now`, `min_update_interval` and `resized_at` are ignored); `still_leading`: asked
  /// right before each resize and eviction (empty: always true).
  InPlaceStep(ReconcileApi& api, ResizeMetrics& metrics,
              std::chrono::milliseconds min_update_interval = std::chrono::minutes(10),
              InPlaceRules rules = {}, std::function<bool()> still_leading = {})
      : api_(api), metrics_(metrics), rules_(rules), still_leading_(std::move(still_leading)) {
    rules_.min_update_interval = min_update_interval;
  }

  /// Runs the step for `scaler` on `workload` (as just read), recommended values within
  /// `quota_headroom` (plan_in_place). `may_write` false (not the leader): decides and reports,
  /// sends nothing. A failed pod list is the error.
  kube::Result<InPlaceResult, kube::ApiError> run(
      const api::Scaler& scaler, const nlohmann::json& workload,
      const std::vector<recommender::ContainerRecommendation>& recommendations,
      const recommender::LimitRangeItem* limit_range,
      const std::optional<recommender::PodTotals>& quota_headroom, bool may_write,
      recommender::TimePoint now =
          recommender::TimePoint(std::chrono::duration_cast<recommender::Duration>(
              std::chrono::system_clock::now().time_since_epoch())));
  /// run() on pods already listed (list_target_pods), less those another step handles (a
  /// boosted pod is the boost step's until its boost ends).
  InPlaceResult run_listed(const api::Scaler& scaler, const nlohmann::json& workload,
                           const std::vector<nlohmann::json>& pods,
                           const std::vector<recommender::ContainerRecommendation>& recommendations,
                           const recommender::LimitRangeItem* limit_range,
                           const std::optional<recommender::PodTotals>& quota_headroom,
                           bool may_write, recommender::TimePoint now);

  /// Forgets a scaler (deleted, or no longer in an in-place mode).
  void forget(const std::string& key);

 private:
  /// A resize the API server refused (403, 422): what was sent, when, and what it said.
  struct Refusal {
    nlohmann::json patch;
    recommender::TimePoint at{};
    std::string message;
    bool node_capacity = false;  ///< see PodResize::node_capacity
    bool quota = false;          ///< see PodResize::quota
    /// A quota's or LimitRange's refusal: the namespace's headroom and LimitRange then. The
    /// same patch is held back while the headroom has grown nowhere and the LimitRange is the
    /// same: less room (other pods grew) cannot take it either; more (a quota raised or deleted,
    /// pods gone) may.
    std::optional<recommender::PodTotals> quota_headroom;
    std::optional<recommender::LimitRangeItem> limit_range;
    /// The refusal was a ResourceQuota's ("exceeded quota"), not a LimitRange's.
    bool resource_quota = false;
  };
  /// A resize call that failed in a way a retry may mend: when it may go again, and what it
  /// answered (the pod's message meanwhile).
  struct FailedCall {
    recommender::TimePoint retry_at{};
    std::string message;
    nlohmann::json patch;  ///< what was sent: other values are not held back by its wait
  };
  /// The refusal `error` of `patch` at `now`, classified.
  static Refusal refusal_of(const kube::ApiError& error, const nlohmann::json& patch,
                            recommender::TimePoint now);
  /// Marks `pod` (kDue, counted in flight in `plan`) refused as `refusal` says.
  static void report_refusal(const Refusal& refusal, PodResize& pod, InPlacePlan& plan);

  struct Memory {
    std::map<std::string, PodResizeState> pods;  ///< uid -> state last reported
    int rounds = 0;  ///< consecutive steps that left some pod not done (the backoff's exponent)
    std::size_t evicted = 0;  ///< pods evicted for this scaler
    /// uid -> when a recommendation-driven resize was last sent (the per-pod rate limit).
    std::map<std::string, recommender::TimePoint> resized_at;
    /// uid -> the pod's container restarts when this process sent it a resize, until it is
    /// seen done: "completed" counts only those (a new pod whose status catches up with its spec
    /// was never resized), and restarts since then are the kubelet's for the resize.
    std::map<std::string, std::int64_t> sent;
    std::size_t restarted = 0;  ///< containers restarted by their resizePolicy after a resize
    /// uid -> the last patch the API server refused (held back while it is the same; a quota's
    /// or LimitRange's refusal also only while the namespace offers no more, see Refusal).
    std::map<std::string, Refusal> refused;
    /// uid -> the last resize call that failed without a refusal (ResizeFailure::kRetry): not
    /// sent again before the wait it asked for (failed_call_wait) is over.
    std::map<std::string, FailedCall> failed_calls;
  };
  /// InPlaceOrRecreate's way out for a pod that cannot be resized: evicts one evictable pod of
  /// `result`, if the workload is whole (every pod running, at least 2) and none was evicted
  /// still being replaced; `pods` are all the workload's pods as listed.
  void maybe_evict(const api::Scaler& scaler, const std::vector<nlohmann::json>& pods,
                   recommender::TimePoint now, InPlaceResult& result);

  ReconcileApi& api_;
  ResizeMetrics& metrics_;
  InPlaceRules rules_;
  std::function<bool()> still_leading_;
  std::mutex mutex_;
  std::map<std::string, Memory> memory_;  ///< by scaler key
};

}  // namespace vscaler::controller
