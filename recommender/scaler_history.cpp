// A scaler's recommender state across passes.
#include "recommender/scaler_history.h"

#include <algorithm>
#include <set>

namespace vscaler::recommender {

const char* to_string(ProvidedReason reason) {
  switch (reason) {
    case ProvidedReason::kRecommended:
      return "Recommended";
    case ProvidedReason::kNoPodsMatched:
      return "NoPodsMatched";
    case ProvidedReason::kNoMetrics:
      return "NoMetrics";
    case ProvidedReason::kInsufficientHistory:
      return "InsufficientHistory";
  }
  return "InsufficientHistory";
}

kube::Result<ScalerHistory> ScalerHistory::restore(const nlohmann::json& checkpoint_object,
                                                   std::string_view scaler_uid,
                                                   const AggregateOptions& options) {
  auto aggregates = decode_checkpoint_object(checkpoint_object, scaler_uid, options);
  if (!aggregates.ok()) return kube::fail(aggregates.error());
  ScalerHistory history;
  history.aggregates_ = std::move(aggregates).value();
  history.full_pass_seen_ = std::any_of(history.aggregates_.begin(), history.aggregates_.end(),
                                        [](const auto& entry) { return !entry.second.empty(); });
  history.history_wanted_ = checkpoint_wants_history(checkpoint_object);
  return history;
}

HistoryStats ScalerHistory::seed(const UsageHistory& history, const AggregateOptions& options,
                                 double samples_per_point,
                                 const std::function<bool(std::string_view)>& recommended) {
  HistoryStats stats = fold_history(aggregates_, history, options, samples_per_point, recommended);
  if (stats.points > 0) {
    ++revision_;
    full_pass_seen_ = true;
    seeded_before_metrics_ = true;
  }
  aggregates_.shrink_to_fit();
  return stats;
}

KeptBeyond ScalerHistory::keep_beyond(const ScalerHistory& replaced,
                                      const AggregateOptions& options) {
  KeptBeyond kept;
  for (const auto& [name, aggregate] : replaced.aggregates_) {
    if (ContainerAggregate* own = aggregates_.find(name)) {
      kept.memory_tails += own->add_memory_tail_of(options, aggregate) > 0 ? 1 : 0;
    } else if (aggregates_.emplace(name, aggregate)) {
      ++kept.containers;
    }
  }
  if (kept.memory_tails + kept.containers > 0) ++revision_;
  return kept;
}

PassStats ScalerHistory::fold(const std::vector<PodUsage>& metrics,
                              const std::vector<PodInfo>& owned, const AggregateOptions& options,
                              const std::function<bool(std::string_view)>& recommended,
                              std::optional<TimePoint> now) {
  PassStats stats = fold_pass(aggregates_, metrics, owned, oom_dedup_, options, recommended);
  if (now) {
    stats.aggregates_dropped = drop_stale(owned, options, *now);
    std::vector<std::uint64_t> live;
    live.reserve(owned.size());
    for (const auto& pod : owned) live.push_back(pod_key(pod.name));
    std::sort(live.begin(), live.end());
    // A pod gone changes the checkpoint (its open interval's peak is kept from now on).
    if (open_at_fold_ && open_at_fold_->live_pods != live) ++revision_;
    open_at_fold_ = OpenIntervals{*now, std::move(live)};
  }
  // A dropped aggregate changes the checkpoint too: it must not come back from it.
  if (stats.samples_added > 0 || stats.oom_kills_counted > 0 || stats.aggregates_dropped > 0) {
    ++revision_;
  }
  // VPA shares the per-pod minimums among the container names it holds a history for, mode Off
  // left out: one is made for every spec container of a matching pod as soon as the pod is seen
  // (samples or not), and a checkpoint's or a previous pod's stays until garbage-collected.
  // Without pods nothing new is known: the last share stays, unless an aggregate was dropped.
  if (!owned.empty() || stats.aggregates_dropped > 0) {
    auto wanted = [&](std::string_view name) { return !recommended || recommended(name); };
    std::set<std::string_view> sharing;
    for (const auto& pod : owned) {
      for (const auto& container : pod.containers) {
        if (wanted(container.name)) sharing.insert(container.name);
      }
    }
    for (const auto& [name, aggregate] : aggregates_) {
      if (wanted(name)) sharing.insert(name);
    }
    containers_sharing_minimums_ = std::max<int>(1, static_cast<int>(sharing.size()));
  }
  if (stats.pods == 0) {
    reason_ = ProvidedReason::kNoPodsMatched;
  } else if (stats.pods_with_metrics == 0) {
    // Days of the workload's history are worth publishing before the metrics API has its new
    // pods (a minute after they start); once live metrics came, their absence means an outage.
    reason_ = seeded_before_metrics_ && has_samples() ? ProvidedReason::kRecommended
                                                      : ProvidedReason::kNoMetrics;
  } else {
    seeded_before_metrics_ = false;
    // Every running pod: a Pending or an evicted one has no metrics to give (an evicted one's
    // last may still be served: they do not stand in for a new pod's).
    if (stats.running > 0 && stats.running_with_metrics == stats.running) full_pass_seen_ = true;
    reason_ = full_pass_seen_ && has_samples() ? ProvidedReason::kRecommended
                                               : ProvidedReason::kInsufficientHistory;
  }
  return stats;
}

std::size_t ScalerHistory::drop_stale(const std::vector<PodInfo>& owned,
                                      const AggregateOptions& options, TimePoint now) {
  // Every container of an owned pod contributes, whatever its mode: the target exists (else no
  // fold), which is VPA's "controller exists" for all its pods.
  std::set<std::string_view> contributive;
  for (const auto& pod : owned) {
    for (const auto& container : pod.containers) contributive.insert(container.name);
  }
  for (auto& [name, aggregate] : aggregates_) aggregate.note_held_at(now);
  return aggregates_.erase_if([&](const std::string& name, const ContainerAggregate& aggregate) {
    return (aggregate.empty() && !contributive.count(name)) || aggregate.expired(options, now);
  });
}

bool ScalerHistory::has_samples() const {
  return std::any_of(aggregates_.begin(), aggregates_.end(),
                     [](const auto& entry) { return !entry.second.empty(); });
}

std::vector<ContainerRecommendation> ScalerHistory::recommendations(
    const AggregateOptions& aggregate_options, const RecommendationOptions& options,
    const std::function<AllowedRange(const std::string&)>& range) const {
  std::vector<ContainerRecommendation> out;
  for (const auto& [name, aggregate] : aggregates_) {
    if (aggregate.empty()) continue;  // an OOM kill alone is no usage history
    out.push_back(recommend(
        name, estimate(aggregate, aggregate_options, options, containers_sharing_minimums_),
        range ? range(name) : AllowedRange{}, options.rounding));
  }
  return out;
}

std::size_t ScalerHistory::memory_bytes() const {
  return sizeof(*this) - sizeof(aggregates_) + aggregates_.memory_bytes() +
         (open_at_fold_ ? open_at_fold_->live_pods.capacity() * sizeof(std::uint64_t) : 0);
}

}  // namespace vscaler::recommender
