// Per-container history: the sample rules of VPA's ContainerState/AggregateContainerState.
#include "recommender/container_aggregate.h"

#include <algorithm>
#include <cmath>

#include "recommender/hash.h"

namespace vscaler::recommender {

std::uint64_t pod_key(std::string_view pod_uid) {
  return fnv1a(kFnvBasis, pod_uid);
}

ContainerAggregate::ContainerAggregate(AggregateState state)
    : state_(std::move(state)), restored_floor_ms_(to_millis(state_.last_sample_start)) {}

bool ContainerAggregate::advance_pod_clock(const AggregateOptions& options, std::uint64_t pod,
                                           TimePoint time) {
  const std::int64_t t = to_millis(time);
  auto it = std::lower_bound(pods_.begin(), pods_.end(), pod,
                             [](const PodClock& c, std::uint64_t p) { return c.pod < p; });
  if (it != pods_.end() && it->pod == pod) {
    if (t <= it->last_ms) return false;
    it->last_ms = t;
    return true;
  }
  // A pod not seen since the restore: whatever the checkpoint covered was counted already.
  if (t <= restored_floor_ms_) return false;
  // New pod: forget pods that have not reported within the horizon (they are gone), so the
  // filter stays as small as the set of live pods.
  const std::int64_t cutoff = t - options.pod_clock_horizon.count();
  std::erase_if(pods_, [cutoff](const PodClock& c) { return c.last_ms < cutoff; });
  it = std::lower_bound(pods_.begin(), pods_.end(), pod,
                        [](const PodClock& c, std::uint64_t p) { return c.pod < p; });
  pods_.insert(it, PodClock{pod, t});
  return true;
}

SampleOutcome ContainerAggregate::add_sample(const AggregateOptions& options, std::uint64_t pod,
                                             const UsageSample& sample) {
  if (!std::isfinite(sample.cpu_cores) || sample.cpu_cores < 0 ||
      !std::isfinite(sample.memory_bytes) || sample.memory_bytes < 0 ||
      !std::isfinite(sample.cpu_request_cores)) {
    return SampleOutcome::kInvalid;
  }
  if (!advance_pod_clock(options, pod, sample.time)) return SampleOutcome::kStale;
  // Samples weigh the current request: when the request rises, older history effectively
  // decays faster, which reacts quickly to CPU starvation (VPA's reasoning).
  state_.cpu.add_sample(options.cpu_config(), sample.cpu_cores,
                        std::max(sample.cpu_request_cores, options.min_cpu_sample_weight),
                        sample.time);
  if (state_.total_samples_count == 0 || sample.time < state_.first_sample_start) {
    state_.first_sample_start = sample.time;
  }
  if (sample.time > state_.last_sample_start) state_.last_sample_start = sample.time;
  ++state_.total_samples_count;
  add_memory_peak(options, sample.memory_bytes, sample.time, false);
  return SampleOutcome::kAdded;
}

void ContainerAggregate::add_memory_peak(const AggregateOptions& options, double bytes,
                                         TimePoint time, bool oom) {
  const HistogramConfig config = options.memory_config();
  if (time > state_.last_memory_sample) state_.last_memory_sample = time;
  if (to_millis(state_.window_end) == 0) state_.window_end = time;  // the first sample
  bool add_new_peak = false;
  if (time < state_.window_end) {
    // Opening a window always adds its first peak, so the window's histogram entry is the
    // larger of the two peaks. (VPA skips the replacement when that peak is 0, losing the
    // window's real peak after a first sample of 0 bytes; here a 0 peak is replaced too.)
    double old_peak = std::max(state_.memory_peak, state_.oom_peak);
    if (bytes > old_peak) {
      state_.memory.subtract_sample(config, old_peak, 1.0, state_.window_end);
      add_new_peak = true;
    }
  } else {
    // Move the window forward by whole intervals until it ends after `time`.
    const auto interval = options.memory_aggregation_interval;
    auto shift = ((time - state_.window_end) / interval) * interval + interval;
    state_.window_end += shift;
    state_.memory_peak = 0;
    state_.oom_peak = 0;
    add_new_peak = true;
  }
  if (!add_new_peak) return;
  // The peak is recorded at the window's end, so all peaks of one interval decay alike.
  state_.memory.add_sample(config, bytes, 1.0, state_.window_end);
  (oom ? state_.oom_peak : state_.memory_peak) = bytes;
}

kube::Result<kube::Unit> ContainerAggregate::record_oom(const AggregateOptions& options,
                                                        TimePoint time,
                                                        double memory_request_bytes) {
  if (to_millis(time) <= restored_floor_ms_) {
    return kube::fail("OOM kill at " + format_rfc3339(time) +
                      " is not newer than the restored checkpoint (already counted)");
  }
  if (to_millis(state_.last_memory_sample) != 0 &&
      time < state_.last_memory_sample - options.memory_aggregation_interval) {
    return kube::fail("OOM kill at " + format_rfc3339(time) +
                      " is older than one memory aggregation interval");
  }
  // The OOM-derived peak is left out of `used` so that repeated kills do not compound.
  double used = std::max(std::max(memory_request_bytes, 0.0), state_.memory_peak);
  double needed = std::max(used + options.oom_min_bump_bytes, used * options.oom_bump_ratio);
  add_memory_peak(options, needed, time, true);
  return kube::Unit{};
}

std::size_t ContainerAggregate::memory_bytes() const {
  return sizeof(*this) - 2 * sizeof(DecayingHistogram) + state_.cpu.memory_bytes() +
         state_.memory.memory_bytes() + pods_.capacity() * sizeof(PodClock);
}

void ContainerAggregate::shrink_to_fit() {
  state_.cpu.shrink_to_fit();
  state_.memory.shrink_to_fit();
  pods_.shrink_to_fit();
}

}  // namespace vscaler::recommender
