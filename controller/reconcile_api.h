// ReconcileApi: the API calls one reconcile makes, behind an interface so the reconciler's
// decisions can be unit-tested with a fake; KubeReconcileApi implements it on kube::Client.
#pragma once

#include <chrono>
#include <nlohmann/json.hpp>
#include <string>

#include "api/scaler.h"
#include "base/result.h"
#include "kube/errors.h"

namespace vscaler::controller {

/// A JSON object from the API server, or why the call failed.
using ApiResult = kube::Result<nlohmann::json, kube::ApiError>;

/// What the reconciler reads and writes. Every method is called from worker threads
/// concurrently; implementations must be thread-safe.
class ReconcileApi {
 public:
  virtual ~ReconcileApi() = default;
  /// GET the apps/v1 workload `target` in `ns` (read live: workloads are never cached), within
  /// `timeout` (zero: the client's request timeout).
  virtual ApiResult get_workload(const std::string& ns, const api::TargetRef& target,
                                 std::chrono::milliseconds timeout = {}) = 0;
  /// PATCH the workload with a strategic merge patch, ?fieldManager=vscaler; returns the stored
  /// object after every admission step.
  virtual ApiResult patch_workload(const std::string& ns, const api::TargetRef& target,
                                   const nlohmann::json& patch) = 0;
  /// GET the VerticalScaler ns/name (to re-read after a status conflict).
  virtual ApiResult get_scaler(const std::string& ns, const std::string& name) = 0;
  /// PATCH the scaler's /status subresource with a JSON merge patch that carries
  /// metadata.resourceVersion as a precondition (a stale one answers 409 Conflict).
  virtual ApiResult patch_scaler_status(const std::string& ns, const std::string& name,
                                        const nlohmann::json& merge_patch) = 0;
  /// LIST the pods of `ns` matching `label_selector` (a labelSelector query), as
  /// {"items": [...]} (the in-place modes' resize; the default, for fakes, lists none).
  virtual ApiResult list_pods(const std::string& /*ns*/, const std::string& /*label_selector*/) {
    return nlohmann::json{{"items", nlohmann::json::array()}};
  }
  /// PATCH the pod's `resize` subresource with a strategic merge patch of
  /// spec.containers[].resources, ?fieldManager=vscaler; returns the stored pod.
  virtual ApiResult resize_pod(const std::string& ns, const std::string& name,
                               const nlohmann::json& patch) {
    (void)ns, (void)name, (void)patch;
    kube::ApiError error;
    error.message = "pods/resize is not available here";
    return kube::fail(std::move(error));
  }
  /// POST a policy/v1 Eviction for the pod (PodDisruptionBudgets hold: 429 when one would be
  /// broken) whose uid is `uid` (empty: any): a pod by that name created since the list (a
  /// StatefulSet's replacement, already sized) is not evicted. The API server checks the uid
  /// when it deletes, after the budget: the answer is then 409 (a PodDisruptionBudget may have
  /// counted the disruption meanwhile, or said 429 first). Returns the API server's answer.
  virtual ApiResult evict_pod(const std::string& ns, const std::string& name,
                              const std::string& uid) {
    (void)ns, (void)name, (void)uid;
    kube::ApiError error;
    error.message = "pods/eviction is not available here";
    return kube::fail(std::move(error));
  }
  /// Records a Kubernetes Event on the scaler. Best effort: failures are logged, never returned.
  virtual void record_event(const api::Scaler& scaler, bool warning, const std::string& reason,
                            const std::string& message) = 0;
};

}  // namespace vscaler::controller
