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

}  // namespace vscaler::kube
