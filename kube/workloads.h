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

/// The workload a pod belongs to, as its own fields say.
struct PodWorkload {
  std::string_view kind;  ///< a supported kind, or empty: no supported workload owns the pod
  std::string name;       ///< the workload's name
};

/// The workload owning `pod`, found from the pod alone (no API call, for pod admission): its
/// controller ownerReference (apiVersion apps/v1) names a StatefulSet or DaemonSet, which is the
/// workload, or a ReplicaSet named "<name>-<the pod's pod-template-hash label>", which belongs to
/// Deployment <name> (the Deployment controller names its ReplicaSets so). Anything else (a bare
/// ReplicaSet, a Job's pod, a hash that does not end the owner's name) gives an empty kind.
PodWorkload workload_of_pod(const nlohmann::json& pod);

}  // namespace vscaler::kube
