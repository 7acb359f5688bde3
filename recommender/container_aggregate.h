// ContainerAggregate: the usage history of one container name across the target's pods, VPA 1.8's
// model: the histograms are shared by the container name (AggregateContainerState), the memory
// windows are per pod (ContainerState). A CPU histogram of samples of equal weight, a memory
// histogram of one peak per pod per aggregation interval, the first/last sample times and the
// sample count that confidence is computed from, and per pod a clock that drops a sample not newer
// than that pod's last one (metrics-server answers the same sample until its next scrape) and the
// pod's current memory window (its peak and OOM-derived peak).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "recommender/aggregate_options.h"
#include "recommender/decaying_histogram.h"
#include "recommender/time.h"

namespace vscaler::recommender {

/// One usage sample of one container of one pod.
struct UsageSample {
  TimePoint time;           ///< PodMetrics timestamp (end of the measurement window)
  double cpu_cores = 0;     ///< usage.cpu in cores
  double memory_bytes = 0;  ///< usage.memory (working set) in bytes
};

/// What add_sample did with a sample.
enum class SampleOutcome {
  kAdded,    ///< folded into the histograms
  kStale,    ///< not newer than this pod's last sample of the container: skipped
  kInvalid,  ///< negative or non-finite usage: skipped
};

/// A stable 64-bit key for a pod (FNV-1a of its name), for the per-pod duplicate filter and
/// memory window. By name, as VPA keys its ContainerState (PodID: namespace and name; a scaler's
/// pods share its namespace): history points, which know no uid, and live samples of one pod
/// share a state, and a StatefulSet pod recreated under its name continues its predecessor's.
std::uint64_t pod_key(std::string_view pod_name);

/// The parts of an aggregate a checkpoint holds, as VPA's checkpoint does: the per-pod clocks
/// and memory windows are not kept. After a restore, samples not newer than the restored last
/// sample are treated as already counted; a pod's window opens anew with its next sample.
struct AggregateState {
  DecayingHistogram cpu;                  ///< CPU usage, every sample of the same weight
  DecayingHistogram memory;               ///< memory peaks, one per pod per interval
  TimePoint first_sample_start;           ///< earliest CPU sample (epoch: none yet)
  TimePoint last_sample_start;            ///< latest CPU sample (epoch: none yet)
  std::uint64_t total_samples_count = 0;  ///< CPU samples folded in
  friend bool operator==(const AggregateState&, const AggregateState&) = default;
};

/// Which pods' memory intervals a checkpoint leaves out (ContainerAggregate::checkpoint_memory):
/// those still open at `now` of the pods alive then, `live_pods` (pod_key, sorted). A gone pod
/// never samples again, so its last peak stays in the checkpoint, as VPA keeps the peaks of pods
/// no longer in its cluster state.
struct OpenIntervals {
  TimePoint now;
  std::vector<std::uint64_t> live_pods;
};

/// One pod's current memory aggregation interval (VPA's ContainerState window).
struct PodMemoryWindow {
  TimePoint end;           ///< end of the pod's current interval
  double memory_peak = 0;  ///< the pod's usage peak (bytes) in it
  double oom_peak = 0;     ///< the pod's OOM-derived peak (bytes) in it
};

/// One container name's history (see the file comment). Not thread-safe: one pass owns it.
class ContainerAggregate {
 public:
  ContainerAggregate() = default;
  /// Resumes from a checkpointed state: samples up to its last sample count as seen.
  explicit ContainerAggregate(AggregateState state);

  /// Folds one pod's sample in: CPU with the same weight as every other sample (VPA 1.8: pods
  /// of unequal requests, common once pods are resized in place, must not outvote each other),
  /// memory as the pod's peak of its current interval (a higher peak replaces the pod's previous
  /// one in the histogram).
  SampleOutcome add_sample(const AggregateOptions& options, std::uint64_t pod,
                           const UsageSample& sample);

  /// Folds one point of history (DESIGN.md "History from Prometheus") of `pod` at `time`: a CPU
  /// rate (nullopt: none at that time) that weighs as `samples` samples and adds `count` to the
  /// samples count behind confidence (a point at 1 h resolution stands for an hour of samples at
  /// the recommender's interval: 60 and 60; fold_history carries fractions into `count`), and a
  /// memory peak (nullopt: none) folded as the pod's interval peak, as live samples are. The
  /// pod's clock drops a point not newer than its last one.
  SampleOutcome add_history(const AggregateOptions& options, std::uint64_t pod, TimePoint time,
                            std::optional<double> cpu_cores, std::optional<double> memory_bytes,
                            double samples, std::uint32_t count);

