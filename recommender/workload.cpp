// Workload parsing for the metrics source.
#include "recommender/workload.h"

#include "kube/workloads.h"
#include "recommender/json_fields.h"
#include "recommender/selector.h"

namespace vscaler::recommender {

const kube::ResourceType* workload_resource(std::string_view kind) {
  return kube::workload_resource(kind);  // the one kind table, shared with the operator
}

const kube::JsonProjection& workload_projection() {
  static const kube::JsonProjection projection = *kube::JsonProjection::parse({
      "/metadata/name",
      "/metadata/uid",
      "/spec/selector",
      "/spec/template/spec/containers/*/name",
      "/spec/template/spec/containers/*/resources",
  });
  return projection;
}

kube::Result<WorkloadInfo> parse_workload(const nlohmann::json& object, std::string_view kind) {
  WorkloadInfo info;
  info.ref.kind = std::string(kind);
  const auto* metadata = child(object, "metadata");
  if (!metadata) return kube::fail("metadata: is required");
  info.ref.name = std::string(string_field(*metadata, "name"));
  info.ref.uid = std::string(string_field(*metadata, "uid"));
  if (info.ref.name.empty()) return kube::fail("metadata.name: is required");
  if (info.ref.uid.empty()) return kube::fail("metadata.uid: is required");
  const auto* spec = child(object, "spec");
  const auto* selector = spec ? child(*spec, "selector") : nullptr;
  if (!selector) return kube::fail("spec.selector: is required");
  auto parsed = parse_label_selector(*selector);
  if (!parsed.ok()) return kube::fail("spec.selector: " + parsed.error());
  info.label_selector = std::move(parsed).value();
  info.selector = to_query(info.label_selector);
  const auto* pod_template = child(*spec, "template");
  const auto* pod_spec = pod_template ? child(*pod_template, "spec") : nullptr;
  const auto* containers = pod_spec ? child(*pod_spec, "containers") : nullptr;
  if (!containers || !containers->is_array()) {
    return kube::fail("spec.template.spec.containers: must be an array");
  }
  for (std::size_t i = 0; i < containers->size(); ++i) {
    const auto& c = (*containers)[i];
    const std::string path = "spec.template.spec.containers[" + std::to_string(i) + "]";
    PodContainer container;
    container.name = std::string(string_field(c, "name"));
    if (container.name.empty()) return kube::fail(path + ".name: is required");
    const auto* resources = child(c, "resources");
    auto requests = resource_list(resources ? child(*resources, "requests") : nullptr, path,
                                  ".resources.requests");
    if (!requests.ok()) return kube::fail(requests.error());
    auto limits =
        resource_list(resources ? child(*resources, "limits") : nullptr, path, ".resources.limits");
    if (!limits.ok()) return kube::fail(limits.error());
    container.requests = std::move(requests).value();
    container.limits = std::move(limits).value();
    info.template_containers.push_back(std::move(container));
  }
  return info;
}

}  // namespace vscaler::recommender
