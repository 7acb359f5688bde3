// What a scaler means for one Deployment's pod template: per container, the resources it has and
// the resources it must have, whether that is a change, and whether the result is valid. The
// reconciler (strategic merge patch) and the admission hook (JSONPatch) both build their writes
// from this one computation, so they can never disagree. Fixed-value entries set their declared
// values; the values of recommended containers (or any values a caller decides, such as what
// oldObject carried) come in from above as DesiredResources: the arithmetic of a recommendation
// lives in recommender/, which api/ does not depend on.
#pragma once

#include <cstddef>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "api/scaler.h"

namespace vscaler::api {

/// The keys one container must carry, decided by the caller (a recommendation applied, or the
/// values oldObject carried). Keys absent here are left as the template has them.
struct DesiredValues {
  ResourceMap requests;  ///< resources.requests keys to set
  ResourceMap limits;    ///< resources.limits keys to set
};

/// Container name -> its desired values. For a container named here these replace the entry's
/// declared values; a recommended container not named here is left as it is.
using DesiredResources = std::map<std::string, DesiredValues, std::less<>>;

/// The pod spec of `object`: spec.template.spec of a workload (a workload always has a
/// template), else spec of a Pod. Null when the object has neither (a malformed object simply
/// has no containers: nothing is planned, nothing written).
const nlohmann::json* pod_spec_of(const nlohmann::json& object);

/// Where pod_spec_of found the spec, as a JSON pointer for patches: "/spec/template/spec" for a
/// workload, "/spec" for a Pod.
std::string pod_spec_pointer(const nlohmann::json& object);

/// The `containers` array of pod_spec_of(object); an empty array when absent or malformed.
const nlohmann::json& pod_containers_of(const nlohmann::json& object);

/// The resources of workloads' pod templates as they carry them: "namespace/Kind/name" ->
/// container name -> resources ({"requests": {...}, "limits": {...}}, either may be absent).
/// What a scaler in mode "Off" is shown against: its status shows what would be applied.
using TemplateResources = std::map<std::string, std::map<std::string, nlohmann::json>>;

/// The first part of every TemplateResources key of namespace `ns` and `kind`: "ns/Kind/".
std::string template_prefix(std::string_view ns, std::string_view kind);

/// The TemplateResources key of the workload `ref` ("Kind/name", TargetRef::ref()) in
/// namespace `ns`: "ns/Kind/name".
std::string template_key(std::string_view ns, std::string_view ref);

/// Removes the entries of namespace `ns` and `kind` from `templates` and returns them.
TemplateResources extract_templates(TemplateResources& templates, std::string_view ns,
                                    std::string_view kind);

/// One matched container of the pod spec (a workload's template or a Pod).
struct ContainerPlan {
  std::size_t index = 0;  ///< position in the pod spec's containers
  std::string name;
  /// Its resources as stored ({} when absent) with the declared keys set (equal values keep
  /// their text). What it has now is the planned object's (status_containers_now).
  nlohmann::json merged;
  bool changed = false;  ///< some declared key differs by value (or is absent)
  /// The keys this plan sets: what the strategic merge patch and the resize write
  /// (resources_json). Typed, not JSON: an admission answer never writes them.
  DesiredValues declared;
  /// Declared keys whose current value differs, as "requests.cpu=500m" (for admission warnings).
  std::vector<std::string> overridden;
};

/// The outcome of applying a scaler's declared resources to a workload's template or a Pod.
struct ResourcePlan {
  /// pod_spec_pointer of the planned object: where admission_json_patch writes.
  std::string spec_pointer = "/spec/template/spec";
  std::vector<ContainerPlan> containers;  ///< every container the scaler matches, in order
  std::vector<std::string> missing;       ///< names in the scaler with no such container
  /// Empty when valid; else why the merged result is invalid, naming container and resource
  /// ("container app: requests.cpu 2 would exceed limits.cpu 1"). Nothing may be written then.
  std::string invalid;
  /// With pod-level resources (spec.resources) the containers must stay within them: when the
  /// merged containers would not, `pod_resources` is spec.resources with the values raised that
  /// must grow (pod-level requests to the containers' total, limits to the largest container
  /// limit or the pod's request) and `pod_resources_changed` is set. Every writer (the template
  /// patch, the admission patches, the pod resize) raises them in the same write.
  nlohmann::json pod_resources;
  bool pod_resources_changed = false;
  /// Why pod_resources is raised, for messages: the first value that had to grow
  /// ("requests.cpu 1 was below the containers' total 1200m").
  std::string pod_resources_note;

