// The end of a startup boost (DESIGN.md "Startup boost"): of the running pods of a scaler's
// target, those admitted boosted (api/startup_boost.h: their annotation records each boosted
// container's base and boosted CPU) that are Ready and past the boost's durationSeconds are
// resized in place back to their base through `pods/resize`; progress, Deferred, Infeasible and
// a refused resize are followed as for other resizes (controller/pod_resize.h) and reported,
// never answered with an eviction. Runs for a scaler in every mode, "Off" included. A scaler is
// looked at again while it has boosted pods: when the first of them is due, or soon while some
// are not Ready yet; never polled once every boost has ended.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "api/scaler.h"
#include "api/startup_boost.h"
#include "controller/in_place_step.h"
#include "controller/reconcile_api.h"
#include "metrics/registry.h"
#include "recommender/time.h"

namespace vscaler::controller {

/// vscaler_startup_boosts_total{result}: boosted (a pod admitted boosted), skipped (a pod of a
/// boosting scaler admitted without: no cpu request, or no room), ended (resized back to its
/// base), infeasible (the resize back refused by the API server or Infeasible on its node),
/// error (the runtime failed the resize back). Registered by whoever counts first.
metrics::CounterFamily& startup_boost_counter(metrics::Registry& registry);

/// Where one boosted pod stands.
enum class BoostState {
  kStarting,    ///< boosted, not Ready yet
  kHolding,     ///< boosted and Ready, durationSeconds not passed (`due_at`)
  kDue,         ///< boosted, Ready and past durationSeconds: `patch` puts it back
  kEnding,      ///< put back, the kubelet has not applied it yet
  kDeferred,    ///< the resize back is PodResizePending, Deferred
  kInfeasible,  ///< the resize back is PodResizePending, Infeasible
  kError,       ///< the runtime failed the resize back
  kRefused,     ///< the API server refused the resize back (`message` says why)
  kEnded,       ///< it carries its base (or was resized since by someone else)
};

/// The text of a state ("Starting", "Holding", ...).
std::string_view to_string(BoostState state);

/// One pod admitted boosted.
struct PodBoost {
  std::string name;
  std::string uid;
  BoostState state = BoostState::kEnded;
  std::string message;  ///< why not ended: the kubelet's or the API server's words
  std::optional<recommender::TimePoint> due_at;  ///< kHolding: when the boost may end
  nlohmann::json patch;                          ///< kDue: the pods/resize body
  /// kDue: the resize call failed in a way a retry may mend (429, 5xx, a timeout, a conflict):
  /// it is sent again this long from now (kCallFailedRecheck, or the answer's Retry-After up to
  /// kCallFailedMaxWait); zero when no call failed.
  std::chrono::seconds call_retry{0};
};

/// Decides for every pod of `pods` that carries a boost annotation (pods being deleted, and pods
/// without the annotation, are skipped) at `now`. A pod whose boosted containers are back at
/// their base CPU, in its spec and as the kubelet applied it, has ended its boost, whatever else
/// is in flight (a resize of its memory is the in-place step's).
std::vector<PodBoost> plan_unboost(const std::vector<nlohmann::json>& pods,
                                   recommender::TimePoint now);

/// One step's outcome.
struct BoostResult {
  std::vector<PodBoost> pods;  ///< the pods admitted boosted, after the sends
  std::size_t boosted = 0;     ///< pods boosted now (every state but kEnded)
  std::size_t stuck = 0;       ///< of them, kDeferred, kInfeasible, kError or kRefused
  std::size_t ended = 0;       ///< boosts this process (or one before it) took back, so far
  std::size_t requested = 0;   ///< resizes back sent now
  /// The uids of the pods still boosted (the in-place step leaves them to this step).
  std::set<std::string> boosted_uids;
  /// When to look again; zero: nothing to wait for.
  std::chrono::milliseconds recheck_after{0};
  /// status.startupBoost: {boosted, ended, stuck, message}.
  nlohmann::json status() const;
};

/// The step, with its memory per scaler. Thread-safe (workers run different keys).
class BoostStep {
 public:
  /// `still_leading`: asked right before each resize (empty: always true).
  explicit BoostStep(ReconcileApi& api, ResizeMetrics& metrics,
                     std::function<bool()> still_leading = {})
      : api_(api), metrics_(metrics), still_leading_(std::move(still_leading)) {}

  /// The pod hook admitted a boosted pod for `key` at `now`: the scaler is looked at again until
  /// the pod is listed (admission runs before the pod is stored).
  void admitted(const std::string& key, recommender::TimePoint now);
  /// True when `scaler` must run the step though it has no boost configured now (pods admitted
  /// boosted before its spec changed, as this process or its stored status knows).
  bool watching(const api::Scaler& scaler) const;
  /// Runs the step over `pods` (the target's, as listed). `may_write` false (not the leader):
  /// decides and reports, sends nothing.
  BoostResult run(const api::Scaler& scaler, const std::vector<nlohmann::json>& pods,
                  bool may_write, recommender::TimePoint now);
  /// Forgets a scaler (deleted).
  void forget(const std::string& key);

 private:
  struct Memory {
    std::map<std::string, BoostState> pods;  ///< uid -> state last reported
    std::set<std::string> sent;              ///< uids put back by this process, not ended yet
    /// uid -> when the API server refused the resize back: sent again kRefusedResizeRetry later.
    std::map<std::string, recommender::TimePoint> refused;
    std::map<std::string, std::string> refusals;  ///< uid -> the API server's answer
    /// uid -> when a resize back whose call failed (ResizeFailure::kRetry) may be sent again,
    /// and what the call answered.
    std::map<std::string, std::pair<recommender::TimePoint, std::string>> failed_calls;
    std::size_t ended = 0;
    bool status_loaded = false;  ///< `ended` was carried on from the scaler's status
    std::optional<recommender::TimePoint> admitted;  ///< the last boosted pod admitted
    int rounds = 0;  ///< consecutive steps with a pod not Ready (the backoff's exponent)
  };

  ReconcileApi& api_;
  ResizeMetrics& metrics_;
  std::function<bool()> still_leading_;
  mutable std::mutex mutex_;
  std::map<std::string, Memory> memory_;  ///< by scaler key
};

}  // namespace vscaler::controller
