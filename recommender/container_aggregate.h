// ContainerAggregate: the usage history of one container name across the target's pods (as VPA
// aggregates by container name): a CPU histogram of samples weighted by the CPU request, a memory
// histogram of one peak per aggregation interval, the first/last sample times and the sample
// count that confidence is computed from, and per-pod clocks that drop a sample not newer than
// that pod's last one (metrics-server answers the same sample until its next scrape).
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "recommender/aggregate_options.h"
#include "recommender/decaying_histogram.h"
#include "recommender/time.h"

namespace vscaler::recommender {

/// One usage sample of one container of one pod.
struct UsageSample {
  TimePoint time;                ///< PodMetrics timestamp (end of the measurement window)
  double cpu_cores = 0;          ///< usage.cpu in cores
  double memory_bytes = 0;       ///< usage.memory (working set) in bytes
  double cpu_request_cores = 0;  ///< the container's CPU request in cores (0 when none)
};

/// What add_sample did with a sample.
enum class SampleOutcome {
  kAdded,    ///< folded into the histograms
  kStale,    ///< not newer than this pod's last sample of the container: skipped
  kInvalid,  ///< negative or non-finite usage: skipped
};

/// A stable 64-bit key for a pod (FNV-1a of its uid), for the per-pod duplicate filter.
std::uint64_t pod_key(std::string_view pod_uid);

/// The parts of an aggregate a checkpoint holds (the per-pod clocks are not kept: after a
/// restore, samples not newer than the restored last sample are treated as already counted).
struct AggregateState {
  DecayingHistogram cpu;                  ///< CPU usage, weighted by request
  DecayingHistogram memory;               ///< memory peaks, one per interval
  TimePoint first_sample_start;           ///< earliest CPU sample (epoch: none yet)
  TimePoint last_sample_start;            ///< latest CPU sample (epoch: none yet)
  std::uint64_t total_samples_count = 0;  ///< CPU samples folded in
  TimePoint window_end;                   ///< end of the current memory aggregation interval
  double memory_peak = 0;                 ///< usage peak (bytes) of the current interval
  double oom_peak = 0;                    ///< OOM-derived peak (bytes) of the current interval
  TimePoint last_memory_sample;           ///< latest memory sample, OOM kills included
  friend bool operator==(const AggregateState&, const AggregateState&) = default;
};

/// One container name's history (see the file comment). Not thread-safe: one pass owns it.
class ContainerAggregate {
 public:
  ContainerAggregate() = default;
  /// Resumes from a checkpointed state: samples up to its last sample count as seen.
  explicit ContainerAggregate(AggregateState state);

  /// Folds one pod's sample in: CPU weighted by max(request, min weight), memory as the
  /// interval's peak (a higher peak replaces the previous one in the histogram).
  SampleOutcome add_sample(const AggregateOptions& options, std::uint64_t pod,
                           const UsageSample& sample);

  /// Counts an OOM kill at `time` of a container whose memory request is `memory_request_bytes`
  /// (0 when none) as a memory sample of max(used + min bump, used * ratio), used = max(request,
  /// the current interval's usage peak). An error (nothing changes) when the kill is older than
  /// one aggregation interval before the last memory sample, or not newer than a restored
  /// checkpoint's last sample (it was counted before the restart).
  kube::Result<kube::Unit> record_oom(const AggregateOptions& options, TimePoint time,
                                      double memory_request_bytes);

  /// The checkpointable state.
  const AggregateState& state() const { return state_; }
  /// True before the first CPU sample.
  bool empty() const { return state_.total_samples_count == 0; }
  /// Bytes this aggregate occupies, inline and on the heap.
  std::size_t memory_bytes() const;
  /// Releases spare vector capacity (after a pass; amortised growth can double the buckets).
  void shrink_to_fit();

 private:
  // Updates the interval peak with `bytes` at `time` (VPA's addMemorySample).
  void add_memory_peak(const AggregateOptions& options, double bytes, TimePoint time, bool oom);
  // True when `time` is newer than the pod's last sample; records it.
  bool advance_pod_clock(const AggregateOptions& options, std::uint64_t pod, TimePoint time);

  struct PodClock {
    std::uint64_t pod;
    std::int64_t last_ms;
  };
  AggregateState state_;
  std::int64_t restored_floor_ms_ = 0;  // last sample of the checkpoint restored from, else 0
  std::vector<PodClock> pods_;          // sorted by pod
};

}  // namespace vscaler::recommender
