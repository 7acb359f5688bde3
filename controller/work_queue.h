// The work queue between the event sources (informer, webhook hints, resync) and the reconcile
// workers (DESIGN.md event flow items 3 and 5). It keeps client-go's workqueue semantics, which
// every Kubernetes controller author already reasons with:
//   - a key waiting in the queue is not queued twice; adding it again may only promote its
//     priority;
//   - a key is never handed to two workers at once; a key added while a worker processes it is
//     queued again, once, when that worker calls done();
//   - per-key exponential backoff for failures (add_rate_limited), reset by forget();
//   - delayed adds (add_after).
// and adds what vscaler needs on top: two priorities (webhook hints and watch events are served
// before the resync's low-priority keys). It carries keys and priorities only: what a hinted write
// must make visible is kept by the expectations store (controller/expectations.h).
//
// Priorities are strict: a waiting high key always goes first, so a resync burst of thousands of
// low keys never delays a hint. Low keys wait while high keys keep every worker busy; that is the
// intent (the resync is a safety net, and a key that matters is promoted by its own hint).
//
// Shutdown: shutdown() stops intake and DROPS what is waiting (ready and delayed keys); workers
// get nullopt at once and in-flight work finishes normally (done() still works). That is what the
// controller needs: reconcile is level-based and a restarted or surviving replica relists every
// scaler, so a dropped key is reconciled again anyway, while draining would make termination wait
// on API calls (with 429/5xx backoff) past the pod's grace period, after which the kubelet kills
// the process mid-write anyway. shutdown_and_drain() is client-go's ShutDown/ShutDownWithDrain
// behaviour for callers that want it (tests, benchmarks): intake stops, the waiting keys are still
// handed out, and get() returns nullopt once none is waiting or about to be requeued.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/open_table.h"
#include "controller/futex_lock.h"

namespace vscaler::controller {

/// Which keys workers take first. High: webhook hints and watch events (a user just wrote
/// something). Low: the periodic resync (a safety net that can wait). A waiting high key is
/// always handed out before any low key.
enum class Priority : uint8_t { kHigh = 0, kLow = 1 };

/// One key handed to a worker by WorkQueue::get(); the worker must call done(key) afterwards.
struct WorkItem {
  /// The scaler key, "namespace/name".
  std::string key;
  /// The priority it was waiting at (the highest of the adds it absorbed).
  Priority priority = Priority::kHigh;
  /// When it became ready (for a delayed add: when its delay ended); time in queue = now - added.
  std::chrono::steady_clock::time_point added;
};

/// Observer of a WorkQueue, for the workqueue_* metrics (DESIGN.md keeps controller-runtime's
/// names). The defaults do nothing. Called with the queue's lock held, so implementations must be
/// cheap (an atomic add, a histogram observe) and must not call back into the queue.
class QueueMetrics {
 public:
  virtual ~QueueMetrics() = default;
  /// A key was queued that was not already waiting (workqueue_adds_total); a deduplicated add
  /// is not counted, as in client-go.
  virtual void on_add(Priority /*priority*/) {}
  /// The number of keys ready to be handed out changed (workqueue_depth).
  virtual void on_depth(size_t /*depth*/) {}
  /// A delayed or rate-limited add was accepted (workqueue_retries_total).
  virtual void on_retry() {}
  /// A key was handed out after waiting this long (workqueue_queue_duration_seconds).
  virtual void on_queue_latency(double /*seconds*/) {}
  /// A worker called done() this long after get() (workqueue_work_duration_seconds).
  virtual void on_work_duration(double /*seconds*/) {}
};

/// Tunables of a WorkQueue. Declared outside the class so it can be a default argument.
struct WorkQueueOptions {
  /// First delay of add_rate_limited; doubled for each failure not yet forgotten.
  std::chrono::nanoseconds base_delay = std::chrono::milliseconds(5);
  /// Cap of the per-key backoff.
  std::chrono::nanoseconds max_delay = std::chrono::seconds(1000);
  /// Metrics observer; null means none.
  std::shared_ptr<QueueMetrics> metrics;
};

/// The deduplicating, prioritised, rate-limited queue of scaler keys (see the file comment).
/// Thread-safe; any number of producers and workers.
class WorkQueue {
 public:
  using Clock = std::chrono::steady_clock;

  explicit WorkQueue(WorkQueueOptions options = {});
  /// Shuts down (dropping what waits); workers must have stopped calling the queue by then.
  ~WorkQueue();
  WorkQueue(const WorkQueue&) = delete;
  WorkQueue& operator=(const WorkQueue&) = delete;

  /// Queues `key` now. A waiting key is only promoted when `priority` is higher; a key being
  /// processed is queued again, once, when done() is called; ignored after shutdown.
  void add(std::string_view key, Priority priority = Priority::kHigh);
  /// Queues `key` once `delay` has passed (at once when delay <= 0). One timer per key: a later
  /// deadline than the pending one only merges the priority, an earlier one replaces it.
  void add_after(std::string_view key, std::chrono::nanoseconds delay,
                 Priority priority = Priority::kHigh);
  /// Queues `key` after its backoff (base_delay * 2^num_requeues, capped at max_delay, and at
  /// least `at_least`, e.g. a 429's Retry-After) and counts one more requeue for it. With
  /// `at_least` set, the key is paused until then: adds meanwhile (also one that came while it
  /// was being processed) join this delayed retry instead of making it ready sooner; forget()
  /// ends the pause.
  void add_rate_limited(std::string_view key, Priority priority = Priority::kHigh,
                        std::chrono::nanoseconds at_least = std::chrono::nanoseconds::zero());
  /// Resets the backoff of `key` (call after a successful reconcile).
  void forget(std::string_view key);
  /// How many rate-limited requeues `key` had since it was last forgotten.
  uint32_t num_requeues(std::string_view key) const;
  /// The delay the next add_rate_limited(key) would wait (for logs: "retrying in ...").
  std::chrono::nanoseconds next_backoff(std::string_view key) const;

