// HistorySource: where a scaler without a checkpoint gets the usage history of its target's pods
// before its first live sample (DESIGN.md "History from Prometheus"), and how that history is
// folded into its aggregates — each point with its own timestamp, so that decay and confidence
// see real days, and counting as resolution / --recommender-interval samples. The Prometheus
// implementation is recommender/prometheus_history.h; the loop only sees this interface.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "recommender/aggregate_options.h"
#include "recommender/container_aggregates.h"
#include "recommender/metrics_source.h"
#include "recommender/time.h"

namespace vscaler::recommender {

/// One value of a series at one time.
struct UsagePoint {
  TimePoint time;
  double value = 0;
};

/// One container of one pod over the history: CPU in cores (a rate), memory in bytes (the peak
/// of each resolution step).
struct PodSeries {
  std::string pod;
  std::string container;
  std::vector<UsagePoint> points;  ///< in time order
};

/// A target's history as a source returns it.
struct UsageHistory {
  std::vector<PodSeries> cpu;
  std::vector<PodSeries> memory;
  Duration resolution{std::chrono::hours(1)};  ///< the step between points
  std::size_t queries = 0;                     ///< requests the source made (pages counted)
  std::size_t dropped = 0;  ///< points left out: NaN, infinite or negative values
};

/// Why a source has no history for a target.
struct HistoryError {
  /// In words fit for a condition message ("Prometheus at http://...: connection refused").
  std::string message;
  /// The source itself failed (unreachable, timed out, refused vscaler, overloaded): the next
  /// load would fail or wait the same way, so the rest of the pass does not ask. False: only
  /// this target's answer was bad (too large, malformed, an error of its own query).
  bool source_down = false;
};

/// Where histories come from. Implementations bound their time (a pass must never wait long).
class HistorySource {
 public:
  virtual ~HistorySource() = default;
  /// The history of `target`'s pods up to `now`, or why there is none.
  virtual kube::Result<UsageHistory, HistoryError> load(const TargetWorkload& target,
                                                        TimePoint now) = 0;
};

/// What fold_history did.
struct HistoryStats {
  std::size_t points = 0;   ///< points folded in (CPU and memory of a time count as one)
  std::size_t pods = 0;     ///< pods with a point
  std::size_t invalid = 0;  ///< points refused (NaN, negative)
  TimePoint first;          ///< earliest point folded (epoch: none)
  TimePoint last;           ///< latest point folded
};

/// Folds `history` into `aggregates`: the points of the containers `recommended` accepts (all
/// when empty), CPU and memory of the same pod, container and time as one sample, each CPU point
/// counting as `samples_per_point` samples (resolution / interval: 1.5 for 90 s points at a 60 s
/// interval, 0.5 for 30 s ones) in weight; toward the samples count, which is whole, each
/// container's fractions are carried from point to point, so the count is the sum's floor. Pods are
/// keyed by name (pod_key), as live samples are and as VPA keys both (PodID): a pod still running
/// when the history is seeded continues, with its live samples, the memory window its last history
/// points opened (one peak per pod per interval, not a second one for the current day).
HistoryStats fold_history(ContainerAggregates& aggregates, const UsageHistory& history,
                          const AggregateOptions& options, double samples_per_point,
                          const std::function<bool(std::string_view)>& recommended = {});

}  // namespace vscaler::recommender
