// LimitRangeCache: every namespace's LimitRanges merged into the one `type: Container` item that
// bounds a container (recommender/limit_range.h), so that the admission hook and the reconciler
// cap a recommendation's request and proportional limit as LimitRanger will admit them, without
// an API call (the hook must not make one). The recommender already caps the published target;
// the limit, scaled with the request, is only known where the template is.
// LimitRangePoller keeps it current with one list of LimitRanges (few, small objects) every
// period: DESIGN.md grants limitranges "list" only, no watch, so a changed LimitRange is applied
// within a period (30 s by default), which is how often such a change matters; the scalers of a
// namespace whose limits changed are then reconciled (the poller's OnChange).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "kube/client.h"
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

/// Lists LimitRanges (in one namespace or all) into a LimitRangeCache: once at start(), then
/// every `period` on a thread of its own. A failed list keeps the cache as it was (logged).
class LimitRangePoller {
 public:
  /// Called on the poller's thread with the namespaces whose limits changed, after every poll
  /// but the first (at start every scaler is reconciled anyway).
  using OnChange = std::function<void(const std::vector<std::string>& namespaces)>;

  LimitRangePoller(kube::Client client, std::string ns, std::chrono::milliseconds period,
                   LimitRangeCache& cache, OnChange on_change = nullptr);
  /// Stops the thread if it runs.
  ~LimitRangePoller();
  LimitRangePoller(const LimitRangePoller&) = delete;
  LimitRangePoller& operator=(const LimitRangePoller&) = delete;

  /// Starts polling. Call once.
  void start();
  /// Stops and joins the thread; idempotent.
  void stop();
  /// One list into the cache now; false when the list failed (the cache is unchanged).
  bool poll_once();

 private:
  void run();

  kube::Client client_;
  std::string ns_;
  std::chrono::milliseconds period_;
  LimitRangeCache& cache_;
  OnChange on_change_;
  bool polled_ = false;  ///< a poll succeeded before (only the poller's thread, or before start)
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace vscaler::controller