  /// Blocks until a key is ready and hands it out (marking it in process), or returns nullopt
  /// once the queue is shut down (see the file comment for what drain changes).
  std::optional<WorkItem> get();
  /// As get(), but gives up after `timeout` and returns nullopt (check shutting_down() to tell).
  std::optional<WorkItem> get_for(std::chrono::nanoseconds timeout);
  /// Ends the processing of `key` started by get(); queues it again if it was added meanwhile.
  void done(std::string_view key);

  /// Stops intake, drops waiting and delayed keys, wakes blocked getters; returns how many keys
  /// it dropped. In-flight work finishes normally and is not requeued.
  size_t shutdown();
  /// Stops intake and drops delayed keys, but getters keep receiving the keys that are waiting
  /// (and those added during processing, requeued at done()) until none is left.
  void shutdown_and_drain();
  /// True once shutdown() or shutdown_and_drain() was called.
  bool shutting_down() const { return shutting_down_.load(std::memory_order_acquire); }
  /// Number of keys ready to be handed out, not counting delayed or in-process keys (a delayed
  /// key whose time came counts once a getter moved it, which idle getters do at once).
  size_t len() const;

 private:
  /// All the queue knows about one key; it exists while the key is waiting, delayed, in process
  /// or has unforgotten failures, and is recycled as soon as none holds.
  struct Entry {
    std::string key;
    uint64_t hash = 0;
    Entry* prev = nullptr;  // links in ready_[priority] while waiting
    Entry* next = nullptr;  // (next also links the free list)
    Clock::time_point added{};
    Clock::time_point started{};
    Clock::time_point delayed_until = Clock::time_point::max();  // max: no pending delayed add
    Clock::time_point not_before{};  // a Retry-After pause: not handed out before (until forget)
    uint64_t delay_seq = 0;          // matches the live timer in timers_; others are stale
    uint32_t failures = 0;
    Priority priority = Priority::kHigh;  // of the waiting key, or of the requeue when dirty
    Priority delayed_priority = Priority::kHigh;
    bool waiting = false;     // in a ready list
    bool processing = false;  // handed out, done() not called yet
    bool dirty = false;       // added while processing: requeue at done()
  };

  /// An intrusive FIFO of waiting entries: O(1) push, pop and removal (for promotion).
  struct List {
    Entry* head = nullptr;
    Entry* tail = nullptr;
    size_t size = 0;
  };

  /// A pending delayed add. Keyed by string (not Entry*) so a stale timer can never dangle.
  struct Timer {
    Clock::time_point at;
    uint64_t seq;
    std::string key;
  };

  uint64_t hash(std::string_view key) const;
  Entry* find_locked(std::string_view key, uint64_t hash) const;
  Entry* find_or_create_locked(std::string_view key, uint64_t hash);
  void erase_if_idle_locked(Entry* entry);
  /// Which getters to wake once the lock is released (waking under the lock would make them block
  /// on it straight away).
  enum class Wake : uint8_t { kNone, kOne, kAll };
  static void raise(Wake& wake, Wake level) { wake = std::max(wake, level); }
  void notify(Wake wake);

  void enqueue_locked(Entry* entry, Priority priority, Clock::time_point now, Wake& wake);
  void schedule_locked(Entry* entry, Clock::time_point now, std::chrono::nanoseconds delay,
                       Priority priority, Wake& wake);
  std::chrono::nanoseconds backoff(uint32_t failures) const;
  void fire_due_timers_locked(Clock::time_point now, Wake& wake);
  void done_locked(std::string_view key, uint64_t hash, Wake& wake);
  size_t drop_timers_locked();
  std::optional<WorkItem> get_until(std::optional<Clock::time_point> deadline);
  size_t depth_locked() const { return ready_[0].size + ready_[1].size; }

  static void push_back(List& list, Entry* entry);
  static void unlink(List& list, Entry* entry);

  WorkQueueOptions options_;
  QueueMetrics* metrics_;  // null when there are none: then no clock is read for them
  uint64_t seed_;          // per-queue hash seed: keys come from users, so no crafted collisions

  mutable FutexMutex mutex_;
  FutexCondition ready_cv_;
  base::OpenTable<Entry> entries_;  // every live entry (owned), by key
  List ready_[2];                   // indexed by Priority
  std::vector<Timer> timers_;       // a min-heap on (at, seq)
  // Recycled entries (their strings keep their buffers), so a steady flow of keys allocates
  // nothing; capped so a resync burst does not pin memory.
  Entry* free_ = nullptr;
  size_t free_count_ = 0;
  size_t waiters_ = 0;  // getters blocked on ready_cv_
  size_t dirty_ = 0;    // in-process keys with a requeue pending (drain waits for them)
  uint64_t next_seq_ = 0;
  bool draining_ = false;
  std::atomic<bool> shutting_down_{false};
};

}  // namespace vscaler::controller
