// Dashboard: the live /dashboard page and /dashboard.json, from a snapshot of the scalers in
// memory (a function the caller hands in: no API call per view) and the History it samples on a
// timer of its own thread (and at each view), so charts cover the last hours on every replica.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "api/resources.h"
#include "api/scaler.h"
#include "dashboard/history.h"
#include "dashboard/model.h"

namespace vscaler::dashboard {

/// Every scaler the operator holds now (e.g. ScalerStore::snapshot); called from page views and
/// the sampler thread, so it must be thread-safe.
using ScalerSource = std::function<std::vector<std::shared_ptr<const api::Scaler>>()>;

/// Adds to `out` the pod templates of the workloads of `kind` in namespace `ns`: what scalers in
/// mode "Off" are shown against (their status shows what would be applied). False when they
/// could not be listed whole (the templates listed before are kept, and it is asked again at the
/// next sample). Called from the sampler thread only, never from a page view.
using TemplateReader = std::function<bool(const std::string& ns, const std::string& kind,
                                          api::TemplateResources& out)>;

/// What the dashboard keeps and how often it looks.
struct DashboardOptions {
  HistoryOptions history;
  std::chrono::milliseconds sample_every{30'000};
  /// How often the templates of scalers in mode "Off" are listed again, one list per namespace
  /// and kind holding such scalers; a namespace and kind not listed yet is listed at the next
  /// sample. Only while the dashboard is looked at: a page view within the last templates_every
  /// (a view after a quiet spell wakes the sampler), so an unwatched replica lists nothing.
  std::chrono::seconds templates_every{300};
  /// How soon a (namespace, kind) whose list failed is listed again.
  std::chrono::milliseconds failed_templates_retry{60'000};
};

/// The pages, and the sampler that feeds their history. Thread-safe.
class Dashboard {
 public:
  /// `templates` (optional) reads the templates scalers in mode "Off" are shown against;
  /// without it their requests and limits are shown as unknown.
  explicit Dashboard(ScalerSource source, DashboardOptions options = {},
                     TemplateReader templates = nullptr);
  /// Stops the sampler.
  ~Dashboard();
  Dashboard(const Dashboard&) = delete;
  Dashboard& operator=(const Dashboard&) = delete;

  /// Starts the sampler thread (idempotent).
  void start();
  /// Stops and joins it (idempotent).
  void stop();

  /// The HTML page; `only_namespace` non-empty shows that namespace alone.
  std::string html(const std::string& only_namespace = "");
  /// The JSON twin.
  std::string json(const std::string& only_namespace = "");
  /// The model as of now (the sampler's history folded with a fresh snapshot).
  Model model();

 private:
  Model model_at(std::int64_t now);
  void sample_loop();
  // Lists the templates of `scalers` in mode "Off" that are due (see templates_every).
  void refresh_templates(const std::vector<std::shared_ptr<const api::Scaler>>& scalers);
  // Notes a page view; after a quiet spell it wakes the sampler to list templates.
  void viewed();
  bool stopping();

  ScalerSource source_;
  DashboardOptions options_;
  TemplateReader read_templates_;
  std::mutex history_mutex_;
  History history_;
  ViewCache views_;             // under history_mutex_
  OffTemplates off_templates_;  // under history_mutex_
  // The sampler thread's own: when each (namespace, kind) is due to be listed next.
  std::map<std::pair<std::string, std::string>, std::chrono::steady_clock::time_point> due_at_;
  std::mutex thread_mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;                                           // under thread_mutex_
  bool wake_requested_ = false;                                     // under thread_mutex_
  std::optional<std::chrono::steady_clock::time_point> viewed_at_;  // under thread_mutex_
  std::thread sampler_;
};

}  // namespace vscaler::dashboard
