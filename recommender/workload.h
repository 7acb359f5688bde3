// The workload a scaler targets (apps/v1 Deployment, StatefulSet or DaemonSet), reduced to what
// the recommender reads from it: its uid (the end of the pods' owner chain), its spec.selector
// as a labelSelector query, and its pod template's containers with their requests and limits.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "kube/client.h"
#include "recommender/pods.h"
#include "recommender/selector.h"

namespace vscaler::recommender {

/// The API resource of a supported workload kind ("Deployment" -> apps/v1 deployments), or
/// nullptr for any other kind: kube::workload_resource, the one table of kinds.
const kube::ResourceType* workload_resource(std::string_view kind);

/// What the recommender needs of a workload.
struct WorkloadInfo {
  WorkloadRef ref;                                ///< kind, name and uid
  LabelSelector label_selector;                   ///< spec.selector, parsed
  std::string selector;                           ///< spec.selector as a labelSelector query
  std::vector<PodContainer> template_containers;  ///< spec.template.spec.containers
};

/// Parses a workload object of `kind` as the API returns it. The error names the field
/// (metadata.uid missing, an empty or malformed spec.selector, a malformed quantity).
/// The parts of a workload parse_workload reads.
const kube::JsonProjection& workload_projection();

kube::Result<WorkloadInfo> parse_workload(const nlohmann::json& object, std::string_view kind);

}  // namespace vscaler::recommender
