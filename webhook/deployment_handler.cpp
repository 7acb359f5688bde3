// DeploymentHandler: the workload admission hook (any supported kind), see the header.
#include "webhook/deployment_handler.h"

#include <algorithm>
#include <optional>
#include <string_view>
#include <vector>

#include "api/resources.h"
#include "base/log.h"
#include "kube/object_meta.h"
#include "kube/workloads.h"
#include "recommender/desired.h"

namespace vscaler::webhook {
namespace {

using nlohmann::json;

/// The field manager of vscaler's own writes (controller::kFieldManager).
constexpr std::string_view kOwnFieldManager = "vscaler";

/// What the admission patch sets for `scaler` (Auto or Initial) on a CREATE or UPDATE.
struct AdmissionValues {
  api::DesiredResources desired;  ///< per container, in place of the declared values
  bool recommended = false;       ///< some container's values come from a recommendation
  bool resets_only =
      false;  ///< the UPDATE changes controlled resources only (resets_resources_only)
};

/// What oldObject held: as the codec read it (projection() asks for that), else (a request
/// parsed without it) read from its tree into `from_tree`; empty without one (CREATE).
const StoredOldObject& old_of(const AdmissionRequest& request, StoredOldObject& from_tree) {
  if (request.old_stored) return *request.old_stored;
  from_tree = stored_old_object_of(request.old_object);
  return from_tree;
}

/// oldObject's containers by name, the first of each name as its template lists them (as the
/// scan it replaces found them): a lookup per warning, not a scan of every container for each.
class OldContainers {
 public:
  explicit OldContainers(const std::vector<api::StoredContainer>& containers) {
    by_name_.reserve(containers.size());
    for (const auto& container : containers) by_name_.push_back(&container);
    std::stable_sort(by_name_.begin(), by_name_.end(),
                     [](const auto* a, const auto* b) { return a->name < b->name; });
  }
  /// The first container named `name`, or nullptr.
  const api::StoredContainer* find(std::string_view name) const {
    auto it = std::lower_bound(
        by_name_.begin(), by_name_.end(), name,
        [](const auto* container, std::string_view key) { return container->name < key; });
    return it != by_name_.end() && (*it)->name == name ? *it : nullptr;
  }

