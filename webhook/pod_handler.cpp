// PodHandler: pod -> workload -> active scaler, then the workload hook's values on the pod's spec.
#include "webhook/pod_handler.h"

#include <optional>

#include "api/resources.h"
#include "kube/object_meta.h"
#include "kube/workloads.h"
#include "recommender/desired.h"

namespace vscaler::webhook {

PodHandler::PodHandler(const controller::ScalerStore& store, metrics::CounterFamily& results,
                       const controller::LimitRangeCache* limit_ranges,
                       controller::QuotaCache* quotas, controller::HintSink* hints)
    : store_(store),
      patched_(results.with({"patched"})),
      unchanged_(results.with({"unchanged"})),
      no_scaler_(results.with({"no_scaler"})),
      limit_ranges_(limit_ranges),
      quotas_(quotas),
      hints_(hints) {}

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
  std::string object_ns = kube::meta_string(request.object, "namespace");
  // The API server sends both equal; a review where they differ is forged (anyone in the cluster
  // reaches the port) and must not act on another namespace's scaler.
  if (!ns.empty() && !object_ns.empty() && ns != object_ns) return AdmissionResponse::allow();
  if (ns.empty()) ns = object_ns;
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
  // ResourceQuota admission runs after this hook: the pod's sums stay within the headroom, or
  // within what the pod asked for itself where that is more (it would not fit either way).
  std::optional<recommender::PodTotals> budget =
      quotas_ ? quotas_->headroom(active->ns) : std::nullopt;
  const recommender::PodTotals own = recommender::pod_totals_of(request.object);
  if (budget) *budget = recommender::at_least(*budget, own);
  // The containers' share of it: the sidecars run beside them and count too.
  std::optional<recommender::PodTotals> containers_budget;
  if (budget) {
    containers_budget =
        recommender::minus_bounded(*budget, recommender::shared_with_containers(request.object));
  }
  auto containers = recommender::recommended_containers(
      *active, request.object, recommendations, limit_range.get(),
      containers_budget ? &*containers_budget : nullptr);
  api::ResourcePlan plan = api::plan_resources(*active, request.object, &containers.desired);
  AdmissionResponse response;
  // A pod admitted without all its values is resized once it runs: the reconciler waits for it.
  auto resize_later = [&] {
    if (hints_ != nullptr) hints_->hint(active->key(), controller::Expectation{});
  };
  auto answer_unchanged = [&](std::string warning) {
    if (!warning.empty()) {
      response.warnings.push_back("vscaler: VerticalScaler " + active->name +
                                  " not applied to this pod: " + warning);
    }
    if (!warning.empty() || containers.budget_capped) resize_later();
    if (quotas_ != nullptr) quotas_->reserve(active->ns, own);
    unchanged_.inc();
    return response;
  };
  // A patch yielding an invalid pod would make the API server refuse the ReplicaSet's create.
  if (!plan.invalid.empty()) return answer_unchanged(plan.invalid);
  if (!plan.changed()) return answer_unchanged("");
  // Fixed values are the scaler's as written: one the quota cannot hold is not applied (the pod
  // is created as its template says) rather than refused.
  const recommender::PodTotals totals = recommender::pod_totals_after(request.object, plan);
  if (budget) {
    if (std::string over = recommender::exceeds(totals, *budget); !over.empty()) {
      return answer_unchanged("the namespace's ResourceQuota has room for less: " + over);
    }
  }
  if (quotas_ != nullptr) quotas_->reserve(active->ns, totals);
  if (containers.budget_capped) resize_later();
  response.patch = api::admission_json_patch(plan);
  patched_.inc();
  return response;
}

}  // namespace vscaler::webhook
