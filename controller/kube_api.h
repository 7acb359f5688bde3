// The reconciler's and the resync's API calls implemented on kube::Client: the production side
// of ReconcileApi and ResyncApi.
#pragma once

#include "controller/event_recorder.h"
#include "controller/namespace_opt_in.h"
#include "controller/reconcile_api.h"
#include "controller/resync.h"
#include "kube/client.h"

namespace vscaler::controller {

/// The field manager every vscaler write records (DESIGN.md: names).
inline constexpr const char* kFieldManager = "vscaler";

/// ReconcileApi over the API server.
class KubeReconcileApi : public ReconcileApi {
 public:
  /// `events` posts the Events (asynchronously); null: none are recorded (the validating hook's
  /// reads need none).
  explicit KubeReconcileApi(kube::Client client, EventRecorder* events = nullptr)
      : client_(std::move(client)), events_(events) {}
  ApiResult get_workload(const std::string& ns, const api::TargetRef& target,
                         std::chrono::milliseconds timeout = {}) override;
  ApiResult patch_workload(const std::string& ns, const api::TargetRef& target,
                           const nlohmann::json& patch) override;
  ApiResult get_scaler(const std::string& ns, const std::string& name) override;
  ApiResult patch_scaler_status(const std::string& ns, const std::string& name,
                                const nlohmann::json& merge_patch) override;
  ApiResult list_pods(const std::string& ns, const std::string& label_selector) override;
  ApiResult resize_pod(const std::string& ns, const std::string& name,
                       const nlohmann::json& patch) override;
  ApiResult evict_pod(const std::string& ns, const std::string& name,
                      const std::string& uid) override;
  void record_event(const api::Scaler& scaler, bool warning, const std::string& reason,
                    const std::string& message) override;

 private:
  kube::Client client_;
  EventRecorder* events_;
};

/// ResyncApi over the API server: metadata-only reads (PartialObjectMetadata), paginated.
class KubeResyncApi : public ResyncApi {
 public:
  /// Items per page of list_workloads: client-go's pager's 500, the recommender's too.
  static constexpr int kDefaultPageLimit = 500;
  /// `page_limit` > 0; tests page small lists with a small one.
  explicit KubeResyncApi(kube::Client client, int page_limit = kDefaultPageLimit)
      : client_(std::move(client)), page_limit_(page_limit) {}
  kube::Result<std::vector<WorkloadMeta>, kube::ApiError> list_workloads(const std::string& ns,
                                                                         const std::string& kind,
                                                                         int& calls) override;
  kube::Result<WorkloadMeta, kube::ApiError> get_workload(const std::string& ns,
                                                          const std::string& kind,
                                                          const std::string& name) override;

 private:
  kube::Client client_;
  int page_limit_;
};

/// OptInApi over the API server: the labelled namespaces' names (metadata only), and made
/// scalers created and deleted (field manager vscaler).
class KubeOptInApi : public OptInApi {
 public:
  explicit KubeOptInApi(kube::Client client) : client_(std::move(client)) {}
  kube::Result<std::vector<LabelledNamespace>, kube::ApiError> labelled_namespaces() override;
  kube::Result<kube::Unit, kube::ApiError> create_scaler(const nlohmann::json& object) override;
  kube::Result<kube::Unit, kube::ApiError> delete_scaler(const std::string& ns,
                                                         const std::string& name,
                                                         const std::string& uid) override;

 private:
  kube::Client client_;
};

}  // namespace vscaler::controller
