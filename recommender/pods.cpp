// Pod and ReplicaSet list parsing, the owner-chain filter and OOM kill extraction.
#include "recommender/pods.h"

#include <algorithm>
#include <unordered_map>

#include "recommender/json_fields.h"

namespace vscaler::recommender {
namespace {

using nlohmann::json;

std::optional<ControllerRef> controller_of(const json& metadata) {
  const auto* refs = child(metadata, "ownerReferences");
  if (!refs || !refs->is_array()) return std::nullopt;
  for (const auto& ref : *refs) {
    const auto* controller = child(ref, "controller");
    if (controller && controller->is_boolean() && controller->get<bool>()) {
      return ControllerRef{std::string(string_field(ref, "kind")),
                           std::string(string_field(ref, "name")),
                           std::string(string_field(ref, "uid"))};
    }
  }
  return std::nullopt;
}

const json* items_of(const json& list) {
  const auto* items = child(list, "items");
  return items && items->is_array() ? items : nullptr;
}

}  // namespace

const kube::JsonProjection& pod_projection() {
  static const kube::JsonProjection projection = *kube::JsonProjection::parse({
      "/metadata/name",
      "/metadata/uid",
      "/metadata/labels",
      "/metadata/ownerReferences",
      "/spec/containers/*/name",
      "/spec/containers/*/resources",
      "/status/phase",
      "/status/containerStatuses/*/name",
      "/status/containerStatuses/*/restartCount",
      "/status/containerStatuses/*/lastState/terminated",
      "/status/containerStatuses/*/resources",
  });
  return projection;
}

const kube::JsonProjection& replica_set_projection() {
  static const kube::JsonProjection projection = *kube::JsonProjection::parse({
      "/metadata/name",
      "/metadata/uid",
      "/metadata/ownerReferences",
  });
  return projection;
}

kube::Result<PodInfo> parse_pod(const json& item, const std::string& path) {
  PodInfo pod;
  const auto* metadata = child(item, "metadata");
  if (!metadata) return kube::fail(path + ".metadata: is required");
  pod.name = std::string(string_field(*metadata, "name"));
  pod.uid = std::string(string_field(*metadata, "uid"));
  if (pod.name.empty()) return kube::fail(path + ".metadata.name: is required");
  if (pod.uid.empty()) return kube::fail(path + ".metadata.uid: is required");
  pod.controller = controller_of(*metadata);
  if (const auto* labels = child(*metadata, "labels"); labels && labels->is_object()) {
    for (const auto& [key, value] : labels->items()) {
      if (value.is_string()) pod.labels.emplace(key, value.get<std::string>());
    }
  }
  const auto* spec = child(item, "spec");
  const auto* containers = spec ? child(*spec, "containers") : nullptr;
  if (!containers || !containers->is_array()) {
    return kube::fail(path + ".spec.containers: must be an array");
  }
  for (std::size_t i = 0; i < containers->size(); ++i) {
    const auto& c = (*containers)[i];
    const std::string cpath = path + ".spec.containers[" + std::to_string(i) + "]";
    PodContainer container;
    container.name = std::string(string_field(c, "name"));
    if (container.name.empty()) return kube::fail(cpath + ".name: is required");
    const auto* resources = child(c, "resources");
    auto requests = resource_list(resources ? child(*resources, "requests") : nullptr, cpath,
                                  ".resources.requests");
    if (!requests.ok()) return kube::fail(requests.error());
    auto limits = resource_list(resources ? child(*resources, "limits") : nullptr, cpath,
                                ".resources.limits");
    if (!limits.ok()) return kube::fail(limits.error());
    container.requests = std::move(requests).value();
    container.limits = std::move(limits).value();
    pod.containers.push_back(std::move(container));
  }
  const auto* status = child(item, "status");
  // Pending (unscheduled, pulling) and finished (Succeeded, Failed: evicted) pods have no
  // metrics; a pod without a phase yet is counted as running, as it soon will be.
  const std::string_view phase = status ? string_field(*status, "phase") : std::string_view();
  pod.running = phase.empty() || phase == "Running";
  const auto* statuses = status ? child(*status, "containerStatuses") : nullptr;
  if (statuses && statuses->is_array()) {
    for (std::size_t i = 0; i < statuses->size(); ++i) {
      const auto& s = (*statuses)[i];
      const auto* last = child(s, "lastState");
      const auto* terminated = last ? child(*last, "terminated") : nullptr;
      if (!terminated || string_field(*terminated, "reason") != "OOMKilled") continue;
      const std::string spath = path + ".status.containerStatuses[" + std::to_string(i) + "]";
      OomKill kill;
      kill.pod_uid = pod.uid;
      kill.container = std::string(string_field(s, "name"));
      const auto* restarts = child(s, "restartCount");
      if (kill.container.empty() || !restarts || !restarts->is_number_integer()) {
        return kube::fail(spath + ": an OOM kill needs name and restartCount");
      }
      kill.restart_count = restarts->get<std::int64_t>();
      auto finished = parse_rfc3339(string_field(*terminated, "finishedAt"));
      if (!finished.ok()) {
        return kube::fail(spath + ".lastState.terminated.finishedAt: " + finished.error());
      }
      kill.finished_at = *finished;
      // What the container ran with: the kubelet's status.containerStatuses[].resources when it
      // reports them (a resize not done yet leaves the spec ahead of it, or behind), else the
      // spec, as VPA's ContainerRequestsAndLimits reads it. Whole bytes, as VPA reads them.
      bool from_status = false;
      if (const auto* actual = child(s, "resources"); actual && actual->is_object()) {
        auto requests = resource_list(child(*actual, "requests"), spath, ".resources.requests");
        auto limits = resource_list(child(*actual, "limits"), spath, ".resources.limits");
        if (requests.ok() && limits.ok()) {
          from_status = true;
          const auto* memory = effective_request(*requests, *limits, kMemory);
          if (memory) kill.memory_request_bytes = whole_bytes(*memory);
        }
      }
      if (const auto* container = find_container(pod, kill.container); !from_status && container) {
        const auto* memory = effective_request(container->requests, container->limits, kMemory);
        if (memory) kill.memory_request_bytes = whole_bytes(*memory);
      }
      pod.oom_kills.push_back(std::move(kill));
    }
  }
  return pod;
}

const PodContainer* find_container(const PodInfo& pod, const std::string& name) {
  for (const auto& c : pod.containers) {
    if (c.name == name) return &c;
  }
  return nullptr;
}

kube::Result<PodListParse> parse_pod_list(const nlohmann::json& list) {
  const auto* items = items_of(list);
  if (!items) return kube::fail("PodList: items must be an array");
  PodListParse out;
  for (std::size_t i = 0; i < items->size(); ++i) {
    auto pod = parse_pod((*items)[i], "items[" + std::to_string(i) + "]");
    if (pod.ok()) {
      out.pods.push_back(std::move(pod).value());
    } else {
      out.errors.push_back(pod.error());
    }
  }
  return out;
}

kube::Result<std::vector<ReplicaSetInfo>> parse_replica_set_list(const nlohmann::json& list) {
  const auto* items = items_of(list);
  if (!items) return kube::fail("ReplicaSetList: items must be an array");
  std::vector<ReplicaSetInfo> out;
  for (const auto& item : *items) {
    const auto* metadata = child(item, "metadata");
    if (!metadata) continue;  // nothing can be owned through it
    out.push_back({std::string(string_field(*metadata, "name")),
                   std::string(string_field(*metadata, "uid")), controller_of(*metadata)});
  }
  return out;
}

std::vector<PodInfo> owned_pods(std::vector<PodInfo> pods,
                                const std::vector<ReplicaSetInfo>& replica_sets,
                                const WorkloadRef& target) {
  std::unordered_map<std::string, const ReplicaSetInfo*> by_uid;
  if (target.kind == "Deployment") {
    for (const auto& rs : replica_sets) by_uid.emplace(rs.uid, &rs);
  }
  return owned_pods_by_lookup(
      std::move(pods),
      [&by_uid](const std::string& uid) -> const ReplicaSetInfo* {
        auto it = by_uid.find(uid);
        return it == by_uid.end() ? nullptr : it->second;
      },
      target);
}

std::vector<PodInfo> owned_pods_by_lookup(std::vector<PodInfo> pods,
                                          const ReplicaSetLookup& replica_set,
                                          const WorkloadRef& target) {
  std::erase_if(pods, [&](const PodInfo& pod) {
    if (!pod.controller || target.uid.empty()) return true;
    if (target.kind == "Deployment") {
      if (pod.controller->kind != "ReplicaSet") return true;
      const ReplicaSetInfo* rs = replica_set(pod.controller->uid);
      return rs == nullptr || !rs->controller || rs->controller->kind != "Deployment" ||
             rs->controller->uid != target.uid;
    }
    return pod.controller->kind != target.kind || pod.controller->uid != target.uid;
  });
  return pods;
}

}  // namespace vscaler::recommender
