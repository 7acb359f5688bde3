// DeploymentHandler: the workload admission hook (any supported kind), see the header.
#include "webhook/deployment_handler.h"

#include "api/resources.h"
#include "base/log.h"
#include "kube/object_meta.h"
#include "kube/workloads.h"

namespace vscaler::webhook {
namespace {

using nlohmann::json;

}  // namespace

DeploymentHandler::DeploymentHandler(const controller::ScalerStore& store,
                                     controller::HintSink& hints, metrics::Counter& enqueued)
    : store_(store), hints_(hints), enqueued_(enqueued) {}

const Projection& DeploymentHandler::projection() {
  static const Projection projection = *Projection::parse({
      "/metadata/name",
      "/metadata/namespace",
      "/metadata/uid",
      "/metadata/generation",
      "/metadata/deletionTimestamp",
      "/spec/template/spec/containers/*/name",
      "/spec/template/spec/containers/*/resources",
  });
  return projection;
}

AdmissionResponse DeploymentHandler::handle(const AdmissionRequest& request) {
  // The kind from the review's resource: every supported kind on either path (an older
  // configuration sends Deployments only; a newer one sends the others to /mutate-workloads).
  std::string_view kind = kube::workload_kind_of(request.resource.group, request.resource.resource);
  if (kind.empty() || !request.sub_resource.empty()) {
    return AdmissionResponse::allow();  // registered for workloads only; anything else is a
                                        // misconfiguration we must not break
  }
  // Nothing is trusted from the review beyond naming the workload: the worker reads it live.
  // On DELETE (also in a deletecollection, where request.name is empty) only oldObject has it.
  const json& named = request.operation == Operation::kDelete ? request.old_object : request.object;
  std::string name = kube::meta_string(named, "name");
  if (name.empty()) return AdmissionResponse::allow();  // a generateName CREATE: no scaler yet
  std::string ns = kube::meta_string(named, "namespace");
  if (ns.empty()) ns = request.namespace_name;

  auto scalers = store_.targeting(ns, kind, name);
  const api::Scaler* active = api::select_active(scalers);
  if (active == nullptr) return AdmissionResponse::allow();

  controller::Expectation hint;
  switch (request.operation) {
    case Operation::kCreate:
      hint.must_exist = true;
      break;
    case Operation::kUpdate:
      hint.min_generation_exclusive = kube::meta_generation(request.old_object);
      break;
    case Operation::kDelete:
      hint.gone_uid = kube::meta_string(request.old_object, "uid");
      break;
    case Operation::kConnect:
      return AdmissionResponse::allow();
  }
  AdmissionResponse response;
  bool auto_patch =
      active->update_mode == api::UpdateMode::kAuto && request.operation != Operation::kDelete;
  if (auto_patch) {
    api::ResourcePlan plan = api::plan_resources(*active, request.object);
    if (!plan.invalid.empty()) {
      // A patch yielding an invalid object would make the API server reject the user's write.
      response.warnings.push_back("vscaler: VerticalScaler " + active->name +
                                  " not applied: " + plan.invalid);
    } else {
      if (plan.changed()) response.patch = api::admission_json_patch(plan);
      for (const auto& container : plan.containers) {
        for (const auto& overridden : container.overridden) {
          response.warnings.push_back("vscaler: VerticalScaler " + active->name + " overrides " +
                                      container.name + " " + overridden);
        }
      }
      // The write carries the declared resources whenever it lands, and a reset undone here
      // may leave it a no-op that never raises the generation: waiting for it would only poll.
      hint.min_generation_exclusive = 0;
    }
  }
  if (!request.dry_run) {
    hints_.hint(active->key(), hint);
    enqueued_.inc();
  }
  return response;
}

}  // namespace vscaler::webhook
