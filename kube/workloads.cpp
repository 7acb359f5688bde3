// The table of supported workload kinds.
#include "kube/workloads.h"

#include <array>
#include <string>

#include "kube/object_meta.h"

namespace vscaler::kube {
namespace {

const std::array<WorkloadKind, 3> kKinds{{
    {"Deployment", &resources::kDeployments},
    {"StatefulSet", &resources::kStatefulSets},
    {"DaemonSet", &resources::kDaemonSets},
}};

}  // namespace

std::span<const WorkloadKind> workload_kinds() {
  return kKinds;
}

const ResourceType* workload_resource(std::string_view kind) {
  for (const WorkloadKind& known : kKinds) {
    if (known.kind == kind) return known.resource;
  }
  return nullptr;
}

std::string_view workload_kind_of(std::string_view group, std::string_view resource) {
  for (const WorkloadKind& known : kKinds) {
    if (known.resource->group == group && known.resource->resource == resource) return known.kind;
  }
  return {};
}

bool updates_only_on_delete(const nlohmann::json& workload) {
  // Only StatefulSets and DaemonSets have spec.updateStrategy; a Deployment's is spec.strategy.
  return string_at(workload, {"spec", "updateStrategy", "type"}) == "OnDelete";
}

PodWorkload workload_of_pod(const nlohmann::json& pod) {
  const nlohmann::json* refs = find_path(pod, {"metadata", "ownerReferences"});
  if (refs == nullptr || !refs->is_array()) return {};
  for (const nlohmann::json& ref : *refs) {
    const nlohmann::json* controller = find_path(ref, {"controller"});
    if (controller == nullptr || !controller->is_boolean() || !controller->get<bool>()) continue;
    // One controller per object: this is it, whatever it is.
    if (string_at(ref, {"apiVersion"}) != kWorkloadApiVersion) return {};
    std::string kind = string_at(ref, {"kind"});
    std::string name = string_at(ref, {"name"});
    if (name.empty()) return {};
    if (kind == "StatefulSet" || kind == "DaemonSet") {
      for (const WorkloadKind& known : kKinds) {
        if (known.kind == kind) return {known.kind, std::move(name)};  // a view of the table
      }
    }
    if (kind != "ReplicaSet") return {};
    std::string hash = string_at(pod, {"metadata", "labels", "pod-template-hash"});
    if (hash.empty() || name.size() < hash.size() + 2 ||
        name.compare(name.size() - hash.size(), hash.size(), hash) != 0 ||
        name[name.size() - hash.size() - 1] != '-') {
      return {};
    }
    name.resize(name.size() - hash.size() - 1);
    return {"Deployment", std::move(name)};
  }
  return {};
}

}  // namespace vscaler::kube
