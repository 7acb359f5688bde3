// Manager: the operator's controller half, assembled. It owns the scaler store and index, the work
// queue, the expectations store, the reconciler and its workers, the VerticalScaler informer and
// the resync loop, and exposes what the webhook needs (the store to look up, the hint sink).
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "controller/expectations.h"
#include "controller/hpa_cache.h"
#include "controller/kube_api.h"
#include "controller/leader_steps.h"
#include "controller/limit_range_cache.h"
#include "controller/list_poller.h"
#include "controller/memory_trim.h"
#include "controller/namespace_opt_in.h"
#include "controller/quota_cache.h"
#include "controller/reconciler.h"
#include "controller/resync.h"
#include "controller/scaler_store.h"
#include "controller/verified_state.h"
#include "controller/work_queue.h"
#include "kube/client.h"
#include "kube/informer.h"
#include "kube/leader_gate.h"
#include "metrics/registry.h"

namespace vscaler::controller {

/// What the manager runs.
struct ManagerOptions {
  std::string ns;  ///< "" = all namespaces
  int workers = 4;
  std::chrono::milliseconds resync_period{60'000};
  ReconcilerOptions reconciler;
  /// Consulted before each leader step (the resync pass); nullptr: this process is the only
  /// replica and always leads (no --leader-elect). Must outlive the manager.
  const kube::LeaderGate* leader_gate = nullptr;
  ExpectationsOptions expectations;
  /// How often LimitRanges are listed again (they cap recommended values; list only, no watch).
  std::chrono::milliseconds limit_range_period{std::chrono::seconds(30)};
  /// Called (on the informer's thread) with the key of a scaler that was added or whose spec
  /// changed, after the store holds it: the recommender's first pass over it need not wait for
  /// its next tick. May be empty.
  std::function<void(const std::string& key)> on_scaler_spec;
};

/// Runs everything of the controller side; start() then stop().
class Manager {
 public:
  Manager(kube::Client client, ManagerOptions options,
          metrics::Registry& registry = metrics::default_registry());
  ~Manager();
  Manager(const Manager&) = delete;
  Manager& operator=(const Manager&) = delete;

  /// Starts the informer, the workers and the resync loop.
  void start();
  /// Stops intake, lets in-flight reconciles finish, joins every thread. Idempotent.
  void stop();
  /// Says that work outside the workers (a recommender pass: a namespace's lists, 10,000 status
  /// patches) left garbage in the heap: the trimmer gives it back once the queue is idle too.
  void note_memory_work() { trimmer_.note_work(); }
  /// True once the VerticalScaler informer has listed everything once (for /readyz).
  bool synced() const { return informer_ && informer_->has_synced(); }

  /// The scalers and their index (the admission handlers read them; never written from there).
  const ScalerStore& store() const { return store_; }
  /// The namespaces' LimitRanges, merged (the admission hook caps recommended values by them).
  const LimitRangeCache& limit_ranges() const { return limit_ranges_; }
  /// Every namespace's ResourceQuota headroom (for the pod admission hook).
  QuotaCache& quotas() { return quotas_; }
  /// Where the admission handlers hand their hints (expectation recorded, key queued).
  HintSink& hints() { return *hints_; }
  /// What every leader step asks first (the recommender and checkpoints join the resync here).
  LeaderSteps& leader_steps() { return *leader_steps_; }
  /// Tells the manager this replica just became leader: the resync runs at once (its last pass
  /// may be a period old, or was the old leader's). From any thread.
  void on_started_leading() { resyncer_->wake(); }
  /// Runs one resync pass now, leader or not (tests and benchmarks).
  ResyncStats resync_once() { return resyncer_->run_once(); }
  /// One namespace opt-in pass now (tests); nothing when the manager watches one namespace.
  OptInStats opt_in_once() { return opt_in_ ? opt_in_->run_once() : OptInStats{}; }

 private:
  class Metrics;
  void on_scaler_event(const nlohmann::json* old_object, const nlohmann::json* new_object);
  void enqueue_target(const std::string& ns, const api::TargetRef& target);
  void work();

  kube::Client client_;
  ManagerOptions options_;
  std::unique_ptr<Metrics> metrics_;
  kube::AlwaysLeader always_leader_;
  std::unique_ptr<LeaderSteps> leader_steps_;
  ScalerStore store_;
  VerifiedState verified_;
  std::unique_ptr<WorkQueue> queue_;
  Expectations expectations_;
  /// CREATEs the hook admitted before their scaler reached the index.
  UnclaimedCreates unclaimed_;
  std::unique_ptr<QueueingHintSink> hints_;
  /// Events, posted and aggregated off the workers' path.
  KubeEventWriter event_writer_;
  EventRecorder events_;
  KubeReconcileApi reconcile_api_;
  KubeResyncApi resync_api_;
  KubeOptInApi opt_in_api_;
  std::unique_ptr<Reconciler> reconciler_;
  std::unique_ptr<Resyncer> resyncer_;
  /// Made scalers for namespaces that ask (null with --namespace: vscaler reads no namespace).
  std::unique_ptr<NamespaceOptIn> opt_in_;
  std::unique_ptr<kube::Informer> informer_;
  LimitRangeCache limit_ranges_;
  /// Lists LimitRanges (in options_.ns) into limit_ranges_ every options_.limit_range_period.
  std::unique_ptr<ListPoller> limit_range_poller_;
  QuotaCache quotas_;
  /// Lists ResourceQuotas (in options_.ns) into quotas_ as often.
  std::unique_ptr<ListPoller> quota_poller_;
  HpaCache hpas_;
  /// Lists HorizontalPodAutoscalers (in options_.ns) into hpas_ as often; a namespace whose HPAs
  /// changed has its scalers reconciled (their HorizontalPodAutoscalerConflict condition).
  std::unique_ptr<ListPoller> hpa_poller_;
  std::vector<std::thread> workers_;
  std::thread resync_thread_;
  /// Returns memory to the OS when the queue runs dry after a burst, on its own low-priority
  /// thread (see MemoryTrimmer). Every 2 s at most (and only after work): after the burst of a
  /// start (10,000 reconciles, each parsing a whole workload) RSS stayed at ~350 MiB for the 10 s
  /// of the default interval, ~120 MiB once trimmed (bench/sections/scale.sh).
  MemoryTrimmer trimmer_{std::chrono::seconds(2)};
  std::atomic<bool> started_{false};
  std::atomic<bool> stopped_{false};
};

}  // namespace vscaler::controller