 private:
  std::vector<const api::StoredContainer*> by_name_;
};

/// True when an UPDATE changes nothing of the template but cpu/memory requests and limits: by the
/// parser's comparison of the templates (the projection's) when it made one, else (a request
/// parsed without it) by comparing the trees.
bool resets_resources_only(const api::Scaler& scaler, const AdmissionRequest& request) {
  if (request.operation != Operation::kUpdate) return false;
  if (request.subtree_unchanged) return *request.subtree_unchanged;
  return api::templates_equal_ignoring_controlled(scaler, request.old_object, request.object);
}

AdmissionValues admission_values(const api::Scaler& scaler, const AdmissionRequest& request,
                                 const StoredOldObject& old,
                                 const recommender::LimitRangeItem* limit_range) {
  AdmissionValues values;
  const auto kept = recommender::recommendations_of(scaler);
  const std::vector<recommender::ContainerRecommendation>& recommendations = *kept;
  values.resets_only = resets_resources_only(scaler, request);
  if (values.resets_only) {
    // Only controlled keys changed (a Helm upgrade resetting resources): give back what was
    // stored, so the write is a no-op, not a new rollout. Fixed values in Auto keep their
    // declared values (which is what vscaler made the template carry); a recommended container
    // with no recommendation yet is not vscaler's to hold: the write stands.
    values.desired = api::controlled_values_of(scaler, old.containers);
    std::erase_if(values.desired, [&](const auto& item) {
      const api::ContainerResources* entry = scaler.entry_for(item.first);
      if (entry == nullptr) return true;
      if (entry->fixed()) return scaler.update_mode == api::UpdateMode::kAuto;
      return std::none_of(recommendations.begin(), recommendations.end(),
                          [&item](const auto& r) { return r.container_name == item.first; });
    });
    return values;
  }
  // A CREATE or a real template change: the write rolls out anyway, so it carries the latest
  // values (Initial's only chance, Auto's fast path). With no recommendation stored there is
  // nothing to apply (a scaler of fixed values, a young one): the walk over the template would
  // only find that out, at about 1.6 us of a 20 KB review's ~35 us.
  if (recommendations.empty()) return values;
  auto containers =
      recommender::recommended_containers(scaler, request.object, recommendations, limit_range);
  values.desired = std::move(containers.desired);
  values.recommended = !values.desired.empty();
  return values;
}

/// True when `overridden` ("requests.cpu=100m", of container `name`) is what oldObject already
/// carried (an UPDATE's): the writer did not set it, it only kept it (an image change, say), so
/// overriding it is no news to warn about.
bool carried_over(const OldContainers& old, const std::string& name, std::string_view overridden) {
  auto dot = overridden.find('.');
  auto equals = overridden.find('=');
  if (dot == std::string::npos || equals == std::string::npos || equals < dot) return false;
  std::string_view section = overridden.substr(0, dot);
  std::string_view resource = overridden.substr(dot + 1, equals - dot - 1);
  std::string_view value = overridden.substr(equals + 1);
  const api::StoredContainer* container = old.find(name);
  if (container == nullptr || (section != "requests" && section != "limits")) return false;
  const auto& stored = section == "requests" ? container->requests : container->limits;
  auto found = stored.find(resource);
  return found != stored.end() && found->second == value;
}

}  // namespace

DeploymentHandler::DeploymentHandler(const controller::ScalerStore& store,
                                     controller::HintSink& hints, metrics::Counter& enqueued,
                                     metrics::Counter* recommendation_applied,
                                     const controller::LimitRangeCache* limit_ranges)
    : store_(store),
      hints_(hints),
      enqueued_(enqueued),
      recommendation_applied_(recommendation_applied),
      limit_ranges_(limit_ranges) {}

const Projection& DeploymentHandler::projection() {
  static const Projection projection = [] {
    Projection paths = *Projection::parse({
        // The object names the workload; what the hints need of it (generation, uid) is
        // oldObject's, read as stored.
        "/metadata/name",
        "/metadata/namespace",
        "/spec/template/spec/containers/*/name",
        "/spec/template/spec/containers/*/resources",
        // Pod-level resources, and the sidecars that count in them: raised when they must grow.
        "/spec/template/spec/resources",
        "/spec/template/spec/initContainers/*/restartPolicy",
        "/spec/template/spec/initContainers/*/resources",
    });
    // The rest of the template only compared, in the parser: enough to tell a template change
    // from a write that resets resources only, without converting the whole template.
    std::vector<std::vector<std::string>> controlled;
    for (const char* section : {"requests", "limits"}) {
      for (const char* resource : {"cpu", "memory"}) {
        controlled.push_back({"spec", "containers", "*", "resources", section, resource});
      }
    }
    paths.compare_subtree({"spec", "template"}, std::move(controlled));
    // oldObject is only compared against (its generation, uid, and what its containers stored).
    paths.old_object_stored();
    return paths;
  }();
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
  StoredOldObject from_tree;
  const StoredOldObject& old = old_of(request, from_tree);
  const bool deleted = request.operation == Operation::kDelete;
  std::string name = deleted ? old.name : kube::meta_string(request.object, "name");
  if (name.empty()) return AdmissionResponse::allow();  // a generateName CREATE: no scaler yet
  // vscaler's own patch: hooking it would "reset" it (its matchConditions skip vscaler's user).
  if (request.field_manager == kOwnFieldManager) return AdmissionResponse::allow();
  std::string ns = deleted ? old.namespace_name : kube::meta_string(request.object, "namespace");
  // The API server always names a workload's namespace in the request, and sends the object's
  // equal to it (or empty); a review without it, or where they differ, is forged (anyone in the
  // cluster reaches the port): no patch, no hint for any namespace's scaler.
  if (request.namespace_name.empty() || (!ns.empty() && ns != request.namespace_name)) {
    return AdmissionResponse::allow();
  }
  ns = request.namespace_name;

  auto scalers = store_.targeting(ns, kind, name);
  const api::Scaler* active = api::select_active(scalers);
  if (active == nullptr) {
    // A scaler created just before may not have reached the index yet: say so (no I/O).
    if (request.operation == Operation::kCreate && !request.dry_run) {
      hints_.unclaimed_create(ns, kind, name);
    }
    return AdmissionResponse::allow();
  }

  controller::Expectation hint;
  switch (request.operation) {
    case Operation::kCreate:
      hint.must_exist = true;
      break;
    case Operation::kUpdate:
      hint.min_generation_exclusive = old.generation;
      break;
    case Operation::kDelete:
      hint.gone_uid = old.uid;
      break;
    case Operation::kConnect:
      return AdmissionResponse::allow();
  }
  AdmissionResponse response;
  // The in-place modes admit workload writes as Initial does (DESIGN "Update modes").
  bool admits = active->update_mode == api::UpdateMode::kAuto ||
                active->update_mode == api::UpdateMode::kInitial ||
                api::in_place(active->update_mode);
  if (admits && request.operation != Operation::kDelete) {
    auto limit_range = limit_ranges_ ? limit_ranges_->of(active->ns) : nullptr;
    AdmissionValues values = admission_values(*active, request, old, limit_range.get());
    api::ResourcePlan plan = api::plan_resources(*active, request.object, &values.desired);
    if (!plan.invalid.empty()) {
      // A patch yielding an invalid object would make the API server reject the user's write.
      response.warnings.push_back("vscaler: VerticalScaler " + active->name +
                                  " not applied: " + plan.invalid);
    } else {
      if (plan.changed()) response.patch = api::take_admission_json_patch(plan);
      bool recommended_changed = false;
      for (const auto& container : plan.containers) {
        recommended_changed =
            recommended_changed ||
            (container.changed && values.recommended && values.desired.contains(container.name) &&
             active->entry_for(container.name)->recommended());
      }
      if (recommended_changed && !request.dry_run && recommendation_applied_ != nullptr) {
        recommendation_applied_->inc();
      }
      std::optional<OldContainers> old_containers;  // only when there is something to warn of
      for (const auto& container : plan.containers) {
        for (const auto& overridden : container.overridden) {
          if (request.operation == Operation::kUpdate) {
            if (!old_containers) old_containers.emplace(old.containers);
            if (carried_over(*old_containers, container.name, overridden)) continue;
          }
          response.warnings.push_back("vscaler: VerticalScaler " + active->name + " overrides " +
                                      container.name + " " + overridden);
        }
      }
      // A reset undone here may leave the write a no-op that never raises the generation:
      // waiting for it would only poll. A template change raises it: the worker looks again once
      // it is stored, so the status says what the new template carries (a container added, a
      // limit raised), not what the old one did.
      // (A reset of pod-level values too is not told by the comparison, which ignores the
      // containers' only: a plan that raises them is hinted as a reset.)
      if (plan.pod_resources_changed || values.resets_only) {
        hint.min_generation_exclusive = 0;
      }
    }
  }
  if (!request.dry_run) {
    hints_.hint(active->key(), hint);
    enqueued_.inc();
  }
  return response;
}

}  // namespace vscaler::webhook
