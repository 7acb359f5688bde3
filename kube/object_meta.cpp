#include "kube/object_meta.h"

#include <algorithm>

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

bool written_through(const json& object, std::string_view subresource) {
  const json* managed = find_path(object, {"metadata", "managedFields"});
  if (managed == nullptr || !managed->is_array()) return false;
  return std::any_of(managed->begin(), managed->end(), [&](const json& entry) {
    auto found = entry.is_object() ? entry.find("subresource") : entry.end();
    return found != entry.end() && found->is_string() &&
           found->get_ref<const std::string&>() == subresource;
  });
}

void keep_managers_of(json& object, std::string_view subresource) {
  auto metadata = object.find("metadata");
  if (metadata == object.end() || !metadata->is_object()) return;
  auto managed = metadata->find("managedFields");
  if (managed == metadata->end()) return;
  json kept = json::array();
  if (managed->is_array()) {
    for (json& entry : *managed) {
      auto found = entry.is_object() ? entry.find("subresource") : entry.end();
      if (found == entry.end() || !found->is_string() ||
          found->get_ref<const std::string&>() != subresource) {
        continue;
      }
      auto manager = entry.find("manager");
      kept.push_back(
          {{"manager", manager != entry.end() && manager->is_string() ? *manager : json("")},
           {"subresource", std::move(*found)}});
    }
  }
  if (kept.empty()) {
    metadata->erase(managed);
  } else {
    *managed = std::move(kept);
  }
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
