// Expectations: the bookkeeping of hinted writes, in one place (the role of kube-controller-
// manager's ControllerExpectations; DESIGN.md event flow item 3). The admission hook records, per
// scaler key, what its write must make visible ("generation > G", "uid U gone, or deletionTimestamp
// set", "exists"), merged per key (max G). The reconciler reports what it read and is told whether
// the expectation is satisfied, or when to look again (at once, then a short doubling backoff; not
// a failure), until it is or its deadline (30 s from the newest hint) passes. The work queue
// carries keys only. A hinted UPDATE is first looked at when such writes are usually stored: the
// hook answers before the API server stores the write, and a look too early only reads the old
// object (a GET, or a no-op blind PATCH, more per edit, and a re-check). The delay is learned from
// the first looks themselves (a quantile estimate of the admission -> stored lag: up on a look too
// early, down on one in time). It aims at the median, not a high quantile: a look in time restores
// at once, one too early costs a request and an immediate re-check; waiting for nearly every write
// to be stored made most restores wait longer than needed (issue 17).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "controller/hint_sink.h"
#include "controller/unclaimed_creates.h"
#include "controller/verified_state.h"
#include "metrics/registry.h"

namespace vscaler::controller {

class WorkQueue;

/// Tunables; defaults are the design's.
struct ExpectationsOptions {
  /// How long after the newest hint of a key an unmet expectation keeps being re-checked.
  std::chrono::milliseconds deadline{30'000};
  /// Delay of the second re-check; doubles up to recheck_max. The first re-check is at once: the
  /// look that found the write not stored yet was an API round trip itself (a no-op blind PATCH
  /// takes 4-5 ms on the local plane), longer than the usual admission -> stored lag, so the
  /// write is nearly always stored by its answer and waiting more only delays the restore.
  /// Pooled over 1,000 edits (bench/sections/edits.sh), waiting 1 ms first gave p95 / p99 of
  /// edit -> restored 5.73 / 9.77 ms, looking again at once 5.37 / 7.70 ms, with no more
  /// requests per edit. (A first delay of 5 ms put the p50 at 8-9.5 ms.)
  std::chrono::milliseconds recheck_initial{1};
  /// Cap of the re-check delay.
  std::chrono::milliseconds recheck_max{1'000};
  /// The first look's delay after a hinted UPDATE ("generation > G"), learned: it starts here,
  /// rises by first_look_step when a first look comes before the write is stored and falls by
  /// first_look_step * (1 - q) / q when it comes after (q = first_look_quantile), so it settles
  /// where about a fraction q of the writes are stored in time. 0 = look at once, not learned.
  std::chrono::microseconds first_look_initial{1'000};
  /// Step of the learned first-look delay.
  std::chrono::microseconds first_look_step{200};
  /// Upper bound of the learned first-look delay.
  std::chrono::microseconds first_look_max{20'000};
  /// Fraction of hinted writes the first look should find stored. 0.5: on the local plane
  /// (bench/sections/edits.sh) the delay then settles at 0-0.2 ms, ~10-15 % of the looks come
  /// early (a second blind PATCH), and edit -> restored fell below the full-cache peer's; 0.97
  /// (1-2 ms) kept it level with the peer. An API server that stores writes later (a real etcd
  /// with fsync) raises the delay by itself.
  double first_look_quantile = 0.5;
  /// The clock; tests move it. Default: std::chrono::steady_clock::now.
  std::function<std::chrono::steady_clock::time_point()> now;
};

/// What a reconcile read of the workload, for Expectations::check.
struct Observed {
  bool exists = false;     ///< the GET found it
  bool deleting = false;   ///< it carries a deletionTimestamp
  std::string uid;         ///< its metadata.uid when it exists
  int64_t generation = 0;  ///< its metadata.generation when it exists
};

/// Thread-safe store of the pending expectations per scaler key.
class Expectations {
 public:
  using Clock = std::chrono::steady_clock;

  explicit Expectations(ExpectationsOptions options = {});

  /// Merges `expectation` into what `key` already expects and restarts its deadline; an empty
  /// expectation changes nothing.
  void expect(std::string_view key, const Expectation& expectation);
  /// Whether what a reconcile of `key` read satisfies its expectation. nullopt: satisfied, nothing
  /// expected, or given up (deadline passed, or it can never become visible) — the entry is gone.
  /// Otherwise the delay after which to look again: zero on the first call, then recheck_initial,
  /// doubling per call up to recheck_max.
  std::optional<std::chrono::milliseconds> check(std::string_view key, const Observed& observed);
  /// Merges `expectation` in as expect() does and returns how long to wait before the first look:
  /// the learned delay for a new "generation > G" expectation, zero otherwise.
  std::chrono::microseconds expect_first_look(std::string_view key, const Expectation& expectation);
  /// The learned first-look delay now (tests, logs).
  std::chrono::microseconds first_look_delay() const;
  /// Drops what `key` expects (the scaler is gone, or no longer manages its workload).
  void forget(std::string_view key);
  /// What `key` expects now, nullopt when nothing (tests and logs).
  std::optional<Expectation> pending(std::string_view key) const;
  /// Number of keys with a pending expectation.
  std::size_t size() const;

 private:
  struct Entry {
    Expectation expected;
    Clock::time_point issued{};               // of the newest hint: the deadline counts from it
    std::chrono::milliseconds next_delay{0};  // of the next re-check: zero for the first
    /// When the delayed first look is due; its outcome teaches the delay. Unset: nothing to learn
    /// (no delay, or hints merged).
    std::optional<Clock::time_point> first_look;
  };
  /// Adjusts the learned delay by one first look's outcome (mutex_ held).
  void learn_locked(bool in_time);
  struct KeyHash {
    using is_transparent = void;
    std::size_t operator()(std::string_view key) const {
      return std::hash<std::string_view>{}(key);
    }
  };

  ExpectationsOptions options_;
  mutable std::mutex mutex_;
  std::unordered_map<std::string, Entry, KeyHash, std::equal_to<>> entries_;
  double first_look_us_ = 0;  // the learned delay, in microseconds (guarded by mutex_)
};

/// How far above the generation last verified a hint may expect: a Deployment's generation moves
/// by one per spec write, and no one makes 1,000 between two reconciles. A forged review (anyone
/// in the cluster can reach the webhook) claiming an old generation of 2^62 would otherwise keep
/// a hint re-checking for its whole deadline, again and again.
inline constexpr std::int64_t kMaxGenerationLead = 1000;

/// The HintSink the controller hands to the admission hooks: records the expectation, then queues
/// the key at high priority (in that order, so the worker that takes it sees the expectation).
/// A hint expecting a generation more than kMaxGenerationLead above the one last verified for
/// its scaler is dropped and counted (vscaler_webhook_hints_dropped_total).
class QueueingHintSink final : public HintSink {
 public:
  /// All must outlive the sink; `unclaimed` (may be null) keeps unclaimed CREATEs; `verified`
  /// (may be null: nothing is dropped) is what the reconciler last verified; `dropped` (may be
  /// null) counts the hints dropped.
  QueueingHintSink(Expectations& expectations, WorkQueue& queue,
                   UnclaimedCreates* unclaimed = nullptr, const VerifiedState* verified = nullptr,
                   metrics::Counter* dropped = nullptr);
  void hint(std::string_view scaler_key, const Expectation& expectation) override;
  void unclaimed_create(std::string_view ns, std::string_view kind, std::string_view name) override;
  /// Tells `on_boosted_pod` (set once, before the webhook serves), then queues the key.
  void boosted_pod(std::string_view scaler_key) override;
  /// Where boosted_pod reports (the reconciler's boost step); empty: only queued.
  void set_on_boosted_pod(std::function<void(const std::string&)> on_boosted_pod) {
    on_boosted_pod_ = std::move(on_boosted_pod);
  }

 private:
  Expectations& expectations_;
  WorkQueue& queue_;
  UnclaimedCreates* unclaimed_;
  const VerifiedState* verified_;
  metrics::Counter* dropped_;
  std::function<void(const std::string&)> on_boosted_pod_;
};

}  // namespace vscaler::controller
