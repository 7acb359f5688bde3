#include "controller/kube_api.h"

#include <chrono>

#include "controller/status.h"

namespace vscaler::controller {
namespace {

using nlohmann::json;
namespace resources = kube::resources;

constexpr const char* kPartialObjectMetadata =
    "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1";

DeploymentMeta meta_of(const json& object) {
  DeploymentMeta meta;
  auto found = object.find("metadata");
  if (found == object.end() || !found->is_object()) return meta;
  const json& metadata = *found;
  meta.name = metadata.value("name", "");
  meta.uid = metadata.value("uid", "");
  meta.generation = metadata.value("generation", int64_t{0});
  return meta;
}

}  // namespace

ApiResult KubeReconcileApi::get_deployment(const std::string& ns, const std::string& name,
                                           std::chrono::milliseconds timeout) {
  kube::GetOptions options;
  options.timeout = timeout;
  return client_.get(resources::kDeployments, ns, name, options);
}

ApiResult KubeReconcileApi::patch_deployment(const std::string& ns, const std::string& name,
                                             const json& patch) {
  kube::WriteOptions options;
  options.field_manager = kFieldManager;
  return client_.patch(resources::kDeployments, ns, name, kube::PatchType::kStrategicMerge, patch,
                       options);
}

ApiResult KubeReconcileApi::list_horizontal_pod_autoscalers(const std::string& ns,
                                                            std::chrono::milliseconds timeout) {
  kube::ListOptions options;
  options.timeout = timeout;
  options.limit = 100;
  auto listed = client_.list(resources::kHorizontalPodAutoscalers, ns, options);
  if (!listed.ok()) return kube::fail(std::move(listed).error());
  return json{{"items", std::move(listed->items)}};
}

ApiResult KubeReconcileApi::get_scaler(const std::string& ns, const std::string& name) {
  return client_.get(resources::kVerticalScalers, ns, name);
}

ApiResult KubeReconcileApi::patch_scaler_status(const std::string& ns, const std::string& name,
                                                const json& merge_patch) {
  kube::WriteOptions options;
  options.field_manager = kFieldManager;
  return client_.patch_status(resources::kVerticalScalers, ns, name, kube::PatchType::kMerge,
                              merge_patch, options);
}

void KubeReconcileApi::record_event(const api::Scaler& scaler, bool warning,
                                    const std::string& reason, const std::string& message) {
  // Queued, never written here: an Event must not hold up (or fail) the reconcile.
  if (events_ != nullptr) {
    events_->record(
        {scaler.ns, scaler.name, scaler.uid, scaler.resource_version, warning, reason, message});
  }
}

kube::Result<std::vector<DeploymentMeta>, kube::ApiError> KubeResyncApi::list_deployments(
    const std::string& ns, int& calls) {
  kube::ListOptions options;
  options.limit = 500;
  options.on_page = [&calls](const kube::ListPage&) { ++calls; };
  auto list = client_.list_metadata(resources::kDeployments, ns, options);
  if (!list.ok()) {
    ++calls;  // the failed request
    return kube::fail(std::move(list).error());
  }
  std::vector<DeploymentMeta> result;
  result.reserve(list->items.size());
  for (const json& item : list->items) result.push_back(meta_of(item));
  return result;
}

kube::Result<DeploymentMeta, kube::ApiError> KubeResyncApi::get_deployment(
    const std::string& ns, const std::string& name) {
  kube::HttpRequest request;
  request.target = resources::kDeployments.path(ns, name);
  request.accept = kPartialObjectMetadata;
  auto object = client_.call(request);
  if (!object.ok()) return kube::fail(std::move(object).error());
  return meta_of(*object);
}

}  // namespace vscaler::controller
