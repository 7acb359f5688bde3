#include "api/scaler.h"

#include <set>
#include <tuple>

#include "kube/object_meta.h"

namespace vscaler::api {
namespace {

using nlohmann::json;

constexpr std::size_t kMaxContainers = 64;

bool is_dns1123_label(std::string_view s) {
  if (s.empty() || s.size() > 63) return false;
  auto alnum = [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); };
  if (!alnum(s.front()) || !alnum(s.back())) return false;
  for (char c : s) {
    if (!alnum(c) && c != '-') return false;
  }
  return true;
}

bool is_dns1123_subdomain(std::string_view s) {
  if (s.empty() || s.size() > 253) return false;
  std::size_t start = 0;
  while (true) {
    std::size_t dot = s.find('.', start);
    std::string_view label = s.substr(start, dot == std::string_view::npos ? dot : dot - start);
    // Subdomain labels follow the label rules except the 63-character limit per label.
    if (label.empty()) return false;
    for (char c : label) {
      if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-')) return false;
    }
    if (label.front() == '-' || label.back() == '-') return false;
    if (dot == std::string_view::npos) return true;
    start = dot + 1;
  }
}

/// A quantity value from JSON: a string, or an integer written unquoted (int-or-string).
kube::Result<kube::Quantity> quantity_from_json(const json& value) {
  if (value.is_string()) return kube::Quantity::parse(value.get_ref<const std::string&>());
  if (value.is_number_integer()) return kube::Quantity::parse(value.dump());
  return kube::fail("must be a quantity string or an integer, not " +
                    std::string(value.type_name()));
}

/// Validates and parses one requests/limits map; appends errors naming `path`.
ResourceMap parse_resource_map(const json& map, const std::string& path,
                               std::vector<std::string>& errors) {
  ResourceMap result;
  if (!map.is_object()) {
    errors.push_back(path + ": must be a map of resource name to quantity");
    return result;
  }
  for (const auto& [resource, value] : map.items()) {
    std::string field = path + "." + resource;
    if (resource != "cpu" && resource != "memory") {
      errors.push_back(field + ": unknown resource name \"" + resource +
                       "\"; only cpu and memory may be set");
      continue;
    }
    auto quantity = quantity_from_json(value);
    if (!quantity.ok()) {
      errors.push_back(field + ": " + quantity.error());
      continue;
    }
    if (quantity->is_negative()) {
      errors.push_back(field + ": must not be negative, got " + quantity->to_string());
      continue;
    }
    result.emplace(resource, *quantity);
  }
  return result;
}

struct ParsedSpec {
  std::string deployment_name;
  UpdateMode update_mode = UpdateMode::kAuto;
  std::vector<ContainerResources> containers;
};

ParsedSpec parse_spec(const json& spec, std::vector<std::string>& errors) {
  ParsedSpec parsed;
  if (!spec.is_object()) {
    errors.push_back("spec: required, must be an object");
    return parsed;
  }
  auto name = spec.find("deploymentName");
  if (name == spec.end() || !name->is_string() || name->get_ref<const std::string&>().empty()) {
    errors.push_back("spec.deploymentName: required, the name of a Deployment");
  } else if (!is_dns1123_subdomain(name->get_ref<const std::string&>())) {
    errors.push_back("spec.deploymentName: \"" + name->get<std::string>() +
                     "\" is not a valid DNS-1123 subdomain");
  } else {
    parsed.deployment_name = name->get<std::string>();
  }

  auto mode = spec.find("updateMode");
  if (mode != spec.end() && !mode->is_null()) {
    std::string text = mode->is_string() ? mode->get<std::string>() : mode->dump();
    if (text == "Auto") {
      parsed.update_mode = UpdateMode::kAuto;
    } else if (text == "Reconcile") {
      parsed.update_mode = UpdateMode::kReconcile;
    } else if (text == "Off") {
      parsed.update_mode = UpdateMode::kOff;
    } else {
      errors.push_back("spec.updateMode: \"" + text + "\" is not one of Auto, Reconcile, Off");
    }
  }

  auto containers = spec.find("containers");
  if (containers == spec.end() || !containers->is_array() || containers->empty()) {
    errors.push_back("spec.containers: required, at least one container");
    return parsed;
  }
  if (containers->size() > kMaxContainers) {
    errors.push_back("spec.containers: at most 64 entries, got " +
                     std::to_string(containers->size()));
  }
  std::set<std::string, std::less<>> seen;
  for (std::size_t i = 0; i < containers->size() && i < kMaxContainers; ++i) {
    const json& item = (*containers)[i];
    std::string path = "spec.containers[" + std::to_string(i) + "]";
    if (!item.is_object()) {
      errors.push_back(path + ": must be an object");
      continue;
    }
    ContainerResources entry;
    auto entry_name = item.find("name");
    if (entry_name == item.end() || !entry_name->is_string()) {
      errors.push_back(path + ".name: required, a container name or \"*\"");
      continue;
    }
    entry.name = entry_name->get<std::string>();
    if (entry.name != kWildcard && !is_dns1123_label(entry.name)) {
      errors.push_back(path + ".name: \"" + entry.name +
                       "\" is neither \"*\" nor a valid container name (DNS-1123 label)");
    }
    if (!seen.insert(entry.name).second) {
      errors.push_back(path + ".name: duplicate container name \"" + entry.name + "\"");
    }
    if (auto requests = item.find("requests"); requests != item.end() && !requests->is_null()) {
      entry.requests = parse_resource_map(*requests, path + ".requests", errors);
    }
    if (auto limits = item.find("limits"); limits != item.end() && !limits->is_null()) {
      entry.limits = parse_resource_map(*limits, path + ".limits", errors);
    }
    for (const auto& [resource, request] : entry.requests) {
      auto limit = entry.limits.find(resource);
      if (limit != entry.limits.end() && request > limit->second) {
        errors.push_back(path + ".requests." + resource + ": request " + request.to_string() +
                         " exceeds limit " + limit->second.to_string());
      }
    }
    parsed.containers.push_back(std::move(entry));
  }
  return parsed;
}

}  // namespace

