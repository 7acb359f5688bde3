// Reconciler: makes one scaler's Deployment carry the declared resources and reports what it
// found in the scaler's status (DESIGN.md "Reconcile(key)"). Level-based and idempotent: it reads
// the live Deployment each time and writes only what differs.
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>

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
  bool patched = false;                ///< the Deployment's resources were written
};

/// Counters the reconciler reports (implemented with Prometheus metrics by the wiring).
class ReconcilerMetrics {
 public:
  virtual ~ReconcilerMetrics() = default;
  /// A reconcile that came from the resync found real drift and wrote (the fast path missed it).
  virtual void on_resync_correction() {}
};

/// Tunables; defaults are the design's.
struct ReconcilerOptions {
  /// How long after hint.issued a hint may stay invisible before the worker stops re-checking
  /// (DESIGN item 3).
  std::chrono::milliseconds hint_deadline{30'000};
  /// First re-check delay for an invisible hint; doubles up to hint_recheck_max. Admission runs a
  /// millisecond or two before the write is stored, so the first look (at once) rarely sees it
  /// and the first re-check usually does: every Reconcile-mode restore waits this long. 5 ms put
  /// the p50 of edit -> restored at 8-9.5 ms; 1 ms at 4-5 ms, with no more reconciles per edit
  /// (bench/sections/edits.sh).
  std::chrono::milliseconds hint_recheck_initial{1};
  std::chrono::milliseconds hint_recheck_max{1'000};
  /// Status writes retried after a 409 (re-read in between) before the reconcile fails.
  int status_conflict_retries = 3;
};

/// Reconciles scalers. Thread-safe: workers call reconcile() concurrently for different keys
/// (the queue never hands one key to two workers).
class Reconciler {
 public:
  Reconciler(ReconcileApi& api, const ScalerStore& store, VerifiedState& verified,
             ReconcilerMetrics& metrics, ReconcilerOptions options = {});

  /// Reconciles the scaler `item.key`, honouring its hint; `item.priority == kLow` marks a
  /// reconcile asked for by the resync (for vscaler_resync_corrections_total).
  ReconcileOutcome reconcile(const WorkItem& item);

 private:
  struct MutationRecord {
    int64_t scaler_generation = 0;
    std::string deployment_uid;
    int64_t deployment_generation = 0;
  };

  ReconcileOutcome reconcile_active(const api::Scaler& scaler, const WorkItem& item);
  /// Writes the status built from `report` when it differs from the stored one; re-reads on 409.
  kube::Result<kube::Unit, kube::ApiError> write_status(const api::Scaler& scaler,
                                                        const StatusReport& report);
  /// kRecheck while the hint is invisible and its deadline has not passed, else `outcome`.
  ReconcileOutcome maybe_recheck(const WorkItem& item, bool hint_visible, ReconcileOutcome outcome);

  ReconcileApi& api_;
  const ScalerStore& store_;
  VerifiedState& verified_;
  ReconcilerMetrics& metrics_;
  ReconcilerOptions options_;

  std::mutex mutex_;  // guards the two maps below
  std::unordered_map<std::string, MutationRecord> mutated_;
  /// Next re-check delay per key while its hint is not visible.
  std::unordered_map<std::string, std::chrono::milliseconds> recheck_delays_;
};

/// A JSON merge patch turning `from` into `to` for objects: changed members set, members absent
/// from `to` set to null (so stale keys are removed), arrays and scalars replaced whole.
nlohmann::json merge_patch_between(const nlohmann::json& from, const nlohmann::json& to);

}  // namespace vscaler::controller
