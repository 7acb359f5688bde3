// RecommenderLoop: the leader's recommender (DESIGN.md event flow item 5). Every interval, while
// this replica leads, for each active scaler (one per workload, api::select_active): restores its
// history from its VerticalScalerCheckpoint the first time (at start or on becoming leader),
// reads its inputs, folds the samples of its recommended containers (not mode "Off", not fixed
// values) into its ScalerHistory, computes the recommendations (clamped to minAllowed /
// maxAllowed), exports them as vscaler_recommendation gauges and publishes them in the scaler's
// status when they changed (then calls on_published so the reconciler looks, when it has
// something to look at). Every checkpoint
// interval, and when stopped, it writes the checkpoints. Histories of deleted scalers are
// forgotten. recommender/ knows nothing of controller/: the scalers, the leader check and the
// enqueue are functions the wiring passes.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "api/scaler.h"
#include "base/coalescing_pool.h"
#include "base/rate_limiter.h"
#include "metrics/registry.h"
#include "recommender/aggregate_options.h"
#include "recommender/history_source.h"
#include "recommender/provided_status.h"
#include "recommender/recommendation.h"
#include "recommender/recommendation_gauges.h"
#include "recommender/recommender_api.h"
#include "recommender/scaler_history.h"

namespace vscaler::recommender {

/// The workload a scaler targets: the one place that reads the scaler's target fields.
TargetWorkload target_of(const api::Scaler& scaler);

/// True when `container` of `scaler` is recommended from usage (spec.containers absent, or its
/// entry is neither mode "Off" nor fixed values).
bool is_recommended(const api::Scaler& scaler, std::string_view container);

/// How the loop runs.
struct LoopOptions {
  /// --recommender-interval; zero: the loop never runs (start() does nothing).
  std::chrono::milliseconds interval{60'000};
  /// --checkpoint-interval.
  std::chrono::milliseconds checkpoint_interval{600'000};
  AggregateOptions aggregate;            ///< half-lives, aggregation interval
  RecommendationOptions recommendation;  ///< percentiles, margin, per-pod minimums, rounding
  /// --container-recommendation-max-allowed-cpu / -memory: no container is recommended more
  /// (a scaler's maxAllowed wins); the largest node's allocatable caps as well.
  ResourceMap max_allowed;
  int status_attempts = 4;  ///< status writes tried on 409 Conflict (re-read each time)
  /// Threads carrying the status writes (base::CoalescingPool): a pass hands each publication
  /// over and goes on, and a scaler's publication still waiting when a later pass publishes it
  /// again is replaced by the newer one. A write waits ~10 ms on the API server: at 10,000
  /// scalers, a new install's first passes publish every scaler, minutes of writes that the
  /// passes (and the samples they read on schedule) need not wait for. At most one write per
  /// scaler waits. 0: each write on the pass's own thread (the unit tests that follow call order).
  std::size_t status_writers = 4;
  /// The client-side limit on the recommender's writes (status and checkpoints, retries
  /// included), whatever the number of writers: `write_qps` on average (0: none) after a burst of
  /// `write_burst`. The reads of a pass are a few lists per namespace and are not limited.
  /// 10,000 changed statuses take 25 s at 400/s: a pass inside a 30 s interval, and an API
  /// server load a cluster of 10,000 workloads carries (API Priority and Fairness shares out
  /// the rest).
  double write_qps = 400;
  double write_burst = 100;
  /// How long stop() may spend on the checkpoints changed since their last write, the slices
  /// written longest ago first; the rest resume from their last checkpoint (at most
  /// --checkpoint-interval old). Every history changes every pass, so at 10,000 scalers "all
  /// changed" was 10,000 writes in one burst, over a minute at the API server's pace here: the
  /// kubelet's SIGKILL (terminationGracePeriodSeconds, 30 s) came first and the Lease was never
  /// released. 10 s leaves the rest of the grace period to the other steps of a shutdown.
  std::chrono::milliseconds shutdown_checkpoint_budget{10'000};
  /// How long one pass may spend loading histories (Prometheus). A slow but answering source
  /// costs its time per new scaler, one after another (two range queries each, 1-5 s apiece
  /// for 8 days of a large workload): 300 scalers made at once for a namespace that opted in
  /// would hold the pass for many minutes, with no live sample of any scaler meanwhile. The
  /// scalers beyond it start from live samples, as with a Prometheus that is down, and are
  /// asked again at the next leader start.
  std::chrono::milliseconds history_budget{15'000};
};

/// What the wiring provides.
struct LoopHooks {
  /// The scalers the operator knows now (controller::ScalerStore::snapshot).
  std::function<std::vector<std::shared_ptr<const api::Scaler>>()> scalers;
  /// Asked before each leader step ("recommender", "checkpoint"): LeaderSteps::begin. Empty:
  /// always leading.
  std::function<bool(std::string_view step)> begin_step;
  /// Asked before every write of a leader step (each status publish, each checkpoint): a pass
  /// over 10,000 scalers lasts minutes, and a leader frozen mid-pass (SIGSTOP, a stalled VM) that
  /// resumes after another replica took over must write nothing more. Cheap (an atomic and the
  /// clock: kube::LeaderGate::is_leading_now). Empty: always leading.
  std::function<bool()> still_leading;
  /// True once the scalers are all known (the informer has synced); until then a pass would
  /// see none, so the first one waits for it (checked every second). Empty: known from the start.
  std::function<bool()> synced;
  /// The scaler of this key ("namespace/name") as the operator knows it now
  /// (controller::ScalerStore::get), nullptr when gone. A status write rests on it rather than on
  /// the pass's snapshot: a pass over 10,000 scalers lasts minutes, and the reconciler writes
  /// their status meanwhile, so a copy from the pass's start is stale by then (a 409, a GET and
  /// a second PATCH each). Empty: the snapshot's copy is used.
  std::function<std::shared_ptr<const api::Scaler>(const std::string& key)> scaler;
  /// Called after each pass that ran (the wiring lets the memory trimmer know). May be empty.
  std::function<void()> on_pass_done;
  /// Called with a scaler's key after its status got a new recommendation or reason that the
  /// reconciler acts on: any, but in updateMode Off only a new target or reason (bounds alone
  /// change nothing it shows or does).
  std::function<void(const std::string& key)> on_published;
};

/// What one pass did (for tests, logs and the benchmark).
struct PassSummary {
  bool ran = false;         ///< false: not leading, nothing done
  std::size_t scalers = 0;  ///< active scalers passed over
  std::size_t samples = 0;  ///< container samples folded in
  /// Status writes made while the pass ran (with PassWrites::kLeaveWaiting, whichever pass handed
  /// them over; with kAwait, this pass's and those left waiting before it).
  std::size_t published = 0;
  /// Publications this pass handed to the writers (or wrote): those that change the status as
  /// the informer has it, and those that follow a write of the scaler still running.
  std::size_t handed_over = 0;
  /// Waiting publications this pass replaced with its own newer ones (none written twice).
  std::size_t writes_replaced = 0;
  std::size_t writes_waiting = 0;   ///< publications still waiting for a writer at the pass's end
  std::size_t failed = 0;           ///< scalers skipped by an API failure (retried next pass)
  std::size_t requests = 0;         ///< API requests made (list pages counted)
  std::size_t history_queries = 0;  ///< requests to the history source (Prometheus)
  /// New scalers started from live samples without asking the history source: the pass's
  /// history_budget was spent (asked again at the next leader start).
  std::size_t history_skipped = 0;
  /// Container aggregates with samples held after the pass, over every tracked scaler.
  std::size_t aggregates = 0;
  /// Bytes the tracked histories occupy after the pass (ScalerHistory::memory_bytes).
  std::size_t history_bytes = 0;
  double seconds = 0;  ///< wall time
};

/// Which scalers a pass goes over.
enum class PassScope {
  kAll,         ///< every active scaler (the interval's pass)
  kNewScalers,  ///< only those without a history yet: they just appeared
};

/// Whether run_pass returns before its status writes are made.
enum class PassWrites {
  kAwait,         ///< returns once every write handed over so far is made (tests, tools)
  kLeaveWaiting,  ///< returns when the pass is done; the writers go on (the loop's thread)
};

/// The loop (see the file comment). start()/stop()/wake() are thread-safe; run_pass() and
/// save_checkpoints() are for tests and must not run concurrently with a started loop.
class RecommenderLoop {
 public:
  /// `api` must outlive the loop.
  RecommenderLoop(RecommenderApi& api, LoopHooks hooks, LoopOptions options,
                  metrics::Registry& registry = metrics::default_registry());
  ~RecommenderLoop();
  RecommenderLoop(const RecommenderLoop&) = delete;
  RecommenderLoop& operator=(const RecommenderLoop&) = delete;

  /// Where a scaler without a checkpoint gets its history (DESIGN.md "History from
  /// Prometheus"); nullptr (the default): it starts from live samples. Set before start(); must
  /// outlive the loop.
  void set_history_source(HistorySource* source) { history_source_ = source; }

  /// Starts the loop's thread (nothing when the interval is zero).
  void start();
  /// Stops the thread (a pass under way stops after the scaler at hand), drops the status writes
  /// still waiting (those running finish), then, if still leading, writes the changed checkpoints
  /// for at most LoopOptions::shutdown_checkpoint_budget. Idempotent.
  void stop();
  /// This replica just became leader: the next pass (run now) restores every history from its
  /// checkpoint first (the previous leader may have written newer ones). From any thread.
  void on_started_leading();

  /// A scaler was added (or its spec changed): a pass over the scalers not yet tracked runs at
  /// once instead of at the next tick. From any thread (the informer's).
  void on_scaler_appeared();

  /// One pass now; `now` stamps condition transitions.
  PassSummary run_pass(std::chrono::system_clock::time_point now = std::chrono::system_clock::now(),
                       PassScope scope = PassScope::kAll, PassWrites writes = PassWrites::kAwait);
  /// Returns once every status write handed to the writers so far is made (or dropped).
  void wait_for_writes();
  /// Status writes waiting for a writer now. From any thread.
  std::size_t writes_waiting() const;
  /// Writes the checkpoint of every history that changed since its last write (when leading);
  /// returns how many were written. With `slices` > 1, only the scalers of slice `slice` (by a
  /// hash of the uid): the loop writes one slice per tick, so 10,000 checkpoints are spread over
  /// --checkpoint-interval instead of sent in one burst.
  std::size_t save_checkpoints(unsigned slice = 0, unsigned slices = 1);

  /// The in-memory history of the scaler `uid`, nullptr when none (tests, the benchmark).
  const ScalerHistory* history(const std::string& uid) const;

 private:
  // One per scaler, by uid (the map's key). The scaler's namespace and name are kept once, as
  // its key "namespace/name" (a namespace holds no '/'), and split where needed: 10,000 of these
  // live as long as the scalers do.
  struct Tracked {
    std::string key;  // "namespace/name", what on_published is given
    ScalerHistory history;
    bool restored = false;  // the checkpoint was read (or found absent)
    // history.revision() when the checkpoint was last written or read: equal, nothing to write.
    std::uint64_t saved_revision = 0;
    bool gauges = false;  // vscaler_recommendation has series of this scaler
    // What the history source gave when there was no checkpoint ("" without a source or with a
    // checkpoint): said in RecommendationProvided's message.
    std::string history_note;
    std::string_view ns() const { return std::string_view(key).substr(0, key.find('/')); }
    std::string_view name() const { return std::string_view(key).substr(key.find('/') + 1); }
  };
  // The ScalerId the checkpoint calls take.
  static ScalerId id_of(const std::string& uid, const Tracked& tracked);
  // What a round of checkpoint writes did.
  struct CheckpointRound {
    std::size_t written = 0;
    std::size_t left = 0;  // changed ones not written: `give_up` said so first
  };
  // save_checkpoints, asking `give_up` before each write.
  CheckpointRound save_checkpoints_until(unsigned slice, unsigned slices,
                                         const std::function<bool()>& give_up);
  // stop()'s last round: every slice, from the one written longest ago, within the budget.
  void save_checkpoints_at_shutdown();
  // One scaler's part of a pass; `now` stamps conditions, `pass_time` (the same instant) expires
  // histories.
  bool pass_scaler(const std::shared_ptr<const api::Scaler>& scaler, Tracked& tracked,
                   const std::string& now, TimePoint pass_time, PassSummary& summary);
  // Reads the checkpoints of the pass's unrestored scalers in each shared namespace with one
  // list (listed_checkpoints_), instead of a GET each in pass_scaler.
  void list_checkpoints(const std::vector<std::shared_ptr<const api::Scaler>>& actives,
                        const std::set<std::string>& shared, PassSummary& summary);
  // The checkpoint of `scaler`: from this pass's namespace list when there was one, else a GET.
  kube::Result<LoadedCheckpoint, kube::ApiError> load_checkpoint(const api::Scaler& scaler,
                                                                 PassSummary& summary);
  // Seeds a scaler without a checkpoint from the history source (once; see history_note).
  // What seed_history found.
  struct Seeded {
    bool loaded = false;  // the source answered (with points or none)
    HistoryStats stats;   // what it folded in
    Duration resolution{};
    TimePoint now;  // the end asked for
  };
  // Loads the history of `scaler`'s target into `into` (empty), or marks it wanted again
  // (ScalerHistory::set_history_wanted) when the source has none; `note` gets what
  // RecommendationProvided's message says of it.
  Seeded seed_history(const api::Scaler& scaler, ScalerHistory& into, std::string& note,
                      PassSummary& summary);
  // At a leader start, a checkpoint whose scaler had no history then: asks the source again,
  // and takes its history in place of the checkpoint when it spans the checkpoint's samples,
  // from before the first to the present (Prometheus then holds the days the checkpoint sampled
  // live, and the days before them). An answer that does not keeps the checkpoint, which wants
  // no more; no answer (down again, or the pass's budget spent) leaves it wanting.
  void retry_history(const api::Scaler& scaler, Tracked& tracked, PassSummary& summary);
  // Hands the scaler's status write to the writers (or makes it here without them), replacing
  // one of the scaler still waiting, when it changes the status; false, and a waiting older
  // write cancelled, when it does not. The write holds `scaler`: it may outlast the pass.
  bool write_status(std::shared_ptr<const api::Scaler> scaler, const std::string& key,
                    Publication publication, const std::string& now);
  // The informer's copy of `key` now when it is still `scaler` (same uid), else `scaler`: what
  // a status write rests on, before it is handed over and when it is made.
  std::shared_ptr<const api::Scaler> informer_copy(
      const std::string& key, const std::shared_ptr<const api::Scaler>& scaler) const;
  // Waits for the status writes (kAwait) and adds what the writers did to `summary`.
  void finish_writes(PassSummary& summary, PassWrites writes);
  // Writes `publication` into the status of `scaler`, resting on `known` (the informer's copy
  // now, else `scaler`) and its parsed status; true when a write landed.
  bool publish(const api::Scaler& scaler, const api::Scaler& known,
               const nlohmann::json& known_status, const Publication& publication,
               const std::string& now, std::size_t& requests);
  // Lists the nodes (once per pass) and sets caps_ from the largest and the flags.
  void refresh_caps(PassSummary& summary);
  void export_gauges(Tracked& tracked, const std::vector<ContainerRecommendation>& recs);
  void remove_gauges(Tracked& tracked);
  void forget_all();
  void run();
  // Whether this replica still leads, before one leader write (hooks_.still_leading); counts
  // and logs (once per pass) the writes it drops.
  bool still_leading(std::string_view write);

  RecommenderApi& api_;
  HistorySource* history_source_ = nullptr;
  // The history source failed earlier in this pass: the others of the pass are not asked (a
  // Prometheus that times out must not hold a pass for a timeout per new scaler).
  std::string history_failure_;
  // Time this pass spent loading histories (LoopOptions::history_budget).
  std::chrono::steady_clock::duration history_spent_{};
  LoopHooks hooks_;
  LoopOptions options_;
  metrics::HistogramFamily& pass_seconds_;
  metrics::CounterFamily& samples_total_;
  RecommendationGauges& recommendation_;
  metrics::Counter& fenced_writes_;  ///< vscaler_leader_writes_fenced_total

  std::map<std::string, Tracked> tracked_;  // by scaler uid; the loop's thread only
  // This pass's namespace-wide checkpoint reads (list_checkpoints): the namespaces listed, and
  // what they held for the scalers asked for, by uid. Emptied as the scalers take them.
  std::set<std::string> listed_namespaces_;
  std::map<std::string, LoadedCheckpoint> listed_checkpoints_;
  bool was_leading_ = false;
  // A fenced write was logged in this pass (reset by run_pass; set by any writer).
  std::atomic<bool> fenced_logged_{false};
  ResourceMap largest_node_;     // the last node list's largest allocatable; the loop's thread only
  ResourceMap caps_;             // this pass's cluster caps (cluster_caps)
  bool caps_ready_ = false;      // caps_ computed at least once
  bool nodes_unlisted_ = false;  // the last node list failed (logged once until one succeeds)

  base::RateLimiter write_rate_;  // options_.write_qps / write_burst, shared by every writer
  // What the writers did since the last pass's end, added to its summary by finish_writes.
  std::atomic<std::size_t> written_requests_{0};
  std::atomic<std::size_t> written_published_{0};
  std::size_t replaced_before_ = 0;                // writers_->replaced() at the last pass's end
  std::unique_ptr<base::CoalescingPool> writers_;  // nullptr: options_.status_writers == 0

  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  // stopping_ for the pass and the checkpoint ticks to read between two scalers, without mutex_.
  std::atomic<bool> stop_requested_{false};
  // The slice the next checkpoint tick writes: the one written longest ago (the loop's thread,
  // then stop() after joining it).
  unsigned next_checkpoint_slice_ = 0;
  // Full passes run (the loop's thread): picks each scaler's far-bound refresh pass
  // (far_bound_refresh_pass).
  std::uint64_t full_passes_ = 0;
  bool reload_ = false;    // set by on_started_leading, consumed by the next pass
  bool woken_ = false;     // set by on_started_leading, consumed by the thread's wait
  bool appeared_ = false;  // set by on_scaler_appeared, consumed by the thread's wait
  bool stopped_ = false;
  std::thread thread_;
};

}  // namespace vscaler::recommender
