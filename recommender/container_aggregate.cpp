// Per-container history: the sample rules of VPA 1.8's ContainerState (per pod: the duplicate
// filter and the memory window) and AggregateContainerState (per container name: histograms).
#include "recommender/container_aggregate.h"

#include <algorithm>
#include <cmath>

#include "recommender/hash.h"

namespace vscaler::recommender {

std::uint64_t pod_key(std::string_view pod_name) {
  return fnv1a(kFnvBasis, pod_name);
}

ContainerAggregate::ContainerAggregate(AggregateState state)
    : state_(std::move(state)), restored_floor_ms_(to_millis(state_.last_sample_start)) {}

const ContainerAggregate::PodState* ContainerAggregate::find_pod(std::uint64_t pod) const {
  auto it = std::lower_bound(pods_.begin(), pods_.end(), pod,
                             [](const PodState& p, std::uint64_t key) { return p.pod < key; });
  return it != pods_.end() && it->pod == pod ? &*it : nullptr;
}

ContainerAggregate::PodState& ContainerAggregate::pod_state(const AggregateOptions& options,
                                                            std::uint64_t pod,
                                                            std::int64_t now_ms) {
  if (const PodState* found = find_pod(pod)) return const_cast<PodState&>(*found);
  // New pod: forget pods not heard of within the horizon (they are gone), so the list stays as
  // small as the set of live pods. A pod known only by an OOM kill was last heard of then.
  const std::int64_t cutoff = now_ms - options.pod_clock_horizon.count();
  const std::int64_t interval_ms = options.memory_aggregation_interval.count();
  std::erase_if(pods_, [&](const PodState& p) {
    return std::max(p.last_ms, p.window_end_ms - interval_ms) < cutoff;
  });
  auto it = std::lower_bound(pods_.begin(), pods_.end(), pod,
                             [](const PodState& p, std::uint64_t key) { return p.pod < key; });
  return *pods_.insert(it, PodState{pod});
}

std::optional<PodMemoryWindow> ContainerAggregate::memory_window(std::uint64_t pod) const {
  const PodState* p = find_pod(pod);
  if (p == nullptr || p->window_end_ms == 0) return std::nullopt;
  return PodMemoryWindow{from_millis(p->window_end_ms), p->memory_peak, p->oom_peak};
}

SampleOutcome ContainerAggregate::add_sample(const AggregateOptions& options, std::uint64_t pod,
                                             const UsageSample& sample) {
  if (!std::isfinite(sample.cpu_cores) || sample.cpu_cores < 0 ||
      !std::isfinite(sample.memory_bytes) || sample.memory_bytes < 0) {
    return SampleOutcome::kInvalid;
  }
  const std::int64_t t = to_millis(sample.time);
  // Whatever the restored checkpoint covered was counted already, whichever pod it came from.
  if (t <= restored_floor_ms_) return SampleOutcome::kStale;
  PodState& state = pod_state(options, pod, t);
  if (t <= state.last_ms) return SampleOutcome::kStale;
  state.last_ms = t;
  state_.cpu.add_sample(options.cpu_config(), sample.cpu_cores, options.cpu_sample_weight,
                        sample.time);
  if (state_.total_samples_count == 0 || sample.time < state_.first_sample_start) {
    state_.first_sample_start = sample.time;
  }
  if (sample.time > state_.last_sample_start) state_.last_sample_start = sample.time;
  ++state_.total_samples_count;
  add_memory_peak(options, state, sample.memory_bytes, sample.time, false);
  return SampleOutcome::kAdded;
}

SampleOutcome ContainerAggregate::add_history(const AggregateOptions& options, std::uint64_t pod,
                                              TimePoint time, std::optional<double> cpu_cores,
                                              std::optional<double> memory_bytes, double samples,
                                              std::uint32_t count) {
  const auto bad = [](const std::optional<double>& value) {
    return value && (!std::isfinite(*value) || *value < 0);
  };
  if (bad(cpu_cores) || bad(memory_bytes) || !(samples > 0) || !std::isfinite(samples) ||
      (!cpu_cores && !memory_bytes)) {
    return SampleOutcome::kInvalid;
  }
  const std::int64_t t = to_millis(time);
  if (t <= restored_floor_ms_) return SampleOutcome::kStale;
  PodState& state = pod_state(options, pod, t);
  if (t <= state.last_ms) return SampleOutcome::kStale;
  state.last_ms = t;
  if (cpu_cores) {
    state_.cpu.add_sample(options.cpu_config(), *cpu_cores, options.cpu_sample_weight * samples,
                          time);
    if (state_.total_samples_count == 0 || time < state_.first_sample_start) {
      state_.first_sample_start = time;
    }
    if (time > state_.last_sample_start) state_.last_sample_start = time;
    state_.total_samples_count += count;
  }
  if (memory_bytes) add_memory_peak(options, state, *memory_bytes, time, false);
  return SampleOutcome::kAdded;
}

void ContainerAggregate::add_memory_peak(const AggregateOptions& options, PodState& pod,
                                         double bytes, TimePoint time, bool oom) {
  const HistogramConfig config = options.memory_config();
  const auto peak = static_cast<float>(bytes);
  const std::int64_t t = to_millis(time);
  if (pod.window_end_ms == 0) pod.window_end_ms = t;  // the pod's first sample
  bool add_new_peak = false;
  if (t < pod.window_end_ms) {
    // Opening a window always adds its first peak, so the window's histogram entry is the
    // larger of the two peaks. (VPA skips the replacement when that peak is 0, losing the
    // window's real peak after a first sample of 0 bytes; here a 0 peak is replaced too.)
    const float old_peak = std::max(pod.memory_peak, pod.oom_peak);
    if (peak > old_peak) {
      state_.memory.subtract_sample(config, old_peak, 1.0, from_millis(pod.window_end_ms));
      add_new_peak = true;
    }
  } else {
    // Move the window forward by whole intervals until it ends after `time`.
    const std::int64_t interval = options.memory_aggregation_interval.count();
    pod.window_end_ms += (t - pod.window_end_ms) / interval * interval + interval;
    pod.memory_peak = 0;
    pod.oom_peak = 0;
    add_new_peak = true;
  }
  if (!add_new_peak) return;
  // The peak is recorded at the window's end, so all peaks of one interval decay alike.
  state_.memory.add_sample(config, peak, 1.0, from_millis(pod.window_end_ms));
  (oom ? pod.oom_peak : pod.memory_peak) = peak;
}

DecayingHistogram ContainerAggregate::checkpoint_memory(const AggregateOptions& options,
                                                        const OpenIntervals& open) const {
  DecayingHistogram out = state_.memory;
  const std::int64_t now_ms = to_millis(open.now);
  for (const PodState& pod : pods_) {
    if (pod.window_end_ms <= now_ms || pod.memory_peak < pod.oom_peak ||
        !std::binary_search(open.live_pods.begin(), open.live_pods.end(), pod.pod)) {
      continue;
    }
    // The window's one entry in the histogram is the larger of its two peaks (add_memory_peak).
    out.subtract_sample(options.memory_config(), pod.memory_peak, 1.0,
                        from_millis(pod.window_end_ms));
  }
  return out;
}

std::size_t ContainerAggregate::add_memory_tail_of(const AggregateOptions& options,
                                                   const ContainerAggregate& other) {
  const std::size_t added = state_.memory.add_tail_of(options.memory_config(), other.state_.memory);
  if (added > 0) restored_floor_ms_ = std::max(restored_floor_ms_, other.restored_floor_ms_);
  return added;
}

kube::Result<kube::Unit> ContainerAggregate::record_oom(const AggregateOptions& options,
                                                        std::uint64_t pod, TimePoint time,
                                                        double memory_request_bytes) {
  const std::int64_t t = to_millis(time);
  if (t <= restored_floor_ms_) {
    return kube::fail("OOM kill at " + format_rfc3339(time) +
                      " is not newer than the restored checkpoint (already counted)");
  }
  const PodState* known = find_pod(pod);
  if (known != nullptr && known->last_ms != 0 &&
      time < from_millis(known->last_ms) - options.memory_aggregation_interval) {
    return kube::fail("OOM kill at " + format_rfc3339(time) +
                      " is older than one memory aggregation interval");
  }
  PodState& state = pod_state(options, pod, t);
  // The OOM-derived peak is left out of `used` so that repeated kills do not compound; the
  // killed pod's own peak counts, not the largest replica's.
  const double used =
      std::max(std::max(memory_request_bytes, 0.0), static_cast<double>(state.memory_peak));
  const double needed = std::max(used + options.oom_min_bump_bytes, used * options.oom_bump_ratio);
  add_memory_peak(options, state, needed, time, true);
  return kube::Unit{};
}

bool ContainerAggregate::expired(const AggregateOptions& options, TimePoint now) const {
  if (empty()) {
    // An OOM kill or a memory-only history point holds no sample time: the aggregate lasts a
    // history length from when it was first held, as VPA's does from its creation.
    return held_since_ms_ != 0 && now - from_millis(held_since_ms_) >= options.history_length();
  }
  return now - state_.last_sample_start >= options.history_length();
}

std::size_t ContainerAggregate::memory_bytes() const {
  return sizeof(*this) - 2 * sizeof(DecayingHistogram) + state_.cpu.memory_bytes() +
         state_.memory.memory_bytes() + pods_.capacity() * sizeof(PodState);
}

void ContainerAggregate::shrink_to_fit() {
  state_.cpu.shrink_to_fit();
  state_.memory.shrink_to_fit();
  pods_.shrink_to_fit();
}

}  // namespace vscaler::recommender
