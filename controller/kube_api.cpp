// KubeReconcileApi and KubeResyncApi: the workload kind picks the resource path (kube/workloads).
#include "controller/kube_api.h"

#include <chrono>

#include "api/namespace_scalers.h"
#include "api/startup_boost.h"
#include "base/log.h"
#include "controller/status.h"
#include "controller/workload_meta_list.h"
#include "kube/object_meta.h"
#include "kube/workloads.h"

namespace vscaler::controller {
namespace {

using nlohmann::json;
namespace resources = kube::resources;

constexpr const char* kPartialObjectMetadata =
    "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1";
constexpr const char* kPartialObjectMetadataList =
    "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1";

WorkloadMeta meta_of(const json& object) {
  WorkloadMeta meta;
  auto found = object.find("metadata");
  if (found == object.end() || !found->is_object()) return meta;
  const json& metadata = *found;
  meta.name = metadata.value("name", "");
  meta.uid = metadata.value("uid", "");
  meta.generation = metadata.value("generation", int64_t{0});
  return meta;
}

/// The API resource of a workload kind; an unsupported kind (parse_scaler refuses them) is an
/// error value, never a request.
kube::Result<const kube::ResourceType*, kube::ApiError> resource_of(std::string_view kind) {
  const kube::ResourceType* type = kube::workload_resource(kind);
  if (type == nullptr) {
    kube::ApiError error;
    error.message = "workload kind " + std::string(kind) + " is not supported";
    return kube::fail(std::move(error));
  }
  return type;
}

}  // namespace

ApiResult KubeReconcileApi::get_workload(const std::string& ns, const api::TargetRef& target,
                                         std::chrono::milliseconds timeout) {
  auto type = resource_of(target.kind);
  if (!type.ok()) return kube::fail(std::move(type).error());
  kube::GetOptions options;
  options.timeout = timeout;
  return client_.get(**type, ns, target.name, options);
}

ApiResult KubeReconcileApi::patch_workload(const std::string& ns, const api::TargetRef& target,
                                           const json& patch) {
  auto type = resource_of(target.kind);
  if (!type.ok()) return kube::fail(std::move(type).error());
  kube::WriteOptions options;
  options.field_manager = kFieldManager;
  return client_.patch(**type, ns, target.name, kube::PatchType::kStrategicMerge, patch, options);
}

ApiResult KubeReconcileApi::list_pods(const std::string& ns, const std::string& label_selector) {
  kube::ListOptions options;
  options.label_selector = label_selector;
  // Only what a resize decision reads is kept of each pod (a pod's managedFields and most of its
  // spec are larger than the rest): of its managedFields, who resized it (a boost's end reads
  // it); of its annotations, only a startup boost's record.
  options.transform = [](json& pod) {
    kube::keep_managers_of(pod, "resize");
    if (auto metadata = pod.find("metadata"); metadata != pod.end() && metadata->is_object()) {
      auto annotations = metadata->find("annotations");
      if (annotations == metadata->end()) return;
      auto record = annotations->is_object() ? annotations->find(api::kStartupBoostAnnotation)
                                             : annotations->end();
      if (record == annotations->end()) {
        metadata->erase(annotations);
        return;
      }
      json kept = json::object();
      kept[std::string(api::kStartupBoostAnnotation)] = std::move(*record);
      *annotations = std::move(kept);
    }
  };
  auto listed = client_.list(resources::kPods, ns, options);
  if (!listed.ok()) return kube::fail(std::move(listed).error());
  return json{{"items", std::move(listed->items)}};
}

ApiResult KubeReconcileApi::resize_pod(const std::string& ns, const std::string& name,
                                       const json& patch) {
  kube::WriteOptions options;
  options.field_manager = kFieldManager;
  return client_.patch(resources::kPods, ns, name, kube::PatchType::kStrategicMerge, patch, options,
                       "resize");
}

ApiResult KubeReconcileApi::evict_pod(const std::string& ns, const std::string& name,
                                      const std::string& uid) {
  kube::HttpRequest request;
  request.method = "POST";
  request.target = resources::kPods.path(ns, name, "eviction");
  json eviction = {{"apiVersion", "policy/v1"},
                   {"kind", "Eviction"},
                   {"metadata", {{"name", name}, {"namespace", ns}}}};
  if (!uid.empty()) eviction["deleteOptions"] = {{"preconditions", {{"uid", uid}}}};
  request.body = eviction.dump();
  return client_.call(request);
}

ApiResult KubeReconcileApi::get_scaler(const std::string& ns, const std::string& name) {
  return client_.get(resources::kVerticalScalers, ns, name);
}

ApiResult KubeReconcileApi::patch_scaler_status(const std::string& ns, const std::string& name,
                                                const json& merge_patch) {
  kube::WriteOptions options;
  options.field_manager = kFieldManager;
  return client_.patch_status(resources::kVerticalScalers, ns, name, kube::PatchType::kMerge,
                              merge_patch, options);
}

void KubeReconcileApi::record_event(const api::Scaler& scaler, bool warning,
                                    const std::string& reason, const std::string& message) {
  // Queued, never written here: an Event must not hold up (or fail) the reconcile.
  if (events_ != nullptr) {
    events_->record(
        {scaler.ns, scaler.name, scaler.uid, scaler.resource_version, warning, reason, message});
  }
}

kube::Result<std::vector<WorkloadMeta>, kube::ApiError> KubeResyncApi::list_workloads(
    const std::string& ns, const std::string& kind, int& calls) {
  auto type = resource_of(kind);
  if (!type.ok()) return kube::fail(std::move(type).error());
  // Paged: a page of metadata is ~2.7 KB per workload on the wire (managedFields included), and
  // its parser takes ~4 bytes per byte of it while only the WorkloadMeta of each item is kept.
  // So the memory a resync needs is set by the page, not by the namespace's size.
  constexpr int kMaxRestarts = 3;
  for (int restart = 0;; ++restart) {
    std::vector<WorkloadMeta> result;
    std::string continue_token;
    for (;;) {
      kube::HttpRequest request;
      // A consistent list, not resourceVersion=0: the API server (v1.36 too) ignores `limit`
      // for a list at resourceVersion 0 and answers the whole namespace from its watch cache:
      // at 3,000 Deployments an 8 MB body and a ~30 MB parser every resync (heaptrack). A
      // consistent list is served from the watch cache as well (ConsistentListFromCache), at
      // the cost of one read of etcd's current revision, and pages as asked.
      request.target =
          (*type)->path(ns) + "?limit=" + std::to_string(page_limit_) +
          (continue_token.empty() ? "" : "&continue=" + kube::url_encode(continue_token));
      request.accept = kPartialObjectMetadataList;
      ++calls;
      auto body = client_.call_raw(request);
      if (!body.ok()) {
        // An expired continue token (etcd compacted the snapshot): start over.
        if (kube::is_expired(body.error()) && !continue_token.empty() && restart < kMaxRestarts) {
          break;
        }
        return kube::fail(std::move(body).error());
      }
      auto page = parse_metadata_page(*body, result);
      if (!page.ok()) {
        return kube::fail(kube::make_error(
            kube::ErrorKind::kDecode,
            "metadata list of " + (*type)->display() + " in " + ns + ": " + page.error()));
      }
      if (page->malformed > 0) {
        log::warn("resync", "skipping malformed items of a metadata list",
                  {{"namespace", ns}, {"kind", kind}, {"items", std::to_string(page->malformed)}});
      }
      if (page->continue_token.empty()) return result;
      continue_token = std::move(page->continue_token);
    }
  }
}

kube::Result<WorkloadMeta, kube::ApiError> KubeResyncApi::get_workload(const std::string& ns,
                                                                       const std::string& kind,
                                                                       const std::string& name) {
  auto type = resource_of(kind);
  if (!type.ok()) return kube::fail(std::move(type).error());
  kube::HttpRequest request;
  request.target = (*type)->path(ns, name);
  request.accept = kPartialObjectMetadata;
  auto object = client_.call(request);
  if (!object.ok()) return kube::fail(std::move(object).error());
  return meta_of(*object);
}

}  // namespace vscaler::controller

