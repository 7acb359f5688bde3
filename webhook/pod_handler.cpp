// PodHandler: pod -> workload -> active scaler, then the workload hook's values on the pod's spec.
#include "webhook/pod_handler.h"

#include <optional>

#include "api/resources.h"
#include "api/startup_boost.h"
#include "kube/object_meta.h"
#include "kube/workloads.h"
#include "recommender/desired.h"
#include "recommender/json_fields.h"

namespace vscaler::webhook {
namespace {

/// kAdmittedAnnotation's value for a pod counted for `totals` by scaler `scaler`.
std::string admitted_value(const std::string& scaler, const recommender::PodTotals& totals) {
  nlohmann::json value = {{"scaler", scaler}};
  for (bool limits : {false, true}) {
    const recommender::ResourceMap& map = limits ? totals.limits : totals.requests;
    if (map.empty()) continue;
    nlohmann::json& section = value[limits ? "limits" : "requests"];
    for (const auto& [resource, quantity] : map) section[resource] = quantity.to_string();
  }
  return value.dump();
}

/// What a pod's kAdmittedAnnotation says it was counted for by `scaler`; nullopt when it has
/// none, one of another scaler, or one that does not read (then the pod is counted whole, the
/// cautious side).
std::optional<recommender::PodTotals> admitted_totals(const nlohmann::json& pod,
                                                      const std::string& scaler) {
  const nlohmann::json* text = kube::find_path(pod, {"metadata", "annotations"});
  if (text == nullptr || !text->is_object()) return std::nullopt;
  auto found = text->find(kAdmittedAnnotation);
  if (found == text->end() || !found->is_string()) return std::nullopt;
  const nlohmann::json value =
      nlohmann::json::parse(found->get_ref<const std::string&>(), nullptr, false);
  if (!value.is_object() || value.value("scaler", "") != scaler) return std::nullopt;
  auto requests = recommender::resource_list(recommender::child(value, "requests"), "requests");
  auto limits = recommender::resource_list(recommender::child(value, "limits"), "limits");
  if (!requests.ok() || !limits.ok()) return std::nullopt;
  recommender::PodTotals totals{std::move(*requests), std::move(*limits)};
  return totals;
}

}  // namespace

PodHandler::PodHandler(const controller::ScalerStore& store, metrics::CounterFamily& results,
                       const controller::LimitRangeCache* limit_ranges,
                       controller::QuotaCache* quotas, controller::HintSink* hints,
                       metrics::CounterFamily* boosts, bool resize_supported)
    : store_(store),
      patched_(results.with({"patched"})),
      unchanged_(results.with({"unchanged"})),
      no_scaler_(results.with({"no_scaler"})),
      limit_ranges_(limit_ranges),
      quotas_(quotas),
      hints_(hints),
      boosts_(boosts),
      resize_supported_(resize_supported) {}

const Projection& PodHandler::projection() {
  static const Projection projection = *Projection::parse({
      "/metadata/name",
      "/metadata/generateName",
      "/metadata/namespace",
      "/metadata/labels",
      "/metadata/ownerReferences",
      "/metadata/annotations",
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
  const std::string& ns = request.namespace_name;
  std::string object_ns = kube::meta_string(request.object, "namespace");
  // The API server always names a pod's namespace in the request, and sends the object's equal
  // to it (or empty); a review without it, or where they differ, is forged (anyone in the
  // cluster reaches the port) and must not act on any namespace's scaler.
  if (ns.empty() || (!object_ns.empty() && ns != object_ns)) return AdmissionResponse::allow();
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
  // Called again for the same pod (reinvocationPolicy IfNeeded, after a later webhook such as a
  // sidecar injector changed it): counted in the results and against the quota the first time.
  // The API server gives the second call a new uid and the pod no name yet: only the pod's own
  // marker tells. One that claims more than the pod now has is not believed (a copy, or a
  // forgery that would have the pod go uncounted).
  const recommender::PodTotals own = recommender::pod_totals_of(request.object);
  std::optional<recommender::PodTotals> admitted_before =
      admitted_totals(request.object, active->name);
  if (admitted_before && !recommender::exceeds(*admitted_before, own).empty()) {
    admitted_before.reset();
  }
  AdmissionResponse response;
  // A dry run (`--dry-run=server`) gets the same answer and changes nothing: no headroom taken,
  // no hint, no boost counted (the hook is declared sideEffects: None).
  const bool effects = !request.dry_run;
  // Counts the pod's totals against the quota once (on a second call only what it grew by since)
  // and marks it, adding to `patch` (its resource operations) the marker and `annotations`, in one
  // operation when the pod has none (a second "add" of /metadata/annotations would replace the
  // first).
  auto reserve_and_mark = [&](const recommender::PodTotals& totals, nlohmann::json& patch,
                              std::vector<std::pair<std::string_view, std::string>> annotations) {
    const recommender::PodTotals counted =
        admitted_before ? recommender::at_least(totals, *admitted_before) : totals;
    if (effects && quotas_ != nullptr) {
      quotas_->reserve(active->ns, admitted_before
                                       ? recommender::minus_bounded(totals, *admitted_before)
                                       : totals);
    }
    std::string marker = admitted_value(active->name, counted);
    if (!admitted_before || marker != admitted_value(active->name, *admitted_before)) {
      annotations.emplace_back(kAdmittedAnnotation, std::move(marker));
    }
    if (annotations.empty()) return;
    if (patch.is_null()) patch = nlohmann::json::array();
    for (auto& op : kube::add_annotations_patch(request.object, annotations)) {
      patch.push_back(std::move(op));
    }
  };
  // Results are counted once per pod, not again for a second call.
  auto count = [&](metrics::Counter& result) {
    if (!admitted_before) result.inc();
  };
  // A pod admitted once already (a re-invoked webhook, or a copy of a boosted pod): boosted
  // twice, its base would be lost. What it grew by since is still counted.
  if (api::has_boost_annotation(request.object)) {
    reserve_and_mark(own, response.patch, {});
    count(unchanged_);
    return response;
  }
  const bool in_place = resize_supported_ && api::in_place(active->update_mode);
  const bool boosting = resize_supported_ && active->boosts();
  // In the other modes the template carries the values (or, in Initial and Off, deliberately
  // does not yet): its pods are what it says, and only a startup boost changes them.
  if (!in_place && !boosting) {
    count(unchanged_);
    return AdmissionResponse::allow();
  }
  auto limit_range = limit_ranges_ ? limit_ranges_->of(active->ns) : nullptr;
  // ResourceQuota admission runs after this hook: the pod's sums stay within the headroom, or
  // within what the pod asked for itself where that is more (it would not fit either way).
  const std::optional<recommender::PodTotals> headroom =
      quotas_ ? quotas_->headroom(active->ns) : std::nullopt;
  std::optional<recommender::PodTotals> budget = headroom;
  if (budget) *budget = recommender::at_least(*budget, own);
  bool budget_capped = false;
  api::ResourcePlan plan;
  if (in_place) {
    const auto recommendations = recommender::recommendations_of(*active);
    // The containers' share of the budget: the sidecars run beside them and count too.
    std::optional<recommender::PodTotals> containers_budget;
    if (budget) {
      containers_budget =
          recommender::minus_bounded(*budget, recommender::shared_with_containers(request.object));
    }
    auto containers = recommender::recommended_containers(
        *active, request.object, *recommendations, limit_range.get(),
        containers_budget ? &*containers_budget : nullptr);
    budget_capped = containers.budget_capped;
    plan = api::plan_resources(*active, request.object, &containers.desired);
  } else {
    // The pod's own values are its base: the plan changes nothing before the boost.
    const api::DesiredResources kept = api::controlled_values_of(*active, request.object);
    plan = api::plan_resources(*active, request.object, &kept);
  }
  // A pod admitted without all its values is resized once it runs: the reconciler waits for it.
  auto resize_later = [&] {
    if (effects && hints_ != nullptr && in_place) {
      hints_->hint(active->key(), controller::Expectation{});
    }
  };
  auto answer_unchanged = [&](std::string warning) {
    if (!warning.empty()) {
      response.warnings.push_back("vscaler: VerticalScaler " + active->name +
                                  " not applied to this pod: " + warning);
    }
    if (!warning.empty() || budget_capped) resize_later();
    reserve_and_mark(own, response.patch, {});
    if (effects && boosting && boosts_ != nullptr) count(boosts_->with({"skipped"}));
    count(unchanged_);
    return response;
  };
  // A patch yielding an invalid pod would make the API server refuse the ReplicaSet's create.
  if (!plan.invalid.empty()) return answer_unchanged(plan.invalid);
  // Fixed values are the scaler's as written: one the quota cannot hold is not applied (the pod
  // is created as its template says) rather than refused.
  if (budget && plan.changed()) {
    const recommender::PodTotals totals = recommender::pod_totals_after(request.object, plan);
    if (std::string over = recommender::exceeds(totals, *budget); !over.empty()) {
      return answer_unchanged("the namespace's ResourceQuota has room for less: " + over);
    }
  }
  // Fixed values a LimitRange refuses (LimitRanger admits the pod after this hook) are not
  // applied either; recommended ones were capped by it already.
  if (limit_range && plan.changed()) {
    for (const auto& container : plan.containers) {
      if (!container.changed) continue;
      std::string broken = recommender::limit_range_violation(
          recommender::resources_of(container.merged), *limit_range);
      if (!broken.empty()) {
        return answer_unchanged("the namespace's LimitRange refuses container " + container.name +
                                ": " + broken);
      }
    }
  }
  std::optional<api::BoostRecord> boosted;
  if (boosting) {
    // The boost's room once the plan is written: what the quota leaves, and the LimitRange's
    // maxima (LimitRanger admits the pod after this hook and would refuse a boost above them).
    // The quota's own headroom, not `budget`: the pod's declared totals it was raised to are
    // room the pod may keep, not room a boost above the plan's values may take.
    api::BoostRoom room;
    const recommender::PodTotals totals = recommender::pod_totals_after(request.object, plan);
    auto tighter = [](std::optional<kube::Quantity>& slot, const recommender::ResourceMap& bound,
                      const recommender::ResourceMap& used) {
      const kube::Quantity* most = recommender::find(bound, recommender::kCpu);
      if (most == nullptr) return;
      const kube::Quantity* taken = recommender::find(used, recommender::kCpu);
      const kube::Int128 rest = most->nanos() - (taken ? taken->nanos() : 0);
      const kube::Quantity left = kube::Quantity::from_nanos(rest > 0 ? rest : 0);
      if (!slot || left < *slot) slot = left;
    };
    if (headroom) {
      tighter(room.requests_cpu, headroom->requests, totals.requests);
      tighter(room.limits_cpu, headroom->limits, totals.limits);
    }
    if (limit_range) {
      tighter(room.requests_cpu, limit_range->pod_max, totals.requests);
      tighter(room.limits_cpu, limit_range->pod_max, totals.limits);
      if (const kube::Quantity* most = recommender::find(limit_range->max, recommender::kCpu)) {
        room.container_max_cpu = *most;
      }
    }
    api::BoostOutcome outcome = api::apply_startup_boost(*active, request.object, plan, room);
    for (const std::string& note : outcome.notes) {
      response.warnings.push_back("vscaler: startup boost of VerticalScaler " + active->name +
                                  ": " + note);
    }
    boosted = std::move(outcome.record);
  }
  if (!plan.changed()) return answer_unchanged("");
  if (budget_capped) resize_later();
  response.patch = api::admission_json_patch(plan);
  const recommender::PodTotals totals = recommender::pod_totals_after(request.object, plan);
  if (boosted) {
    reserve_and_mark(totals, response.patch,
                     {{api::kStartupBoostAnnotation, boosted->to_json().dump()}});
    if (effects && boosts_ != nullptr) count(boosts_->with({"boosted"}));
    // The reconciler ends the boost once the pod is Ready: it looks for the pod from now on.
    if (effects && hints_ != nullptr) hints_->boosted_pod(active->key());
  } else {
    reserve_and_mark(totals, response.patch, {});
    if (effects && boosting && boosts_ != nullptr) count(boosts_->with({"skipped"}));
  }
  count(patched_);
  return response;
}

}  // namespace vscaler::webhook
