// The table of supported workload kinds.
#include "kube/workloads.h"

#include <array>

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

}  // namespace vscaler::kube
