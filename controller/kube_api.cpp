#include "controller/kube_api.h"

#include <atomic>
#include <chrono>

#include "base/log.h"
#include "base/time.h"
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

ApiResult KubeReconcileApi::get_deployment(const std::string& ns, const std::string& name) {
  return client_.get(resources::kDeployments, ns, name);
}

ApiResult KubeReconcileApi::patch_deployment(const std::string& ns, const std::string& name,
                                             const json& patch) {
  kube::WriteOptions options;
  options.field_manager = kFieldManager;
  return client_.patch(resources::kDeployments, ns, name, kube::PatchType::kStrategicMerge, patch,
                       options);
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
  static std::atomic<uint64_t> sequence{0};
  auto now = base::rfc3339_now();
  auto nanos = std::chrono::system_clock::now().time_since_epoch().count();
  char suffix[40];
  std::snprintf(suffix, sizeof suffix, ".%llx%llx", static_cast<unsigned long long>(nanos),
                static_cast<unsigned long long>(sequence.fetch_add(1)));
  json event = {{"apiVersion", "v1"},
                {"kind", "Event"},
                {"metadata", {{"name", scaler.name + suffix}, {"namespace", scaler.ns}}},
                {"involvedObject",
                 {{"apiVersion", "scaling.vscaler.dev/v1beta1"},
                  {"kind", "VerticalScaler"},
                  {"name", scaler.name},
                  {"namespace", scaler.ns},
                  {"uid", scaler.uid},
                  {"resourceVersion", scaler.resource_version}}},
                {"reason", reason},
                {"message", message},
                {"type", warning ? "Warning" : "Normal"},
                {"source", {{"component", "vscaler"}}},
                {"reportingComponent", "vscaler"},
                {"firstTimestamp", now},
                {"lastTimestamp", now},
                {"count", 1}};
  auto created = client_.create(resources::kEvents, scaler.ns, event);
  if (!created.ok()) {
    // Best effort by design: an Event refused (quota, RBAC) never fails a reconcile.
    log::warn(
        "events", "recording an event failed",
        {{"scaler", scaler.key()}, {"reason", reason}, {"error", created.error().to_string()}});
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
