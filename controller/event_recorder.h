// EventRecorder: Kubernetes Events about scalers, posted from a thread of its own and aggregated
// the way client-go's EventCorrelator does: the same event (object, type, reason, message) again
// within the window bumps the stored Event's count and lastTimestamp instead of posting a new one.
// Bumps of one Event are written at most once per bump_interval; repeats in between are folded
// into the next (as client-go's events library folds an EventSeries), so a workload edited many
// times a second costs one Event write per interval, not one per edit.
// record() never does I/O, so an Event can never block or fail a reconcile (DESIGN.md item 7).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>

#include "base/result.h"
#include "kube/client.h"
#include "kube/errors.h"

namespace vscaler::controller {

/// One Event to report about a VerticalScaler.
struct EventRecord {
  std::string ns;    ///< the scaler's namespace (the Event's too)
  std::string name;  ///< the scaler's name
  std::string uid;
  std::string resource_version;
  bool warning = false;  ///< type Warning, else Normal
  std::string reason;
  std::string message;
};

/// Where Events are written: KubeEventWriter in production.
class EventWriter {
 public:
  virtual ~EventWriter() = default;
  /// POSTs `event` (a complete v1 Event) to its namespace.
  virtual base::Result<base::Unit, kube::ApiError> create(const nlohmann::json& event) = 0;
  /// Sets count and lastTimestamp of Event ns/name (a repeat of it).
  virtual base::Result<base::Unit, kube::ApiError> bump(const std::string& ns,
                                                        const std::string& name, int64_t count,
                                                        const std::string& last_timestamp) = 0;
};

/// EventWriter over the API server.
class KubeEventWriter final : public EventWriter {
 public:
  explicit KubeEventWriter(kube::Client client) : client_(std::move(client)) {}
  base::Result<base::Unit, kube::ApiError> create(const nlohmann::json& event) override;
  base::Result<base::Unit, kube::ApiError> bump(const std::string& ns, const std::string& name,
                                                int64_t count,
                                                const std::string& last_timestamp) override;

 private:
  kube::Client client_;
};

/// Tunables.
struct EventRecorderOptions {
  /// A repeat within this long of the last occurrence bumps the count (client-go: 10 minutes).
  std::chrono::milliseconds window{std::chrono::minutes(10)};
  /// An Event's count is written at most this often: a repeat sooner after the last write of that
  /// Event is folded into a bump written when the interval has passed.
  std::chrono::milliseconds bump_interval{std::chrono::seconds(10)};
  /// Records waiting to be written at most; more are dropped (and counted): Events are best
  /// effort, memory is not.
  std::size_t max_pending = 1000;
  /// Distinct events remembered for aggregation at most; the oldest are forgotten first.
  std::size_t max_tracked = 4096;
};

/// Counters, for tests and logs.
struct EventRecorderStats {
  uint64_t created = 0;      ///< new Events posted
  uint64_t bumped = 0;       ///< repeats folded into an existing Event (written or due)
  uint64_t bump_writes = 0;  ///< count updates written (several repeats fold into one)
  uint64_t dropped = 0;      ///< records dropped: the queue was full, or the recorder stopped
  uint64_t failed = 0;       ///< writes the API server refused or that failed
};

/// The asynchronous, aggregating recorder (see the file comment). Thread-safe.
class EventRecorder {
 public:
  /// `writer` must outlive the recorder.
  explicit EventRecorder(EventWriter& writer, EventRecorderOptions options = {});
  /// Stops the thread; what is still queued is dropped.
  ~EventRecorder();
  EventRecorder(const EventRecorder&) = delete;
  EventRecorder& operator=(const EventRecorder&) = delete;

  /// Queues `record` and returns at once (no I/O).
  void record(EventRecord record);
  /// Starts the writing thread. Without it, flush() writes (tests).
  void start();
  /// Stops and joins the thread; records still queued are dropped. Idempotent.
  void stop();
  /// Writes every queued record, and every folded repeat not written yet, on the caller's thread;
  /// returns how many records it wrote.
  std::size_t flush();
  /// Counters since construction.
  EventRecorderStats stats() const;

 private:
  /// What the recorder knows of one posted Event.
  struct Seen {
    std::string event_name;
    std::string ns;
    int64_t count = 0;                                   // occurrences, the folded ones included
    int64_t stored_count = 0;                            // what the stored Event says
    std::chrono::steady_clock::time_point last{};        // of the newest occurrence
    std::chrono::steady_clock::time_point last_write{};  // of the newest write of this Event
    std::string last_stamp;                              // lastTimestamp of the newest occurrence
  };
  void write(const EventRecord& record);
  /// Writes the folded repeats due by `until` (all of them when nullopt); sets next_bump_.
  void write_bumps(std::optional<std::chrono::steady_clock::time_point> until);
  /// Writes the count of `event` (write_mutex_ held); false when the API server refused it.
  bool write_bump(Seen& event);
  void run();

  EventWriter& writer_;
  EventRecorderOptions options_;
  mutable std::mutex mutex_;  // guards the queue, stopping_ and stats_
  std::condition_variable pending_cv_;
  /// When the earliest folded repeat is due (guarded by mutex_); max when none is.
  std::chrono::steady_clock::time_point next_bump_ = std::chrono::steady_clock::time_point::max();
  std::deque<EventRecord> pending_;
  bool stopping_ = false;
  EventRecorderStats stats_;
  std::thread thread_;
  std::mutex write_mutex_;  // one writer at a time (the thread, or flush()); guards seen_
  std::unordered_map<std::string, Seen> seen_;
};

}  // namespace vscaler::controller
