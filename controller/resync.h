// Resync: the periodic safety net for hints that never came (webhook down, failurePolicy Ignore,
// operator restart). It reads only workload metadata, of the kinds the scalers of a namespace
// target, in the namespaces that hold scalers, so its cost grows with the number of scalers and
// not with the workloads of the cluster, and it enqueues (at low priority) only the scalers
// whose workload changed or vanished since the operator last verified it.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/result.h"
#include "controller/scaler_store.h"
#include "controller/verified_state.h"
#include "controller/work_queue.h"
#include "kube/errors.h"

namespace vscaler::controller {

/// What the resync needs to know of one workload.
struct WorkloadMeta {
  std::string name;
  std::string uid;
  int64_t generation = 0;
};

/// The reads a resync makes; implemented on kube::Client, faked in unit tests.
class ResyncApi {
 public:
  virtual ~ResyncApi() = default;
  /// Every workload of `kind` (Deployment, StatefulSet, DaemonSet) in `ns`, metadata only,
  /// paginated. An error means the list is incomplete (and proves nothing about absent
  /// workloads). `calls` is incremented per API request.
  virtual kube::Result<std::vector<WorkloadMeta>, kube::ApiError> list_workloads(
      const std::string& ns, const std::string& kind, int& calls) = 0;
  /// One workload's metadata; NotFound when it does not exist.
  virtual kube::Result<WorkloadMeta, kube::ApiError> get_workload(const std::string& ns,
                                                                  const std::string& kind,
                                                                  const std::string& name) = 0;
};

/// Counters of the resync (vscaler_resync_enqueued_total).
class ResyncMetrics {
 public:
  virtual ~ResyncMetrics() = default;
  virtual void on_enqueued(std::size_t keys) { (void)keys; }
};

/// What one pass did, for logs, tests and benchmarks.
struct ResyncStats {
  std::size_t scalers = 0;     ///< active scalers considered
  std::size_t namespaces = 0;  ///< namespaces read (once per kind read in it)
  int api_calls = 0;           ///< API requests made
  std::size_t enqueued = 0;    ///< keys enqueued
  std::size_t skipped = 0;     ///< scalers not judged because a read failed
  std::chrono::milliseconds wall{0};
};

/// Runs resync passes; run() loops until stop().
class Resyncer {
 public:
  /// `concurrency`: how many namespace/kind reads run at once (threads of the pass; `api` must
  /// then be thread-safe). 1 reads them one after the other on the calling thread.
  Resyncer(ResyncApi& api, const ScalerStore& store, const VerifiedState& verified,
           WorkQueue& queue, ResyncMetrics& metrics, int concurrency = 1);

  /// With several replicas (leader election on), the pod hook's hints about a scaler's pods (a
  /// pod admitted boosted, or without all its values) reach only the replica that served them,
  /// perhaps not the leader, and move no workload's generation: then each pass also enqueues,
  /// without reading anything, every active scaler in an in-place mode or with a startup boost,
  /// so a boost admitted anywhere ends and a capped pod is resized within a period. Off (one
  /// replica, every hint reaches it): only what changed is visited.
  void set_visit_pod_scalers(bool visit) { visit_pod_scalers_ = visit; }

  /// One pass: read, compare with what was verified, enqueue what changed or vanished (and,
  /// see set_visit_pod_scalers, the scalers whose work lies in their pods).
  ResyncStats run_once();
  /// Calls run_once() every `period` (jittered by up to +-10%) until stop(). When `may_start`
  /// is set, each pass asks it first and is skipped when it says no (not the leader now).
  /// `before_pass`, when set, runs first in each pass that starts (the namespace opt-in).
  void run(std::chrono::milliseconds period, const std::function<bool()>& may_start = {},
           const std::function<void()>& before_pass = {});
  /// Makes run() return (from any thread).
  void stop();
  /// Ends run()'s current wait early, so the next pass starts now (a replica that just became
  /// leader resyncs at once instead of a period later). From any thread.
  void wake();

 private:
  ResyncApi& api_;
  const ScalerStore& store_;
  const VerifiedState& verified_;
  WorkQueue& queue_;
  ResyncMetrics& metrics_;
  int concurrency_;
  std::atomic<bool> visit_pod_scalers_{false};
  /// Workloads seen in each "namespace/kind"'s last complete list: when a namespace holds few
  /// scalers of a kind among many such workloads, one metadata GET per scaler is cheaper than
  /// listing them.
  std::unordered_map<std::string, std::size_t> last_list_size_;
  std::mutex stop_mutex_;
  std::condition_variable stop_cv_;
  bool stopping_ = false;
  bool woken_ = false;
};

}  // namespace vscaler::controller
