// One recommender pass for one scaler, as a pure function: folds the PodMetrics of the target's
// pods (already filtered by owner chain) and their OOM kills into the scaler's per-container
// aggregates, and says what it saw so the caller can set RecommendationProvided (NoPodsMatched,
// NoMetrics, InsufficientHistory). The I/O (lists by selector) is the caller's.
#pragma once

#include <functional>
#include <string_view>
#include <vector>

#include "recommender/aggregate_options.h"
#include "recommender/checkpoint.h"
#include "recommender/oom_dedup.h"
#include "recommender/pod_metrics.h"
#include "recommender/pods.h"

namespace vscaler::recommender {

/// What a pass folded in.
struct PassStats {
  std::size_t pods = 0;                  ///< owned pods listed
  std::size_t running = 0;               ///< of those, running (PodInfo::running)
  std::size_t pods_with_metrics = 0;     ///< of those, with a PodMetrics item
  std::size_t running_with_metrics = 0;  ///< of the running ones, with a PodMetrics item
  std::size_t samples_added = 0;         ///< container samples folded in
  std::size_t samples_stale = 0;         ///< not newer than that pod's last sample
  std::size_t samples_invalid = 0;       ///< negative or non-finite usage
  std::size_t oom_kills_counted = 0;     ///< new OOM kills folded in
  std::vector<std::string> oom_errors;   ///< kills refused (too old, already in the checkpoint)
  /// Aggregates dropped as VPA's garbage collector drops them (ScalerHistory::fold only).
  std::size_t aggregates_dropped = 0;
};

/// Folds `metrics` of the `owned` pods (metrics of other pods are ignored: PodMetrics carry no
/// owner) and the owned pods' new OOM kills into `aggregates`. Every CPU sample weighs the same
/// (AggregateOptions::cpu_sample_weight). Only containers of the pod's spec.containers are
/// sampled: PodMetrics also report init containers (native sidecars among them), which VPA's
/// feeder skips. `recommended(container)` chooses which containers get a history (all when
/// empty), so that sidecars vscaler leaves alone cost nothing.
PassStats fold_pass(ContainerAggregates& aggregates, const std::vector<PodUsage>& metrics,
                    const std::vector<PodInfo>& owned, OomDedup& oom_dedup,
                    const AggregateOptions& options,
                    const std::function<bool(std::string_view)>& recommended = {});

}  // namespace vscaler::recommender
