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
#include <string>
#include <thread>
#include <vector>

#include "api/scaler.h"
#include "dashboard/history.h"
#include "dashboard/model.h"

namespace vscaler::dashboard {

/// Every scaler the operator holds now (e.g. ScalerStore::snapshot); called from page views and
/// the sampler thread, so it must be thread-safe.
using ScalerSource = std::function<std::vector<std::shared_ptr<const api::Scaler>>()>;

/// What the dashboard keeps and how often it looks.
struct DashboardOptions {
  HistoryOptions history;
  std::chrono::seconds sample_every{30};
};

/// The pages, and the sampler that feeds their history. Thread-safe.
class Dashboard {
 public:
  explicit Dashboard(ScalerSource source, DashboardOptions options = {});
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

  ScalerSource source_;
  DashboardOptions options_;
  std::mutex history_mutex_;
  History history_;
  ViewCache views_;  // under history_mutex_
  std::mutex thread_mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::thread sampler_;
};

}  // namespace vscaler::dashboard
