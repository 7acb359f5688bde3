// LimitRangeCache: every namespace's LimitRanges merged into the one `type: Container` item that
// bounds a container (recommender/limit_range.h), so that the admission hook and the reconciler
// cap a recommendation's request and proportional limit as LimitRanger will admit them, without
// an API call (the hook must not make one). The recommender already caps the published target;
// the limit, scaled with the request, is only known where the template is.
// A ListPoller (controller/list_poller.h) keeps it current with one list of LimitRanges (few,
// small objects) every period: DESIGN.md grants limitranges "list" only, no watch, so a changed
// LimitRange is applied within a period (30 s by default), which is how often such a change
// matters; the scalers of a namespace whose limits changed are then reconciled.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "recommender/apply.h"

namespace vscaler::controller {

/// Namespace -> its merged Container LimitRange item. Reads are lock-free snapshots: the map is
/// rebuilt whole (LimitRanges change rarely) and swapped in.
class LimitRangeCache {
 public:
  LimitRangeCache();

  /// The merged item of namespace `ns`, or null when no LimitRange there bounds cpu or memory.
  /// From any thread.
  std::shared_ptr<const recommender::LimitRangeItem> of(std::string_view ns) const;

  /// Replaces the whole cache with what `limit_ranges` (every stored LimitRange object) say.
  /// A namespace whose LimitRanges do not parse is left out (and counted in the result): its
  /// LimitRanger would refuse those pods anyway. Returns how many namespaces were left out.
  /// `changed`, when given, receives the namespaces whose merged item appeared, went away or
  /// differs from before: the ones whose scalers' plans may now differ.
  int rebuild(const std::vector<std::shared_ptr<const nlohmann::json>>& limit_ranges,
              std::vector<std::string>* changed = nullptr);

 private:
  using Map =
      std::map<std::string, std::shared_ptr<const recommender::LimitRangeItem>, std::less<>>;
  std::atomic<std::shared_ptr<const Map>> map_;
};

}  // namespace vscaler::controller
