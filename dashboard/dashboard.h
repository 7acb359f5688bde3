// Dashboard: the live /dashboard page and /dashboard.json, from a snapshot of the scalers in
// memory (a function the caller hands in: no API call per view) and the History it samples on a
// timer of its own thread (and at each view), so charts cover the last hours on every replica.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
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

/// The pod templates of the workloads named (namespace, kind): what scalers in mode "Off" are
/// shown against (their status shows what would be applied). Called from the sampler thread
/// only, never from a page view; what it cannot read it leaves out.
using TemplateReader =
    std::function<api::TemplateResources(const std::set<std::pair<std::string, std::string>>&)>;

/// What the dashboard keeps and how often it looks.
struct DashboardOptions {
  HistoryOptions history;
  std::chrono::seconds sample_every{30};
  /// How often the templates of scalers in mode "Off" are listed again (sooner for a namespace
  /// and kind not listed yet): one list per namespace and kind holding such scalers.
  std::chrono::seconds templates_every{300};
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
  // Lists the templates of `scalers` in mode "Off" when due (see templates_every).
  void refresh_templates(const std::vector<std::shared_ptr<const api::Scaler>>& scalers);

  ScalerSource source_;
  DashboardOptions options_;
  TemplateReader read_templates_;
  std::mutex history_mutex_;
  History history_;
  ViewCache views_;             // under history_mutex_
  OffTemplates off_templates_;  // under history_mutex_
  // The sampler thread's own: what was listed last, and when.
  std::set<std::pair<std::string, std::string>> listed_;
  std::chrono::steady_clock::time_point listed_at_{};
  std::mutex thread_mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::thread sampler_;
};

}  // namespace vscaler::dashboard
