// autoscaling/v2: spec.scaleTargetRef {apiVersion, kind, name}; spec.metrics[] of type Resource
// ({resource: {name}}) or ContainerResource ({containerResource: {name, container}}).
#include "webhook/hpa_warning.h"

namespace vscaler::webhook {
namespace {

using nlohmann::json;

std::string text_at(const json& object, const char* key) {
  if (!object.is_object()) return {};
  auto found = object.find(key);
  return found != object.end() && found->is_string() ? found->get<std::string>() : std::string();
}

const json& object_at(const json& object, const char* key) {
  static const json kNull;
  if (!object.is_object()) return kNull;
  auto found = object.find(key);
  return found == object.end() ? kNull : *found;
}

}  // namespace

std::vector<std::string> hpa_warnings(const json& list, std::string_view kind,
                                      std::string_view name) {
  std::vector<std::string> warnings;
  const json& items = object_at(list, "items");
  if (!items.is_array()) return warnings;
  for (const json& hpa : items) {
    const json& spec = object_at(hpa, "spec");
    const json& target = object_at(spec, "scaleTargetRef");
    std::string api_version = text_at(target, "apiVersion");
    if (text_at(target, "kind") != kind || text_at(target, "name") != name ||
        (!api_version.empty() && api_version.rfind("apps/", 0) != 0)) {
      continue;
    }
    std::string resources;
    const json& metrics = object_at(spec, "metrics");
    if (!metrics.is_array()) continue;
    for (const json& metric : metrics) {
      std::string resource = text_at(object_at(metric, "resource"), "name");
      if (resource.empty()) resource = text_at(object_at(metric, "containerResource"), "name");
      if ((resource == "cpu" || resource == "memory") &&
          resources.find(resource) == std::string::npos) {
        resources += (resources.empty() ? "" : " and ") + resource;
      }
    }
    if (resources.empty()) continue;
    warnings.push_back("HorizontalPodAutoscaler " + text_at(object_at(hpa, "metadata"), "name") +
                       " scales " + std::string(kind) + " " + std::string(name) + " on " +
                       resources + ": it and vscaler would fight over the same usage");
  }
  return warnings;
}

}  // namespace vscaler::webhook
