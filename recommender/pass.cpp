// A pass: metrics joined to owned pods by name, samples and OOM kills folded per container name.
#include "recommender/pass.h"

#include <unordered_map>

namespace vscaler::recommender {

PassStats fold_pass(ContainerAggregates& aggregates, const std::vector<PodUsage>& metrics,
                    const std::vector<PodInfo>& owned, OomDedup& oom_dedup,
                    const AggregateOptions& options,
                    const std::function<bool(std::string_view)>& recommended) {
  PassStats stats;
  stats.pods = owned.size();
  for (const auto& pod : owned) stats.running += pod.running;
  std::unordered_map<std::string_view, const PodInfo*> by_name;
  for (const auto& pod : owned) by_name.emplace(pod.name, &pod);
  auto wanted = [&](std::string_view name) { return !recommended || recommended(name); };

  for (const auto& usage : metrics) {
    auto it = by_name.find(usage.name);
    if (it == by_name.end()) continue;  // not the target's pod (or gone since the pod list)
    const PodInfo& pod = *it->second;
    ++stats.pods_with_metrics;
    stats.running_with_metrics += pod.running;
    // By name, as the history points are (see pod_key): a pod alive when the history was seeded
    // continues the per-pod state (its open memory window) its history points began.
    const std::uint64_t key = pod_key(pod.name);
    for (const auto& c : usage.containers) {
      // An init container's usage (a native sidecar's too) is not the spec container's.
      if (!wanted(c.name) || find_container(pod, c.name) == nullptr) continue;
      switch (aggregates[c.name].add_sample(options, key,
                                            {usage.timestamp, c.cpu_cores, c.memory_bytes})) {
        case SampleOutcome::kAdded:
          ++stats.samples_added;
          break;
        case SampleOutcome::kStale:
          ++stats.samples_stale;
          break;
        case SampleOutcome::kInvalid:
          ++stats.samples_invalid;
          break;
      }
    }
  }
  for (const auto& pod : owned) {
    for (const auto& kill : pod.oom_kills) {
      if (!wanted(kill.container)) continue;
      if (!oom_dedup.first_time(kill.pod_uid, kill.container, kill.restart_count)) continue;
      auto counted = aggregates[kill.container].record_oom(
          options, pod_key(pod.name), kill.finished_at, kill.memory_request_bytes);
      if (counted.ok()) {
        ++stats.oom_kills_counted;
      } else {
        stats.oom_errors.push_back("pod " + pod.name + " container " + kill.container + ": " +
                                   counted.error());
      }
    }
  }
  aggregates.shrink_to_fit();
  return stats;
}

}  // namespace vscaler::recommender