std::string_view to_string(UpdateMode mode) {
  switch (mode) {
    case UpdateMode::kAuto:
      return "Auto";
    case UpdateMode::kReconcile:
      return "Reconcile";
    case UpdateMode::kOff:
      return "Off";
  }
  return "Auto";
}

const ContainerResources* Scaler::entry_for(std::string_view container) const {
  const ContainerResources* wildcard = nullptr;
  for (const auto& entry : containers) {
    if (entry.name == container) return &entry;
    if (entry.name == kWildcard) wildcard = &entry;
  }
  return wildcard;
}

std::vector<std::string> validate_scaler_spec(const json& spec) {
  std::vector<std::string> errors;
  parse_spec(spec, errors);
  return errors;
}

const Scaler* select_active(const std::vector<std::shared_ptr<const Scaler>>& scalers) {
  const Scaler* active = nullptr;
  for (const auto& candidate : scalers) {
    if (!candidate) continue;
    if (active == nullptr || std::tie(candidate->creation_timestamp, candidate->name) <
                                 std::tie(active->creation_timestamp, active->name)) {
      active = candidate.get();
    }
  }
  return active;
}

kube::Result<Scaler> parse_scaler(const json& object) {
  if (!object.is_object()) return kube::fail("VerticalScaler: not a JSON object");
  auto metadata = object.find("metadata");
  if (metadata == object.end() || !metadata->is_object()) {
    return kube::fail("metadata: required");
  }
  Scaler scaler;
  scaler.ns = kube::meta_string(object, "namespace");
  scaler.name = kube::meta_string(object, "name");
  if (scaler.name.empty()) return kube::fail("metadata.name: required");
  scaler.uid = kube::meta_string(object, "uid");
  scaler.resource_version = kube::meta_string(object, "resourceVersion");
  scaler.creation_timestamp = kube::meta_string(object, "creationTimestamp");
  scaler.generation = kube::meta_generation(object);
  std::vector<std::string> errors;
  auto spec = object.find("spec");
  ParsedSpec parsed = parse_spec(spec == object.end() ? json() : *spec, errors);
  if (!errors.empty()) {
    std::string message = errors.front();
    for (std::size_t i = 1; i < errors.size(); ++i) message += "; " + errors[i];
    return kube::fail(std::move(message));
  }
  scaler.deployment_name = std::move(parsed.deployment_name);
  scaler.update_mode = parsed.update_mode;
  scaler.containers = std::move(parsed.containers);
  if (auto status = object.find("status"); status != object.end()) scaler.status = *status;
  return scaler;
}

}  // namespace vscaler::api
