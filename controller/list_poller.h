// ListPoller: one list of a namespaced resource (in one namespace or all) every period, handed
// whole to a cache that rebuilds itself from it. For small, rarely changing objects the design
// grants "list" only (LimitRanges, ResourceQuotas): a change is applied within a period, and the
// namespaces whose cached value changed are reported so their scalers are reconciled.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "kube/client.h"

namespace vscaler::controller {

/// Lists `resource` into a cache: once at start(), then every `period` on a thread of its own.
/// A failed list keeps the cache as it was (logged).
class ListPoller {
 public:
  /// Rebuilds a cache from every listed object; fills `changed` with the namespaces whose value
  /// changed and returns how many namespaces were left out as unreadable.
  using Rebuild = std::function<int(const std::vector<std::shared_ptr<const nlohmann::json>>&,
                                    std::vector<std::string>* changed)>;
  /// Called on the poller's thread with the namespaces whose value changed, after every poll
  /// but the first (at start every scaler is reconciled anyway).
  using OnChange = std::function<void(const std::vector<std::string>& namespaces)>;

  /// `what` names the objects in log lines ("LimitRanges").
  ListPoller(kube::Client client, kube::ResourceType resource, std::string what, std::string ns,
             std::chrono::milliseconds period, Rebuild rebuild, OnChange on_change = nullptr);
  /// Stops the thread if it runs.
  ~ListPoller();
  ListPoller(const ListPoller&) = delete;
  ListPoller& operator=(const ListPoller&) = delete;

  /// Starts polling. Call once.
  void start();
  /// Stops and joins the thread; idempotent.
  void stop();
  /// One list into the cache now; false when the list failed (the cache is unchanged).
  bool poll_once();

 private:
  void run();

  kube::Client client_;
  kube::ResourceType resource_;
  std::string what_;
  std::string ns_;
  std::chrono::milliseconds period_;
  Rebuild rebuild_;
  OnChange on_change_;
  bool polled_ = false;  ///< a poll succeeded before (only the poller's thread, or before start)
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace vscaler::controller
