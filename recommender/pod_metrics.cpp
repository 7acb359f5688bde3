// PodMetricsList parsing: quantities through kube::Quantity ("312456789n", "409600Ki").
#include "recommender/pod_metrics.h"

#include "base/time.h"
#include "recommender/json_fields.h"

namespace vscaler::recommender {

const kube::JsonProjection& pod_metrics_projection() {
  static const kube::JsonProjection projection = *kube::JsonProjection::parse({
      "/metadata/name",
      "/metadata/namespace",
      "/timestamp",
      "/window",
      "/containers/*/name",
      "/containers/*/usage",
  });
  return projection;
}

kube::Result<PodUsage> parse_pod_metrics(const nlohmann::json& item, const std::string& path) {
  if (!item.is_object()) return kube::fail(path + ": must be an object");
  PodUsage pod;
  const auto* metadata = child(item, "metadata");
  pod.name = metadata ? std::string(string_field(*metadata, "name")) : "";
  pod.namespace_ = metadata ? std::string(string_field(*metadata, "namespace")) : "";
  if (pod.name.empty()) return kube::fail(path + ".metadata.name: is required");
  auto timestamp = parse_rfc3339(string_field(item, "timestamp"));
  if (!timestamp.ok()) return kube::fail(path + ".timestamp: " + timestamp.error());
  pod.timestamp = *timestamp;
  if (const auto* window = child(item, "window"); window && window->is_string()) {
    auto parsed = base::parse_duration(window->get_ref<const std::string&>());
    if (!parsed.ok()) return kube::fail(path + ".window: " + parsed.error());
    pod.window = *parsed;
  }
  const auto* containers = child(item, "containers");
  if (!containers || !containers->is_array()) {
    return kube::fail(path + ".containers: must be an array");
  }
  for (std::size_t i = 0; i < containers->size(); ++i) {
    const auto& c = (*containers)[i];
    const std::string cpath = path + ".containers[" + std::to_string(i) + "]";
    ContainerUsage usage;
    usage.name = std::string(string_field(c, "name"));
    if (usage.name.empty()) return kube::fail(cpath + ".name: is required");
    auto resources = resource_list(child(c, "usage"), cpath, ".usage");
    if (!resources.ok()) return kube::fail(resources.error());
    const auto* cpu = find(*resources, kCpu);
    const auto* memory = find(*resources, kMemory);
    if (!cpu || !memory) return kube::fail(cpath + ".usage: needs cpu and memory");
    // Whole millicores and bytes, as VPA's metrics client reads them (usage in nanocores would
    // fall into a lower histogram bucket than VPA's sample does).
    usage.cpu_cores = whole_millicores(*cpu);
    usage.memory_bytes = whole_bytes(*memory);
    pod.containers.push_back(std::move(usage));
  }
  return pod;
}

kube::Result<PodMetricsParse> parse_pod_metrics_list(const nlohmann::json& list) {
  const auto* items = child(list, "items");
  if (!items || !items->is_array()) {
    return kube::fail("PodMetricsList: items must be an array");
  }
  PodMetricsParse out;
  for (std::size_t i = 0; i < items->size(); ++i) {
    auto pod = parse_pod_metrics((*items)[i], "items[" + std::to_string(i) + "]");
    if (pod.ok()) {
      out.pods.push_back(std::move(pod).value());
    } else {
      out.errors.push_back(pod.error());
    }
  }
  return out;
}

}  // namespace vscaler::recommender
