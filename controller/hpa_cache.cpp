// autoscaling/v2: spec.scaleTargetRef {apiVersion, kind, name}; spec.metrics[] of type Resource
// ({resource: {name}}) or ContainerResource ({containerResource: {name, container}}).
#include "controller/hpa_cache.h"

#include <set>

namespace vscaler::controller {
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

std::optional<std::string> hpa_warning(const json& hpa, std::string_view kind,
                                       std::string_view name) {
  const json& spec = object_at(hpa, "spec");
  const json& target = object_at(spec, "scaleTargetRef");
  std::string api_version = text_at(target, "apiVersion");
  if (text_at(target, "kind") != kind || text_at(target, "name") != name ||
      (!api_version.empty() && api_version.rfind("apps/", 0) != 0)) {
    return std::nullopt;
  }
  std::string resources;
  const json& metrics = object_at(spec, "metrics");
  if (!metrics.is_array()) return std::nullopt;
  for (const json& metric : metrics) {
    std::string resource = text_at(object_at(metric, "resource"), "name");
    if (resource.empty()) resource = text_at(object_at(metric, "containerResource"), "name");
    if ((resource == "cpu" || resource == "memory") &&
        resources.find(resource) == std::string::npos) {
      resources += (resources.empty() ? "" : " and ") + resource;
    }
  }
  if (resources.empty()) return std::nullopt;
  return "HorizontalPodAutoscaler " + text_at(object_at(hpa, "metadata"), "name") + " scales " +
         std::string(kind) + " " + std::string(name) + " on " + resources +
         ": it and vscaler would fight over the same usage";
}

std::vector<std::string> hpa_warnings(const json& list, std::string_view kind,
                                      std::string_view name) {
  std::vector<std::string> warnings;
  const json& items = object_at(list, "items");
  if (!items.is_array()) return warnings;
  for (const json& hpa : items) {
    if (auto warning = hpa_warning(hpa, kind, name)) warnings.push_back(std::move(*warning));
  }
  return warnings;
}

std::vector<std::string> HpaCache::warnings(std::string_view ns, std::string_view kind,
                                            std::string_view name) const {
  std::vector<std::string> out;
  std::lock_guard lock(mutex_);
  auto found = by_namespace_.find(ns);
  if (found == by_namespace_.end()) return out;
  for (const Entry& entry : found->second) {
    if (entry.kind == kind && entry.name == name) out.push_back(entry.warning);
  }
  return out;
}

int HpaCache::rebuild(const std::vector<std::shared_ptr<const json>>& hpas,
                      std::vector<std::string>* changed) {
  Map next;
  for (const auto& hpa : hpas) {
    if (!hpa) continue;
    const json& metadata = object_at(*hpa, "metadata");
    const json& target = object_at(object_at(*hpa, "spec"), "scaleTargetRef");
    std::string kind = text_at(target, "kind");
    std::string name = text_at(target, "name");
    if (kind.empty() || name.empty()) continue;
    if (auto warning = hpa_warning(*hpa, kind, name)) {
      next[text_at(metadata, "namespace")].push_back({kind, name, std::move(*warning)});
    }
  }
  std::lock_guard lock(mutex_);
  if (changed != nullptr) {
    std::set<std::string_view> namespaces;
    for (const auto& [ns, entries] : next) {
      auto before = by_namespace_.find(ns);
      if (before == by_namespace_.end() || before->second != entries) namespaces.insert(ns);
    }
    for (const auto& [ns, entries] : by_namespace_) {
      if (next.find(ns) == next.end()) namespaces.insert(ns);
    }
    for (auto ns : namespaces) changed->emplace_back(ns);
  }
  by_namespace_ = std::move(next);
  return 0;
}

}  // namespace vscaler::controller