  /// True when some matched container's resources must change.
  bool changed() const;
};

/// `values` as a container's resources: {"requests": {...}, "limits": {...}}, quantities as
/// strings, a section only when it has keys.
nlohmann::json resources_json(const DesiredValues& values);

/// The resources container `container` (at `index` of the pod spec's containers) carries once
/// `plan` is written: the plan's merged ones for a matched container, else its own ({} when it
/// has none).
const nlohmann::json& resources_after(const ResourcePlan& plan, const nlohmann::json& container,
                                      std::size_t index);

/// The QoS class ("Guaranteed", "Burstable", "BestEffort") of the pod spec of `object` (see
/// pod_spec_of) once `plan` is written, as the kubelet's GetPodQOS computes it from the cpu and
/// memory of every container and init container (pod-level resources, when set, decide alone).
/// A resize may not change it: the API server refuses one that would. An empty plan: the class
/// it has.
std::string qos_class_after(const nlohmann::json& object, const ResourcePlan& plan);

/// Computes the plan for `object` (a workload or a Pod; only its pod spec is read, see
/// pod_spec_of). Init containers and containers of a mode "Off" entry are never matched.
/// `desired` (may be null) gives the values of the containers it names, in place of their
/// entry's declared values. With pod-level resources (spec.resources of the pod spec) the merged
/// containers must stay within them as Kubernetes validates it: the cpu/memory requests of the
/// containers and restartable (sidecar) init containers summed at most the pod's request, no
/// container's limit above the pod's limit.
ResourcePlan plan_resources(const Scaler& scaler, const nlohmann::json& object,
                            const DesiredResources* desired = nullptr);

/// The strategic merge patch body (of a workload) that sets only the declared keys of the changed
/// containers: {"spec":{"template":{"spec":{"containers":[{"name":..,"resources":{..}}]}}}},
/// and the raised pod-level resources ("resources" beside "containers") when the plan raises
/// them. Never removes a key. Call only when plan.changed() and plan.invalid is empty.
nlohmann::json strategic_merge_patch(const Scaler& scaler, const ResourcePlan& plan);

/// The requests and limits one container of a pod spec stores, each key's value as its text (a
/// string as it is, anything else as nlohmann dumps it): the typed form of a pod spec that is
/// only compared against, read without a JSON tree of it (the admission codec reads an UPDATE's
/// or DELETE's oldObject so: webhook::StoredOldObject). The maps are filled in key order (a
/// FlatMap's insert out of order is linear).
struct StoredContainer {
  std::string name;
  base::FlatMap<std::string, std::string, std::less<>> requests;  ///< resources.requests
  base::FlatMap<std::string, std::string, std::less<>> limits;    ///< resources.limits
};

/// The containers of pod_containers_of(object) with a string name, in order, as stored (a
/// member named twice: the last one, as a parsed tree keeps it).
std::vector<StoredContainer> stored_containers_of(const nlohmann::json& object);

/// The resources stored in every matched container of `containers` (a pod spec's, see
/// stored_containers_of), by container name, for the keys the scaler controls in it (declared
/// keys for fixed entries, cpu/memory requests and limits it controls for recommended ones):
/// what a write that only resets them gets back. Every matched container has an entry, empty
/// when it stores none of them; values that are not quantities are left out.
DesiredResources controlled_values_of(const Scaler& scaler,
                                      const std::vector<StoredContainer>& containers);

/// controlled_values_of the containers of `workload`'s pod spec.
DesiredResources controlled_values_of(const Scaler& scaler, const nlohmann::json& workload);

/// True when the two pod templates (spec.template of `before` and `after`) are equal once the
/// cpu and memory requests and limits of the containers the scaler matches are ignored: a write
/// that changes only what vscaler controls (a Helm upgrade resetting resources).
bool templates_equal_ignoring_controlled(const Scaler& scaler, const nlohmann::json& before,
                                         const nlohmann::json& after);

/// The RFC 6902 patch for admission: one "add" per changed container (under plan.spec_pointer),
/// setting its whole merged resources object (an "add" of an existing member replaces it, so it
/// applies whatever the container had), preceded by one for the pod-level resources when they
/// must be raised. Empty array when nothing changes.
nlohmann::json admission_json_patch(const ResourcePlan& plan);

/// admission_json_patch without copying: the changed containers' `merged` and the raised
/// `pod_resources` are moved into the patch (left null in `plan`, whose other members stay as they
/// were). For an admission answer, the plan's last use of them.
nlohmann::json take_admission_json_patch(ResourcePlan& plan);

/// The status.containers entries, requests/limits as strings: each matched container's merged
/// resources (what the Deployment carries once applied, or would carry in Off mode).
nlohmann::json status_containers(const ResourcePlan& plan);

/// The same entries with the resources the matched containers of `object`, the object `plan` was
/// computed from, carry now (nothing was written).
nlohmann::json status_containers_now(const ResourcePlan& plan, const nlohmann::json& object);

}  // namespace vscaler::api
