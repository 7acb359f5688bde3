// QuotaCache: every namespace's ResourceQuota headroom (hard - used, the least over its quotas)
// for cpu and memory requests and limits, so that the pod admission hook caps the values it
// gives a new pod to what the namespace's ResourceQuota admission will accept, without an API
// call. ResourceQuota admission runs after the webhooks: a patched pod above the headroom would
// make the ReplicaSet's CREATE fail, where the unpatched pod would have run.
// A ListPoller keeps it current (one list of ResourceQuotas every period, "used" as the quota
// controller last wrote it); between two lists the hook's own admissions are reserved against
// the headroom, so a burst of creates does not spend the same headroom twice.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "recommender/apply.h"

namespace vscaler::controller {

/// Namespace -> the headroom its ResourceQuotas leave. Thread-safe.
class QuotaCache {
 public:
  /// What the namespace's quotas still admit, less what this process admitted since the last
  /// rebuild; nullopt when no quota there bounds cpu or memory. Only the bounded keys are set.
  std::optional<recommender::PodTotals> headroom(std::string_view ns) const;

  /// Records that a pod of `totals` was admitted in `ns` (spent until the next rebuild).
  void reserve(std::string_view ns, const recommender::PodTotals& totals);
  /// Records that resizes took `ns`'s headroom from `before` down to `after` (both as
  /// headroom() gave them; keys of `before` only).
  void reserve_spent(std::string_view ns, const recommender::PodTotals& before,
                     const recommender::PodTotals& after);

  /// Replaces the cache with what `quotas` (every listed ResourceQuota) say and forgets the
  /// reservations. A quota whose hard or used values do not parse is left out (and counted in
  /// the result). `changed`, when given, receives the namespaces whose headroom appeared, went
  /// away or differs from before.
  int rebuild(const std::vector<std::shared_ptr<const nlohmann::json>>& quotas,
              std::vector<std::string>* changed = nullptr);

 private:
  using Map = std::map<std::string, recommender::PodTotals, std::less<>>;
  mutable std::mutex mutex_;
  Map headroom_;  ///< from the last rebuild
  Map reserved_;  ///< admitted since
};

/// The ResourceQuota keys that bound a pod's cpu/memory ("cpu" and "requests.cpu" both bound the
/// requests) read from one quota's `status`: hard - used, at least zero. False when a value
/// does not parse.
bool quota_headroom(const nlohmann::json& quota, recommender::PodTotals& out);

}  // namespace vscaler::controller
