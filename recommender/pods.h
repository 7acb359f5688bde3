// What the recommender reads from pods and ReplicaSets (lists by the workload's selector):
// controller owner references (to keep only the target's pods: pod -> ReplicaSet -> Deployment,
// pod -> StatefulSet / DaemonSet; a canary whose labels overlap stays out), container requests
// (CPU samples weigh the CPU request; an OOM counts from the memory request) and OOM kills
// (containerStatuses[].lastState.terminated.reason == "OOMKilled").
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "kube/result.h"
#include "recommender/resources.h"
#include "recommender/time.h"

namespace vscaler::recommender {

/// An object's controller ownerReference (the one with controller: true).
struct ControllerRef {
  std::string kind;  ///< e.g. ReplicaSet
  std::string name;
  std::string uid;
};

/// A container of a pod's spec: its requests and limits (cpu / memory only).
struct PodContainer {
  std::string name;
  ResourceMap requests;
  ResourceMap limits;
};

/// An OOM kill seen in a pod's status.
struct OomKill {
  std::string pod_uid;
  std::string container;
  std::int64_t restart_count = 0;   ///< with pod uid and container, the kill's identity
  TimePoint finished_at;            ///< lastState.terminated.finishedAt
  double memory_request_bytes = 0;  ///< the container's memory request (else limit), 0 if none
};

/// The parts of a Pod the recommender uses.
struct PodInfo {
  std::string name;
  std::string uid;
  std::optional<ControllerRef> controller;
  std::vector<PodContainer> containers;  ///< spec.containers (init containers are not scaled)
  std::vector<OomKill> oom_kills;
};

/// The parts of a ReplicaSet the owner chain needs.
struct ReplicaSetInfo {
  std::string name;
  std::string uid;
  std::optional<ControllerRef> controller;
};

/// The workload a scaler targets, as its owner chain names it.
struct WorkloadRef {
  std::string kind;  ///< Deployment, StatefulSet or DaemonSet
  std::string name;
  std::string uid;
};

/// A list of pods and one message per pod that did not parse (that pod is skipped).
struct PodListParse {
  std::vector<PodInfo> pods;
  std::vector<std::string> errors;
};

/// Parses a PodList; an error only when `items` is not an array.
kube::Result<PodListParse> parse_pod_list(const nlohmann::json& list);

/// Parses a ReplicaSetList (metadata only is enough); an error when `items` is not an array.
kube::Result<std::vector<ReplicaSetInfo>> parse_replica_set_list(const nlohmann::json& list);

/// The pods whose controller chain leads to `target`: for a Deployment, pod -> ReplicaSet (in
/// `replica_sets`) -> the Deployment's uid; for a StatefulSet or DaemonSet, the pod's controller
/// is the target's uid.
std::vector<PodInfo> owned_pods(std::vector<PodInfo> pods,
                                const std::vector<ReplicaSetInfo>& replica_sets,
                                const WorkloadRef& target);

/// The container named `name` of `pod`, or nullptr.
const PodContainer* find_container(const PodInfo& pod, const std::string& name);

}  // namespace vscaler::recommender
