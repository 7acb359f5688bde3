// The recommender's time constants and sample rules (VerticalPodAutoscaler's defaults), in one
// place so that flags can set them and tests can shorten them.
#pragma once

#include <string>

#include "base/result.h"
#include "recommender/decaying_histogram.h"
#include "recommender/time.h"

namespace vscaler::recommender {

/// How samples are folded into a container's history.
struct AggregateOptions {
  /// --cpu-histogram-decay-half-life: a CPU sample this much older weighs half as much.
  Duration cpu_half_life = std::chrono::hours(24);
  /// --memory-histogram-decay-half-life: the same for memory peaks.
  Duration memory_half_life = std::chrono::hours(24);
  /// --memory-aggregation-interval: memory keeps one peak per interval of this length.
  Duration memory_aggregation_interval = std::chrono::hours(24);
  /// --memory-aggregation-interval-count (VPA's, 8): how many intervals a history spans. A
  /// container's aggregate whose last sample is older than history_length() is dropped, as
  /// VPA's garbage collector drops an expired AggregateContainerState.
  int memory_aggregation_interval_count = 8;
  /// The weight of every CPU sample (VPA 1.8's minSampleWeight, 0.1). Equal for all samples:
  /// VPA before 1.8 weighed by the CPU request, so that pods of unequal requests outvoted each
  /// other (kubernetes/autoscaler #7818).
  double cpu_sample_weight = 0.1;
  /// An OOM kill counts as a memory sample of max(used * ratio, used + min bump) (VPA: 1.2).
  double oom_bump_ratio = 1.2;
  /// ... and at least this many bytes more than used (VPA: 100 MiB).
  double oom_min_bump_bytes = 100.0 * 1024 * 1024;
  /// A pod whose last sample is this much older than a newer sample of the same container is
  /// forgotten by the duplicate filter (its pod has gone; metrics are never this late).
  Duration pod_clock_horizon = std::chrono::hours(1);

  /// How long an aggregate outlives its last sample: memory_aggregation_interval x
  /// memory_aggregation_interval_count (VPA's memory aggregation window, 8 days).
  Duration history_length() const {
    return memory_aggregation_interval * memory_aggregation_interval_count;
  }
  /// The CPU histograms' layout and half-life.
  HistogramConfig cpu_config() const {
    return {&ExponentialHistogramOptions::cpu(), cpu_half_life};
  }
  /// The memory histograms' layout and half-life.
  HistogramConfig memory_config() const {
    return {&ExponentialHistogramOptions::memory(), memory_half_life};
  }
  /// Checks that durations are positive and ratios sensible; the error names the field.
  kube::Result<kube::Unit> validate() const;
};

}  // namespace vscaler::recommender
