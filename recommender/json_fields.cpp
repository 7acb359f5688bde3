// Checked JSON field access for the recommender's parsers.
#include "recommender/json_fields.h"

namespace vscaler::recommender {

const nlohmann::json* child(const nlohmann::json& object, const char* key) {
  if (!object.is_object()) return nullptr;
  auto it = object.find(key);
  return it == object.end() ? nullptr : &*it;
}

std::string_view string_field(const nlohmann::json& object, const char* key) {
  const auto* value = child(object, key);
  if (!value || !value->is_string()) return {};
  return value->get_ref<const std::string&>();
}

kube::Result<ResourceMap> resource_list(const nlohmann::json* list, const std::string& path) {
  ResourceMap out;
  if (!list || list->is_null()) return out;
  if (!list->is_object()) return kube::fail(path + ": must be an object");
  for (const char* resource : {kCpu, kMemory}) {
    const auto* value = child(*list, resource);
    if (!value) continue;
    std::string text;
    if (value->is_string()) {
      text = value->get<std::string>();
    } else if (value->is_number_integer()) {
      text = std::to_string(value->get<std::int64_t>());
    } else {
      return kube::fail(path + "." + resource + ": must be a quantity string");
    }
    auto q = kube::Quantity::parse(text);
    if (!q.ok()) return kube::fail(path + "." + resource + ": " + q.error());
    if (q->is_negative()) return kube::fail(path + "." + resource + ": must not be negative");
    out[resource] = *q;
  }
  return out;
}

}  // namespace vscaler::recommender
