// What the recommender reads from pods and ReplicaSets (lists by the workload's selector):
// controller owner references (to keep only the target's pods: pod -> ReplicaSet -> Deployment,
// pod -> StatefulSet / DaemonSet; a canary whose labels overlap stays out), the spec's containers
// (only their samples count, as in VPA) with their requests (an OOM counts from the memory
// request; CPU samples all weigh the same, whatever the request) and OOM kills
// (containerStatuses[].lastState.terminated.reason == "OOMKilled").
#pragma once

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "base/result.h"
#include "kube/json_projection.h"
#include "recommender/resources.h"
#include "recommender/selector.h"
#include "recommender/time.h"

namespace vscaler::recommender {

/// An object's controller ownerReference (the one with controller: true).
struct ControllerRef {
  std::string kind;  ///< e.g. ReplicaSet
  std::string name;  ///< the owner's name
  std::string uid;   ///< the owner's uid (what the chain is followed by)
};

/// A container of a pod's spec: its requests and limits (cpu / memory only).
struct PodContainer {
  std::string name;      ///< container name
  ResourceMap requests;  ///< resources.requests (cpu, memory)
  ResourceMap limits;    ///< resources.limits (cpu, memory)
};

/// An OOM kill seen in a pod's status.
struct OomKill {
  std::string pod_uid;              ///< the pod's metadata.uid
  std::string container;            ///< the killed container's name
  std::int64_t restart_count = 0;   ///< with pod uid and container, the kill's identity
  TimePoint finished_at;            ///< lastState.terminated.finishedAt
  double memory_request_bytes = 0;  ///< the container's memory request (else limit), 0 if none
};

/// The parts of a Pod the recommender uses.
struct PodInfo {
  std::string name;  ///< metadata.name (PodMetrics join on it)
  std::string uid;   ///< metadata.uid
  Labels labels;     ///< metadata.labels (a namespace-wide read matches them)
  std::optional<ControllerRef> controller;  ///< its controller ownerReference, if any
  /// spec.containers: init containers, native sidecars (restartable init containers) included,
  /// are neither scaled nor sampled, as in VPA.
  std::vector<PodContainer> containers;
  std::vector<OomKill> oom_kills;  ///< OOM kills in containerStatuses[].lastState
  /// status.phase is Running (or not set yet): the metrics API reports only such pods.
  bool running = true;
};

/// The parts of a ReplicaSet the owner chain needs.
struct ReplicaSetInfo {
  std::string name;                         ///< metadata.name
  std::string uid;                          ///< metadata.uid (pods' controller refs name it)
  std::optional<ControllerRef> controller;  ///< its Deployment, if any
};

/// The workload a scaler targets, as its owner chain names it.
struct WorkloadRef {
  std::string kind;  ///< Deployment, StatefulSet or DaemonSet
  std::string name;  ///< the workload's name
  std::string uid;   ///< the workload's uid: the chain must end at it, not just at the name
};

/// A list of pods and one message per pod that did not parse (that pod is skipped).
struct PodListParse {
  std::vector<PodInfo> pods;        ///< the pods that parsed
  std::vector<std::string> errors;  ///< one message per skipped pod, naming the field
};

/// The parts of a Pod parse_pod reads: a pods list parsed through it skips the rest (managedFields,
/// most of status), which is most of a pod's bytes.
const kube::JsonProjection& pod_projection();

/// The parts of a ReplicaSet (or its metadata) parse_replica_set_list reads.
const kube::JsonProjection& replica_set_projection();

/// Parses one Pod of a PodList; the error names the field after `path` ("items[3]").
kube::Result<PodInfo> parse_pod(const nlohmann::json& item, const std::string& path);

/// Parses a PodList; an error only when `items` is not an array.
kube::Result<PodListParse> parse_pod_list(const nlohmann::json& list);

/// Parses a ReplicaSetList (metadata only is enough); an error when `items` is not an array.
kube::Result<std::vector<ReplicaSetInfo>> parse_replica_set_list(const nlohmann::json& list);

/// Finds a ReplicaSet by uid (nullptr: not listed).
using ReplicaSetLookup = std::function<const ReplicaSetInfo*(const std::string& uid)>;

/// The pods whose controller chain leads to `target`: for a Deployment, pod -> ReplicaSet (in
/// `replica_sets`) -> the Deployment's uid; for a StatefulSet or DaemonSet, the pod's controller
/// is the target's uid.
std::vector<PodInfo> owned_pods(std::vector<PodInfo> pods,
                                const std::vector<ReplicaSetInfo>& replica_sets,
                                const WorkloadRef& target);
/// The same, with the ReplicaSets found through `replica_set` (a namespace's, indexed once per
/// pass: building a map of all of them per scaler is quadratic at 10,000 scalers).
std::vector<PodInfo> owned_pods_by_lookup(std::vector<PodInfo> pods,
                                          const ReplicaSetLookup& replica_set,
                                          const WorkloadRef& target);

/// The container named `name` of `pod`, or nullptr.
const PodContainer* find_container(const PodInfo& pod, const std::string& name);

}  // namespace vscaler::recommender
