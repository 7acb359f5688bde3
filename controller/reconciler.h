// Reconciler: makes one scaler's workload (Deployment, StatefulSet or DaemonSet) carry the
// declared resources and reports what it found in the scaler's status (DESIGN.md
// "Reconcile(key)"). Level-based and idempotent: it reads the live workload each time and writes
// only what differs.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

#include "controller/boost_step.h"
#include "controller/expectations.h"
#include "controller/hpa_cache.h"
#include "controller/in_place_step.h"
#include "controller/limit_range_cache.h"
#include "controller/quota_cache.h"
#include "controller/reconcile_api.h"
#include "controller/scaler_store.h"
#include "controller/status.h"
#include "controller/verified_state.h"
#include "controller/work_queue.h"

namespace vscaler::controller {

/// What the worker does with the key after a reconcile.
struct ReconcileOutcome {
  enum class Kind {
    kDone,     ///< finished: forget the key's backoff
    kRecheck,  ///< a hinted write is not visible yet: look again after `delay` (not a failure)
    kRetry,    ///< failed: requeue with per-key backoff (or after `delay` when the server said)
  };
  Kind kind = Kind::kDone;
  std::chrono::milliseconds delay{0};  ///< kRecheck: when; kRetry: server's Retry-After, or 0
  std::string error;                   ///< kRetry: why, for the log
  bool patched = false;                ///< the workload's resources were written
  /// kDone: reconcile the key again after this (a deferred recommendation becomes due); 0: no.
  std::chrono::milliseconds requeue_after{0};
};

/// Counters the reconciler reports (implemented with Prometheus metrics by the wiring).
class ReconcilerMetrics : public ResizeMetrics {
 public:
  virtual ~ReconcilerMetrics() = default;
  /// A reconcile that came from the resync found real drift and wrote (the fast path missed it).
  virtual void on_resync_correction() {}
  /// A recommendation-driven patch of the template was made (trigger "bounds").
  virtual void on_recommendation_applied() {}
};

/// Tunables; defaults are the design's.
struct ReconcilerOptions {
  /// Status writes retried after a 409 (re-read in between) before the reconcile fails.
  int status_conflict_retries = 3;
  /// --min-update-interval: least time between two recommendation-driven patches of a workload.
  std::chrono::milliseconds min_update_interval{std::chrono::minutes(10)};
  /// The in-place modes' rules besides the bounds (their `now` is ignored: each step reads the
  /// clock).
  InPlaceRules in_place_rules;
  /// False on an API server older than 1.33 (no pods/resize, cmd reads /version): scalers in the
  /// in-place modes report ResizeUnsupported and their values apply as in Initial.
  bool resize_supported = true;
  /// False with --recommender-interval 0: RecommendationProvided=False, RecommenderDisabled.
  bool recommender_enabled = true;
  /// Asked before a recommendation-driven patch (a leader step); empty: always allowed.
  std::function<bool()> leader_step;
  /// Asked again, uncounted, right before each pod resize and eviction of a leader step (one
  /// step may send several, each waiting up to a request timeout): a leader frozen or slowed
  /// past its lease sends no more (DESIGN.md "High availability"); empty: always true.
  std::function<bool()> still_leading;
  /// The namespaces' LimitRanges, capping recommended requests and limits; nullptr: none.
  const LimitRangeCache* limit_ranges = nullptr;
  /// The namespaces' ResourceQuota headroom, capping recommended resizes; nullptr: none.
  QuotaCache* quotas = nullptr;
  /// The HorizontalPodAutoscalers that scale on cpu or memory, for the
  /// HorizontalPodAutoscalerConflict condition; nullptr: not checked.
  const HpaCache* hpas = nullptr;
  /// After a hinted UPDATE, a scaler whose patch needs no read (Reconcile mode, fixed values of
  /// named containers) is restored by a PATCH without a GET first (controller/blind_restore.h).
  bool blind_restore = true;
};

/// Reconciles scalers. Thread-safe: workers call reconcile() concurrently for different keys
/// (the queue never hands one key to two workers).
class Reconciler {
 public:
  /// `expectations` holds what hinted writes must make visible; the reconciler reports what it
  /// read and re-checks while they are not.
  Reconciler(ReconcileApi& api, const ScalerStore& store, VerifiedState& verified,
             Expectations& expectations, ReconcilerMetrics& metrics,
             ReconcilerOptions options = {});

