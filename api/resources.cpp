#include "api/resources.h"

namespace vscaler::api {
namespace {

using nlohmann::json;

const json& containers_of(const json& deployment) {
  static const json kEmpty = json::array();
  // A malformed object simply has no containers: nothing to plan, nothing written.
  const json* node = &deployment;
  for (const char* key : {"spec", "template", "spec", "containers"}) {
    if (!node->is_object()) return kEmpty;
    auto it = node->find(key);
    if (it == node->end()) return kEmpty;
    node = &*it;
  }
  return node->is_array() ? *node : kEmpty;
}

/// A stored quantity value (string or number); nullopt when unparsable.
std::optional<kube::Quantity> stored_quantity(const json& value) {
  kube::Result<kube::Quantity> parsed =
      value.is_string() ? kube::Quantity::parse(value.get_ref<const std::string&>())
                        : kube::Quantity::parse(value.dump());
  if (!parsed.ok()) return std::nullopt;
  return *parsed;
}

/// Sets each declared key of `declared` into merged[section]; records changes and overrides.
void apply_section(const ResourceMap& declared, const char* section, ContainerPlan& plan) {
  if (declared.empty()) return;
  json& target = plan.merged[section];
  if (!target.is_object()) target = json::object();
  for (const auto& [resource, quantity] : declared) {
    auto existing = target.find(resource);
    if (existing != target.end()) {
      auto value = stored_quantity(*existing);
      if (value && *value == quantity) continue;  // equal by value: keep the stored text
      plan.overridden.push_back(
          std::string(section) + "." + resource + "=" +
          (existing->is_string() ? existing->get<std::string>() : existing->dump()));
    }
    target[resource] = quantity.to_string();
    plan.changed = true;
  }
}

/// requests <= limits for every resource present in both, whoever set them.
std::string check_valid(const ContainerPlan& plan) {
  auto requests = plan.merged.find("requests");
  auto limits = plan.merged.find("limits");
  if (requests == plan.merged.end() || limits == plan.merged.end() || !requests->is_object() ||
      !limits->is_object()) {
    return {};
  }
  for (const auto& [resource, request_value] : requests->items()) {
    auto limit_value = limits->find(resource);
    if (limit_value == limits->end()) continue;
    auto request = stored_quantity(request_value);
    auto limit = stored_quantity(*limit_value);
    if (request && limit && *request > *limit) {
      return "container " + plan.name + ": requests." + resource + " " + request->to_string() +
             " would exceed limits." + resource + " " + limit->to_string();
    }
  }
  return {};
}

}  // namespace

bool ResourcePlan::changed() const {
  for (const auto& container : containers) {
    if (container.changed) return true;
  }
  return false;
}

ResourcePlan plan_resources(const Scaler& scaler, const json& deployment) {
  ResourcePlan plan;
  const json& containers = containers_of(deployment);
  for (std::size_t i = 0; i < containers.size(); ++i) {
    const json& container = containers[i];
    if (!container.is_object()) continue;
    auto name = container.find("name");
    if (name == container.end() || !name->is_string()) continue;
    const ContainerResources* entry = scaler.entry_for(name->get_ref<const std::string&>());
    if (entry == nullptr) continue;
    ContainerPlan item;
    item.index = i;
    item.name = name->get<std::string>();
    auto resources = container.find("resources");
    item.current =
        resources != container.end() && resources->is_object() ? *resources : json::object();
    item.merged = item.current;
    apply_section(entry->requests, "requests", item);
    apply_section(entry->limits, "limits", item);
    if (plan.invalid.empty()) plan.invalid = check_valid(item);
    plan.containers.push_back(std::move(item));
  }
  for (const auto& entry : scaler.containers) {
    if (entry.name == kWildcard) continue;
    bool found = false;
    for (const auto& item : plan.containers) found = found || item.name == entry.name;
    if (!found) plan.missing.push_back(entry.name);
  }
  return plan;
}

json strategic_merge_patch(const Scaler& scaler, const ResourcePlan& plan) {
  json containers = json::array();
  for (const auto& item : plan.containers) {
    if (!item.changed) continue;
    const ContainerResources* entry = scaler.entry_for(item.name);
    json resources = json::object();
    for (const auto& [resource, quantity] : entry->requests) {
      resources["requests"][resource] = quantity.to_string();
    }
    for (const auto& [resource, quantity] : entry->limits) {
      resources["limits"][resource] = quantity.to_string();
    }
    containers.push_back({{"name", item.name}, {"resources", std::move(resources)}});
  }
  return {{"spec", {{"template", {{"spec", {{"containers", std::move(containers)}}}}}}}};
}

json admission_json_patch(const ResourcePlan& plan) {
  json patch = json::array();
  for (const auto& item : plan.containers) {
    if (!item.changed) continue;
    patch.push_back(
        {{"op", "add"},
         {"path", "/spec/template/spec/containers/" + std::to_string(item.index) + "/resources"},
         {"value", item.merged}});
  }
  return patch;
}

json status_containers(const ResourcePlan& plan, bool merged) {
  json result = json::array();
  for (const auto& item : plan.containers) {
    json entry = {{"name", item.name}};
    const json& resources = merged ? item.merged : item.current;
    for (const char* section : {"requests", "limits"}) {
      auto values = resources.find(section);
      if (values == resources.end() || !values->is_object() || values->empty()) continue;
      json& out = entry[section];
      for (const auto& [resource, value] : values->items()) {
        out[resource] = value.is_string() ? value.get<std::string>() : value.dump();
      }
    }
    result.push_back(std::move(entry));
  }
  return result;
}

}  // namespace vscaler::api
