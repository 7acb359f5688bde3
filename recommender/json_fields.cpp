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

kube::Result<ResourceMap> resource_list(const nlohmann::json* list, std::string_view path,
                                        std::string_view field) {
  ResourceMap out;
  if (!list || list->is_null()) return out;
  auto at = [&](std::string_view resource, std::string_view problem) {
    std::string where(path);
    where.append(field);
    if (!resource.empty()) where.append(".").append(resource);
    return kube::fail(where.append(": ").append(problem));
  };
  if (!list->is_object()) return at({}, "must be an object");
  for (const char* resource : {kCpu, kMemory}) {
    const auto* value = child(*list, resource);
    if (!value) continue;
    std::string digits;
    std::string_view text;
    if (value->is_string()) {
      text = value->get_ref<const std::string&>();
    } else if (value->is_number_integer()) {
      digits = std::to_string(value->get<std::int64_t>());
      text = digits;
    } else {
      return at(resource, "must be a quantity string");
    }
    auto q = kube::Quantity::parse(text);
    if (!q.ok()) return at(resource, q.error());
    if (q->is_negative()) return at(resource, "must not be negative");
    out[resource] = *q;
  }
  return out;
}

}  // namespace vscaler::recommender
