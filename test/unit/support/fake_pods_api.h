// FakePodsApi: a ReconcileApi holding pods in memory (the one faked collaborator of the pod
// steps' unit tests): it lists them, applies pods/resize patches to their spec as the API server
// does (generation + 1), can refuse them, records events, and plays the kubelet finishing every
// resize when asked. The kubelet's real side is e2e (kwok Stages).
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "controller/reconcile_api.h"
#include "kube/errors.h"
#include "kube/object_meta.h"

namespace vscaler::test {

using nlohmann::json;

class FakePodsApi : public controller::ReconcileApi {
 public:
  std::map<std::string, json> pods;  // name -> pod
  std::string last_selector;
  std::vector<std::string> resized;  // names, in order
  bool refuse = false;
  kube::ErrorKind refusal_kind = kube::ErrorKind::kForbidden;  ///< 403; 503 is kServerError
  std::string refusal = "Node didn't have enough capacity: NodeCapacity";
  std::string refusal_cause;  ///< a Status cause type of the refusal, if any
  std::optional<std::chrono::seconds> refusal_retry_after;  ///< its Retry-After, if any
  bool refusal_names_pod = false;    ///< its Status names the pod (a 404: the pod is gone)
  int calls = 0;                     ///< resize calls made, refused or not
  std::vector<std::string> events;   ///< "Warning reason" / "Normal reason", in order
  std::vector<std::string> evicted;  ///< names, in order
  std::function<void()> on_resize;   ///< called as each resize call begins (the call in flight)
  /// Called as each eviction call begins, with the pod's name (a replacement created meanwhile).
  std::function<void(const std::string&)> on_evict;

  controller::ApiResult get_workload(const std::string&, const api::TargetRef&,
                                     std::chrono::milliseconds) override {
    return json::object();
  }
  controller::ApiResult patch_workload(const std::string&, const api::TargetRef&,
                                       const json&) override {
    return json::object();
  }
  controller::ApiResult get_scaler(const std::string&, const std::string&) override {
    return json::object();
  }
  controller::ApiResult patch_scaler_status(const std::string&, const std::string&,
                                            const json&) override {
    return json::object();
  }
  void record_event(const api::Scaler&, bool warning, const std::string& reason,
                    const std::string&) override {
    events.push_back((warning ? "Warning " : "Normal ") + reason);
  }
  controller::ApiResult list_pods(const std::string&, const std::string& selector) override {
    last_selector = selector;
    json items = json::array();
    for (const auto& [name, pod] : pods) items.push_back(pod);
    return json{{"items", items}};
  }
  controller::ApiResult resize_pod(const std::string&, const std::string& name,
                                   const json& patch) override {
    ++calls;
    if (on_resize) on_resize();
    if (refuse) {
      auto error = kube::make_error(refusal_kind, refusal);
      if (!refusal_cause.empty()) error.causes.push_back({refusal_cause, "", ""});
      error.retry_after = refusal_retry_after;
      if (refusal_names_pod) error.name = name;
      return kube::fail(error);
    }
    resized.push_back(name);
    json& pod = pods.at(name);
    for (const json& wanted : patch["spec"]["containers"]) {
      for (json& container : pod["spec"]["containers"]) {
        if (container["name"] == wanted["name"])
          container["resources"].update(wanted["resources"], true);
      }
    }
    pod["metadata"]["generation"] = pod["metadata"]["generation"].get<int>() + 1;
    // As the API server records who owns the fields a write through pods/resize set.
    json& managed = pod["metadata"]["managedFields"];
    if (!managed.is_array()) managed = json::array();
    json entry = {{"manager", "vscaler"}, {"operation", "Update"}, {"subresource", "resize"}};
    if (std::find(managed.begin(), managed.end(), entry) == managed.end()) managed.push_back(entry);
    return pod;
  }
  controller::ApiResult evict_pod(const std::string&, const std::string& name,
                                  const std::string& uid) override {
    if (on_evict) on_evict(name);
    // As the API server: a pod by that name with another uid (created since) is not evicted.
    auto found = pods.find(name);
    if (found != pods.end() && !uid.empty() &&
        kube::string_at(found->second, {"metadata", "uid"}) != uid) {
      kube::ApiError error;
      error.kind = kube::ErrorKind::kConflict;
      error.code = 409;
      error.reason = "Conflict";
      error.message = "Precondition failed: UID in precondition: " + uid;
      return kube::fail(std::move(error));
    }
    evicted.push_back(name);
    pods.erase(name);
    return json::object();
  }
  /// The kubelet finishing every resize: status follows spec, observedGeneration catches up.
  void kubelet_done() {
    for (auto& [name, pod] : pods) {
      pod["status"]["observedGeneration"] = pod["metadata"]["generation"];
      pod["status"]["containerStatuses"][0]["resources"] =
          pod["spec"]["containers"][0]["resources"];
    }
  }
};

}  // namespace vscaler::test
