// PodHandler: pod -> workload -> active scaler, then the workload hook's values on the pod's spec.
#include "webhook/pod_handler.h"

#include "api/resources.h"
#include "kube/object_meta.h"
#include "kube/workloads.h"
#include "recommender/desired.h"

namespace vscaler::webhook {

PodHandler::PodHandler(const controller::ScalerStore& store, metrics::CounterFamily& results,
                       const controller::LimitRangeCache* limit_ranges)
    : store_(store),
      patched_(results.with({"patched"})),
      unchanged_(results.with({"unchanged"})),
      no_scaler_(results.with({"no_scaler"})),
      limit_ranges_(limit_ranges) {}

const Projection& PodHandler::projection() {
  static const Projection projection = *Projection::parse({
      "/metadata/name",
      "/metadata/generateName",
      "/metadata/namespace",
      "/metadata/labels",
      "/metadata/ownerReferences",
      "/spec/containers/*/name",
      "/spec/containers/*/resources",
      "/spec/initContainers/*/name",
      "/spec/initContainers/*/restartPolicy",
      "/spec/initContainers/*/resources",
      "/spec/resources",
  });
  return projection;
}

AdmissionResponse PodHandler::handle(const AdmissionRequest& request) {
  // Registered for pod CREATEs only; anything else is a misconfiguration we must not break.
  if (request.operation != Operation::kCreate || !request.resource.group.empty() ||
      request.resource.resource != "pods" || !request.sub_resource.empty()) {
    return AdmissionResponse::allow();
  }
  kube::PodWorkload workload = kube::workload_of_pod(request.object);
  std::string ns = request.namespace_name;
  if (ns.empty()) ns = kube::meta_string(request.object, "namespace");
  const api::Scaler* active = nullptr;
  std::vector<std::shared_ptr<const api::Scaler>> scalers;
  if (!workload.kind.empty() && !ns.empty()) {
    scalers = store_.targeting(ns, workload.kind, workload.name);
    active = api::select_active(scalers);
  }
  if (active == nullptr) {
    no_scaler_.inc();
    return AdmissionResponse::allow();
  }
  // In the other modes the template carries the values (or, in Initial and Off, deliberately
  // does not yet): its pods are what it says.
  if (!api::in_place(active->update_mode)) {
    unchanged_.inc();
    return AdmissionResponse::allow();
  }
  auto limit_range = limit_ranges_ ? limit_ranges_->of(active->ns) : nullptr;
  auto recommendations = recommender::recommendations_of(*active);
  auto containers = recommender::recommended_containers(*active, request.object, recommendations,
                                                        limit_range.get());
  api::ResourcePlan plan = api::plan_resources(*active, request.object, &containers.desired);
  AdmissionResponse response;
  if (!plan.invalid.empty()) {
    // A patch yielding an invalid pod would make the API server refuse the ReplicaSet's create.
    response.warnings.push_back("vscaler: VerticalScaler " + active->name +
                                " not applied to this pod: " + plan.invalid);
    unchanged_.inc();
    return response;
  }
  if (!plan.changed()) {
    unchanged_.inc();
    return response;
  }
  response.patch = api::admission_json_patch(plan);
  patched_.inc();
  return response;
}

}  // namespace vscaler::webhook
