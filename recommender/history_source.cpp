// fold_history: a source's series, joined per pod, container and time, into the aggregates.
#include "recommender/history_source.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <tuple>

namespace vscaler::recommender {

HistoryStats fold_history(ContainerAggregates& aggregates, const UsageHistory& history,
                          const AggregateOptions& options, double samples_per_point,
                          const std::function<bool(std::string_view)>& recommended) {
  // (container, pod, time) -> cpu, memory: a point of both series at one time is one sample, as
  // a live PodMetrics sample carries both.
  struct Point {
    std::optional<double> cpu;
    std::optional<double> memory;
  };
  std::map<std::tuple<std::string_view, std::string_view, std::int64_t>, Point> joined;
  auto take = [&](const std::vector<PodSeries>& series, bool cpu) {
    for (const PodSeries& one : series) {
      if (recommended && !recommended(one.container)) continue;
      for (const UsagePoint& point : one.points) {
        Point& slot = joined[{one.container, one.pod, to_millis(point.time)}];
        (cpu ? slot.cpu : slot.memory) = point.value;
      }
    }
  };
  take(history.cpu, true);
  take(history.memory, false);
  HistoryStats stats;
  std::set<std::string_view> pods;
  // Per container: the fraction of a sample the count still owes, and whether any was counted.
  struct Owed {
    double samples = 0;
    bool counted = false;
  };
  std::map<std::string_view, Owed> owed_by_container;
  // In time order per container and pod (the map's order): each pod's clock moves forward.
  for (const auto& [key, point] : joined) {
    const auto& [container, pod, millis] = key;
    const TimePoint time = from_millis(millis);
    // The samples owed so far, taken as whole ones; spent only if the point is folded in (a
    // stale or invalid one, dropped, leaves the count as it was).
    Owed& owed = owed_by_container[container];
    double owing = owed.samples;
    std::uint32_t count = 0;
    if (point.cpu && samples_per_point > 0) {
      owing += samples_per_point;
      // A hair under a whole number is that number: 0.1 ten times must make 1. A container's
      // first point counts one sample at least (its aggregate then has samples, whatever the
      // fraction), paid back by the next ones.
      count =
          static_cast<std::uint32_t>(std::max(owed.counted ? 0.0 : 1.0, std::floor(owing + 1e-9)));
    }
    SampleOutcome outcome = aggregates[container].add_history(
        options, pod_key(pod), time, point.cpu, point.memory, samples_per_point, count);
    if (outcome == SampleOutcome::kAdded && point.cpu) {
      owed.samples = owing - count;
      owed.counted = true;
    }
    if (outcome != SampleOutcome::kAdded) {
      if (outcome == SampleOutcome::kInvalid) ++stats.invalid;
      continue;
    }
    ++stats.points;
    pods.insert(pod);
    if (stats.first == TimePoint() || time < stats.first) stats.first = time;
    if (time > stats.last) stats.last = time;
  }
  stats.pods = pods.size();
  return stats;
}

}  // namespace vscaler::recommender
