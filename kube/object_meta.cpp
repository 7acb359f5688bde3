#include "kube/object_meta.h"

namespace vscaler::kube {

using nlohmann::json;

const json* find_path(const json& object, std::initializer_list<const char*> path) {
  const json* node = &object;
  for (const char* key : path) {
    if (!node->is_object()) return nullptr;
    auto it = node->find(key);
    if (it == node->end()) return nullptr;
    node = &*it;
  }
  return node;
}

std::string string_at(const json& object, std::initializer_list<const char*> path) {
  const json* node = find_path(object, path);
  return node != nullptr && node->is_string() ? node->get<std::string>() : std::string();
}

std::string meta_string(const json& object, const char* field) {
  return string_at(object, {"metadata", field});
}

int64_t meta_generation(const json& object) {
  const json* node = find_path(object, {"metadata", "generation"});
  return node != nullptr && node->is_number_integer() ? node->get<int64_t>() : 0;
}

std::string object_key(const json& object) {
  std::string name = meta_string(object, "name");
  if (name.empty()) return {};
  std::string ns = meta_string(object, "namespace");
  return ns.empty() ? name : ns + "/" + name;
}

bool has_annotation(const json& object, std::string_view key) {
  const json* annotations = find_path(object, {"metadata", "annotations"});
  return annotations != nullptr && annotations->is_object() && annotations->contains(key);
}

json add_annotations_patch(
    const json& object, const std::vector<std::pair<std::string_view, std::string>>& annotations) {
  json patch = json::array();
  if (annotations.empty()) return patch;
  const json* existing = find_path(object, {"metadata", "annotations"});
  if (existing == nullptr || !existing->is_object()) {
    json all = json::object();
    for (const auto& [key, value] : annotations) all[std::string(key)] = value;
    patch.push_back({{"op", "add"}, {"path", "/metadata/annotations"}, {"value", std::move(all)}});
    return patch;
  }
  for (const auto& [key, value] : annotations) {
    // nlohmann's json_pointer escapes the key ("/" is written "~1").
    const json::json_pointer path = json::json_pointer("/metadata/annotations") / std::string(key);
    patch.push_back({{"op", "add"}, {"path", path.to_string()}, {"value", value}});
  }
  return patch;
}

}  // namespace vscaler::kube
