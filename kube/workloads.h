// The workload kinds vscaler scales (apps/v1 Deployment, StatefulSet, DaemonSet) and what differs
// between them, in one place: the kind's API resource, the kind an admission review's resource
// names, and whether a template patch reaches the running pods (updateStrategy OnDelete).
#pragma once

#include <nlohmann/json.hpp>
#include <span>
#include <string_view>

#include "kube/client.h"

namespace vscaler::kube {

/// The apiVersion of every supported workload kind.
inline constexpr std::string_view kWorkloadApiVersion = "apps/v1";

/// One supported workload kind.
struct WorkloadKind {
  std::string_view kind;         ///< "Deployment", "StatefulSet", "DaemonSet"
  const ResourceType* resource;  ///< apps/v1 deployments, statefulsets, daemonsets
};

/// Every supported kind, Deployment first.
std::span<const WorkloadKind> workload_kinds();

/// The API resource of a supported kind ("StatefulSet" -> apps/v1 statefulsets), or nullptr for
/// any other kind (kinds are case-sensitive, as in the API).
const ResourceType* workload_resource(std::string_view kind);

/// The kind whose objects live at `group`/`resource` ("apps", "daemonsets" -> "DaemonSet"), or ""
/// when it is not a supported workload resource.
std::string_view workload_kind_of(std::string_view group, std::string_view resource);

/// True when `workload` replaces its pods only when they are deleted (a StatefulSet or DaemonSet
/// with spec.updateStrategy.type OnDelete): after a template patch its running pods keep their
/// old resources until each is deleted. A Deployment (spec.strategy) never does.
bool updates_only_on_delete(const nlohmann::json& workload);

}  // namespace vscaler::kube