  /// Counts an OOM kill at `time` of the container in `pod` whose memory request is
  /// `memory_request_bytes` (0 when none) as a memory sample of max(used + min bump, used *
  /// ratio), used = max(request, that pod's usage peak of its current interval). An error
  /// (nothing changes) when the kill is older than one aggregation interval before the pod's
  /// last sample, or not newer than a restored checkpoint's last sample (counted before).
  kube::Result<kube::Unit> record_oom(const AggregateOptions& options, std::uint64_t pod,
                                      TimePoint time, double memory_request_bytes);

  /// Adds the memory peaks `other` (a restored checkpoint this aggregate replaces) saw above
  /// every one this aggregate holds (DecayingHistogram::add_tail_of); returns the buckets added.
  /// When it adds some, what `other` counted as seen is seen here too: an OOM kill from before
  /// its restored last sample, still in a pod's status, raised them and is not counted again.
  std::size_t add_memory_tail_of(const AggregateOptions& options, const ContainerAggregate& other);
  /// The current memory window of `pod`; nullopt when the pod has none (never seen, or gone).
  std::optional<PodMemoryWindow> memory_window(std::uint64_t pod) const;

  /// Records `now` as the time this aggregate came to be held, unless one is recorded: VPA's
  /// CreationTime (a new aggregate's first pass, a restored one's load), from which an aggregate
  /// without samples expires.
  void note_held_at(TimePoint now) {
    if (held_since_ms_ == 0) held_since_ms_ = to_millis(now);
  }
  /// True when VPA's garbage collector would drop this aggregate at `now` (isExpired): its last
  /// sample, or without samples the time it came to be held (note_held_at; never, when none was
  /// recorded), is at least options.history_length() before `now`.
  bool expired(const AggregateOptions& options, TimePoint now) const;

  /// The checkpointable state.
  const AggregateState& state() const { return state_; }
  /// The memory histogram to checkpoint, as VPA's checkpoint writer builds it: without the peak
  /// of each live pod's interval still open (`open`). A restored aggregate opens every pod's
  /// window anew with its next sample, so a peak kept there would count twice in that interval.
  /// An open window whose entry is an OOM kill's bump keeps it: a restored aggregate refuses to
  /// count that kill again, and the bump is what keeps the pod from the next one.
  DecayingHistogram checkpoint_memory(const AggregateOptions& options,
                                      const OpenIntervals& open) const;
  /// True before the first CPU sample.
  bool empty() const { return state_.total_samples_count == 0; }
  /// Bytes this aggregate occupies, inline and on the heap.
  std::size_t memory_bytes() const;
  /// Releases spare vector capacity (after a pass; amortised growth can double the buckets).
  void shrink_to_fit();

 private:
  // What the aggregate keeps of one pod: 32 bytes, so that a scaler of many replicas stays
  // small. Peaks are floats (24-bit mantissa: within 64 bytes at 1 GiB); the histogram is given
  // the float-rounded value too, so a replaced peak is subtracted from the bucket it was added to.
  struct PodState {
    std::uint64_t pod;
    std::int64_t last_ms = 0;        // latest usage sample (0: none yet, only an OOM kill)
    std::int64_t window_end_ms = 0;  // end of the pod's memory interval (0: none open)
    float memory_peak = 0;
    float oom_peak = 0;
  };
  static_assert(sizeof(PodState) == 32);

  // Updates the pod's interval peak with `bytes` at `time` (VPA's addMemorySample).
  void add_memory_peak(const AggregateOptions& options, PodState& pod, double bytes, TimePoint time,
                       bool oom);
  // The state of `pod`, added (pods not heard of within the horizon are dropped first) when new.
  PodState& pod_state(const AggregateOptions& options, std::uint64_t pod, std::int64_t now_ms);
  const PodState* find_pod(std::uint64_t pod) const;

  AggregateState state_;
  std::int64_t restored_floor_ms_ = 0;  // last sample of the checkpoint restored from, else 0
  std::int64_t held_since_ms_ = 0;      // note_held_at's time (0: none recorded)
  std::vector<PodState> pods_;          // sorted by pod
};

}  // namespace vscaler::recommender