namespace vscaler::controller {

kube::Result<std::vector<LabelledNamespace>, kube::ApiError> KubeOptInApi::labelled_namespaces() {
  kube::ListOptions options;
  options.label_selector = std::string(api::kRecommendLabel) + "=true";
  auto list = client_.list_metadata(kube::resources::kNamespaces, "", options);
  if (!list.ok()) return kube::fail(std::move(list).error());
  std::vector<LabelledNamespace> names;
  for (const auto& item : list->items) {
    std::string name = kube::meta_string(item, "name");
    if (name.empty()) continue;
    names.push_back({std::move(name), !kube::meta_string(item, "deletionTimestamp").empty()});
  }
  return names;
}

kube::Result<kube::Unit, kube::ApiError> KubeOptInApi::create_scaler(const nlohmann::json& object) {
  kube::WriteOptions options;
  options.field_manager = kFieldManager;
  auto created = client_.create(kube::resources::kVerticalScalers, "", object, options);
  if (!created.ok()) return kube::fail(std::move(created).error());
  return kube::Unit{};
}

kube::Result<kube::Unit, kube::ApiError> KubeOptInApi::delete_scaler(const std::string& ns,
                                                                     const std::string& name,
                                                                     const std::string& uid) {
  kube::DeleteOptions options;
  options.precondition_uid = uid;
  auto removed = client_.remove(kube::resources::kVerticalScalers, ns, name, options);
  if (!removed.ok()) return kube::fail(std::move(removed).error());
  return kube::Unit{};
}

}  // namespace vscaler::controller