  /// Reconciles the scaler `item.key`, honouring what it is expected to see; `item.priority ==
  /// kLow` marks a reconcile asked for by the resync (for vscaler_resync_corrections_total).
  ReconcileOutcome reconcile(const WorkItem& item);
  /// The pod hook admitted a boosted pod for scaler `key` (from the hint sink; no I/O).
  void boost_admitted(const std::string& key);

 private:
  struct MutationRecord {
    int64_t scaler_generation = 0;
    std::string deployment_uid;
    int64_t deployment_generation = 0;
  };

  /// A restoring write sent without a read (controller/blind_restore.h) and the hinted UPDATE's
  /// old generation it is judged by.
  struct BlindPatch {
    nlohmann::json patch;
    int64_t hinted_generation = 0;
  };

  ReconcileOutcome reconcile_active(const api::Scaler& scaler, const WorkItem& item);
  // Writes Ready=False, InvalidSpec on a scaler that cannot be parsed.
  ReconcileOutcome report_invalid(const InvalidScaler& invalid);
  // Sets HorizontalPodAutoscalerConflict from options_.hpas (an Event when it turns True).
  void note_hpa_conflict(const api::Scaler& scaler, StatusReport& report);
  /// The blind restore for `scaler` when a hinted UPDATE is pending, the option is on, no write
  /// of it was rewritten by another webhook, and its patch needs no read; else nullopt.
  std::optional<BlindPatch> blind_patch_for(const api::Scaler& scaler);
  /// Writes the status built from `report` when it differs from the stored one; re-reads on 409.
  /// `wrote` (when given) is set when this call's patch was stored, not when it found the status
  /// already so (another replica wrote it). The times of an earlier patch whose status write
  /// failed (unwritten_times_) ride on it and are forgotten once stored; when this write fails
  /// after a patch, its times are kept for the next.
  kube::Result<kube::Unit, kube::ApiError> write_status(const api::Scaler& scaler,
                                                        const StatusReport& report,
                                                        bool* wrote = nullptr);
  /// kRecheck while what `key` expects is not in `observed` (and its deadline has not passed),
  /// else `outcome`.
  ReconcileOutcome maybe_recheck(const std::string& key, const Observed& observed,
                                 ReconcileOutcome outcome);

  ReconcileApi& api_;
  const ScalerStore& store_;
  VerifiedState& verified_;
  Expectations& expectations_;
  ReconcilerMetrics& metrics_;
  ReconcilerOptions options_;

  InPlaceStep in_place_;
  BoostStep boost_;
  /// The times of a patch whose status write failed (StatusReport::scaled_at), by scaler key,
  /// until a status write of that scaler succeeds.
  struct UnwrittenTimes {
    std::string uid;     ///< of the scaler that patched: one created again by its name has none
    std::string target;  ///< the workload patched (TargetRef::ref()): a retargeted scaler neither
    std::string scaled_at;
    std::string recommendation_applied_at;
  };
  /// `scaler`'s kept times, if they are its own (same uid and target; others are dropped).
  std::optional<UnwrittenTimes> unwritten_times_of(const api::Scaler& scaler);
  std::mutex mutex_;  // guards mutated_ and unwritten_times_
  std::unordered_map<std::string, MutationRecord> mutated_;
  std::unordered_map<std::string, UnwrittenTimes> unwritten_times_;
};

/// A JSON merge patch turning `from` into `to` for objects: changed members set, members absent
/// from `to` set to null (so stale keys are removed), arrays and scalars replaced whole.
nlohmann::json merge_patch_between(const nlohmann::json& from, const nlohmann::json& to);

}  // namespace vscaler::controller
