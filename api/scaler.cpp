#include "api/scaler.h"

#include <set>
#include <tuple>

#include "api/namespace_scalers.h"
#include "api/packed_text.h"
#include "kube/json_projection.h"
#include "kube/object_meta.h"
#include "kube/workloads.h"

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
  TargetRef target;
  UpdateMode update_mode = UpdateMode::kAuto;
  std::vector<ContainerResources> containers;
  std::optional<StartupBoost> startup_boost;
};

/// spec.startupBoost or spec.containers[i].startupBoost at `path`: {cpu: {type: Factor, factor}
/// or {type: Quantity, quantity}, durationSeconds}. nullopt (with errors) when unusable.
std::optional<StartupBoost> parse_startup_boost(const json& boost, const std::string& path,
                                                std::vector<std::string>& errors) {
  constexpr std::string_view kShape =
      "{cpu: {type: Factor, factor: 2, durationSeconds: 60}} or {cpu: {type: Quantity, "
      "quantity: \"500m\"}}";
  if (!boost.is_object()) {
    errors.push_back(path + ": must be an object, " + std::string(kShape));
    return std::nullopt;
  }
  for (const auto& [key, value] : boost.items()) {
    if (key != "cpu") {
      errors.push_back(path + "." + key + ": only cpu is boosted; write " + std::string(kShape));
    }
  }
  auto cpu = boost.find("cpu");
  if (cpu == boost.end() || cpu->is_null()) {
    errors.push_back(path + ".cpu: required, " + std::string(kShape));
    return std::nullopt;
  }
  const std::string at = path + ".cpu";
  if (!cpu->is_object()) {
    errors.push_back(at + ": must be an object {type, factor or quantity, durationSeconds}");
    return std::nullopt;
  }
  const std::size_t before = errors.size();
  StartupBoost parsed;
  auto factor = cpu->find("factor");
  auto quantity = cpu->find("quantity");
  const bool has_factor = factor != cpu->end() && !factor->is_null();
  const bool has_quantity = quantity != cpu->end() && !quantity->is_null();
  std::string type;
  if (auto found = cpu->find("type"); found != cpu->end() && !found->is_null()) {
    type = found->is_string() ? found->get<std::string>() : found->dump();
  } else {
    type = has_quantity && !has_factor ? "Quantity" : "Factor";  // inferred, as written
  }
  if (has_factor && has_quantity) {
    errors.push_back(at + ": set factor (type: Factor) or quantity (type: Quantity), not both");
  } else if (type == "Factor") {
    parsed.type = StartupBoost::Type::kFactor;
    if (!has_factor) {
      errors.push_back(at +
                       ".factor: required with type: Factor, an integer of at least 1 (2 "
                       "doubles the CPU while the pod starts)");
    } else if (!factor->is_number_integer() || factor->get<int64_t>() < 1) {
      errors.push_back(at + ".factor: " + factor->dump() +
                       " is not an integer of at least 1 (2 doubles the CPU while the pod "
                       "starts)");
    } else if (factor->get<int64_t>() > 100) {
      errors.push_back(at + ".factor: " + factor->dump() + " is more than 100");
    } else {
      parsed.factor = factor->get<int64_t>();
    }
    if (has_quantity) errors.push_back(at + ".quantity: only with type: Quantity");
  } else if (type == "Quantity") {
    parsed.type = StartupBoost::Type::kQuantity;
    if (!has_quantity) {
      errors.push_back(at +
                       ".quantity: required with type: Quantity, the CPU added to the "
                       "base while the pod starts (\"500m\")");
    } else if (auto value = quantity_from_json(*quantity); !value.ok()) {
      errors.push_back(at + ".quantity: " + value.error());
    } else if (value->nanos() <= 0) {
      errors.push_back(at + ".quantity: must be more than zero, got " + value->to_string());
    } else {
      parsed.quantity = *value;
    }
    if (has_factor) errors.push_back(at + ".factor: only with type: Factor");
  } else {
    errors.push_back(at + ".type: \"" + type + "\" is not one of Factor, Quantity");
  }
  if (auto duration = cpu->find("durationSeconds");
      duration != cpu->end() && !duration->is_null()) {
    if (!duration->is_number_integer() || duration->get<int64_t>() < 0) {
      errors.push_back(at + ".durationSeconds: " + duration->dump() +
                       " is not a whole number of seconds of at least 0 (0: until the pod is "
                       "Ready)");
    } else if (duration->get<int64_t>() > 86'400) {
      errors.push_back(at + ".durationSeconds: " + duration->dump() +
                       " is more than a day (86400); a boost is for the start of a pod");
    } else {
      parsed.duration_seconds = duration->get<int64_t>();
    }
  }
  for (const auto& [key, value] : cpu->items()) {
    if (key != "type" && key != "factor" && key != "quantity" && key != "durationSeconds") {
      errors.push_back(at + "." + key + ": unknown field; write " + std::string(kShape));
    }
  }
  if (errors.size() != before) return std::nullopt;
  return parsed;
}

/// The hint for a boolean where a mode belongs: YAML 1.1 (kubectl) reads an unquoted Off as
/// false, and the user otherwise reads only "Unsupported value: false".
std::string unquoted_off_hint(const std::string& field, const json& value) {
  return field + ": got the boolean " + value.dump() + ", not a mode: YAML reads an unquoted " +
         "Off as false; write " + field.substr(field.rfind('.') + 1) + ": \"Off\" (quoted)";
}

/// The target: spec.deploymentName (a Deployment), or spec.targetRef of a supported kind
/// (kube::workload_kinds). Exactly one.
void parse_target(const json& spec, ParsedSpec& parsed, std::vector<std::string>& errors) {
  auto name = spec.find("deploymentName");
  auto ref = spec.find("targetRef");
  bool has_name = name != spec.end() && !name->is_null();
  bool has_ref = ref != spec.end() && !ref->is_null();
  if (has_name == has_ref) {
    errors.push_back(std::string(has_name ? "spec.targetRef" : "spec.deploymentName") +
                     ": set exactly one of spec.deploymentName (a Deployment) and spec.targetRef "
                     "({apiVersion: apps/v1, kind: Deployment|StatefulSet|DaemonSet, name: ...})");
    return;
  }
  std::string field = "spec.deploymentName";
  const json* target_name = has_name ? &*name : nullptr;
  if (has_ref) {
    if (!ref->is_object()) {
      errors.push_back("spec.targetRef: must be an object {apiVersion, kind, name}");
      return;
    }
    std::string api_version = ref->value("apiVersion", json()).is_string()
                                  ? ref->at("apiVersion").get<std::string>()
                                  : std::string();
    std::string kind =
        ref->value("kind", json()).is_string() ? ref->at("kind").get<std::string>() : "";
    if (api_version != kube::kWorkloadApiVersion) {
      errors.push_back("spec.targetRef.apiVersion: \"" + api_version +
                       "\" is not supported; use apps/v1");
    }
    if (kube::workload_resource(kind) == nullptr) {
      errors.push_back("spec.targetRef.kind: \"" + kind +
                       "\" is not supported; use Deployment, StatefulSet or DaemonSet");
    } else {
      parsed.target.kind = kind;
    }
    field = "spec.targetRef.name";
    auto ref_name = ref->find("name");
    target_name = ref_name == ref->end() ? nullptr : &*ref_name;
  }
  if (target_name == nullptr || !target_name->is_string() ||
      target_name->get_ref<const std::string&>().empty()) {
    errors.push_back(field + ": required, the name of the workload");
  } else if (!is_dns1123_subdomain(target_name->get_ref<const std::string&>())) {
    errors.push_back(field + ": \"" + target_name->get<std::string>() +
                     "\" is not a valid DNS-1123 subdomain");
  } else {
    parsed.target.name = target_name->get<std::string>();
  }
}

void parse_update_mode(const json& spec, ParsedSpec& parsed, std::vector<std::string>& errors) {
  auto mode = spec.find("updateMode");
  if (mode == spec.end() || mode->is_null()) return;
  if (mode->is_boolean()) {
    errors.push_back(unquoted_off_hint("spec.updateMode", *mode));
    return;
  }
  std::string text = mode->is_string() ? mode->get<std::string>() : mode->dump();
  if (text == "Auto") {
    parsed.update_mode = UpdateMode::kAuto;
  } else if (text == "Reconcile") {
    parsed.update_mode = UpdateMode::kReconcile;
  } else if (text == "Initial") {
    parsed.update_mode = UpdateMode::kInitial;
  } else if (text == "Off") {
    parsed.update_mode = UpdateMode::kOff;
  } else if (text == "InPlaceOrRecreate") {
    parsed.update_mode = UpdateMode::kInPlaceOrRecreate;
  } else if (text == "InPlace") {
    parsed.update_mode = UpdateMode::kInPlace;
  } else {
    errors.push_back("spec.updateMode: \"" + text +
                     "\" is not one of Auto, Reconcile, Initial, InPlaceOrRecreate, InPlace, "
                     "\"Off\"");
  }
}

/// The recommendation policy of one entry (minAllowed, maxAllowed, controlledResources,
/// controlledValues) and its mode; `has_policy` tells whether any policy field was set.
void parse_policy(const json& item, const std::string& path, ContainerResources& entry,
                  bool& has_policy, std::vector<std::string>& errors) {
  if (auto mode = item.find("mode"); mode != item.end() && !mode->is_null()) {
    if (mode->is_boolean()) {
      errors.push_back(unquoted_off_hint(path + ".mode", *mode));
    } else if (*mode == "Off") {
      entry.off = true;
    } else if (*mode != "Auto") {
      errors.push_back(path + ".mode: " + mode->dump() + " is not one of Auto, \"Off\"");
    }
  }
  if (auto min = item.find("minAllowed"); min != item.end() && !min->is_null()) {
    has_policy = true;
    entry.min_allowed = parse_resource_map(*min, path + ".minAllowed", errors);
  }
  if (auto max = item.find("maxAllowed"); max != item.end() && !max->is_null()) {
    has_policy = true;
    entry.max_allowed = parse_resource_map(*max, path + ".maxAllowed", errors);
  }
  for (const auto& [resource, min] : entry.min_allowed) {
    auto max = entry.max_allowed.find(resource);
    if (max != entry.max_allowed.end() && min > max->second) {
      errors.push_back(path + ".minAllowed." + resource + ": " + min.to_string() +
                       " exceeds maxAllowed " + max->second.to_string());
    }
  }
  if (auto resources = item.find("controlledResources");
      resources != item.end() && !resources->is_null()) {
    has_policy = true;
    entry.controls_cpu = entry.controls_memory = false;
    if (!resources->is_array()) {
      errors.push_back(path + ".controlledResources: must be a list of cpu and/or memory");
    } else {
      for (std::size_t i = 0; i < resources->size(); ++i) {
        const json& resource = (*resources)[i];
        if (resource == "cpu") {
          entry.controls_cpu = true;
        } else if (resource == "memory") {
          entry.controls_memory = true;
        } else {
          errors.push_back(path + ".controlledResources[" + std::to_string(i) +
                           "]: " + resource.dump() + " is not one of cpu, memory");
        }
      }
    }
  }
  if (auto values = item.find("controlledValues"); values != item.end() && !values->is_null()) {
    has_policy = true;
    if (*values == "RequestsAndLimits") {
      entry.controlled_values = ControlledValues::kRequestsAndLimits;
    } else if (*values == "RequestsOnly") {
      entry.controlled_values = ControlledValues::kRequestsOnly;
    } else {
      errors.push_back(path + ".controlledValues: " + values->dump() +
                       " is not one of RequestsAndLimits, RequestsOnly");
    }
  }
}

ParsedSpec parse_spec(const json& spec, std::vector<std::string>& errors) {
  ParsedSpec parsed;
  if (!spec.is_object()) {
    errors.push_back("spec: required, must be an object");
    return parsed;
  }
  parse_target(spec, parsed, errors);
  parse_update_mode(spec, parsed, errors);
  if (auto boost = spec.find("startupBoost"); boost != spec.end() && !boost->is_null()) {
    parsed.startup_boost = parse_startup_boost(*boost, "spec.startupBoost", errors);
  }

  auto containers = spec.find("containers");
  if (containers == spec.end() || containers->is_null()) return parsed;  // all, from usage
  if (!containers->is_array()) {
    errors.push_back("spec.containers: must be a list of container entries");
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
    bool has_policy = false;
    parse_policy(item, path, entry, has_policy, errors);
    const bool has_boost = item.contains("startupBoost") && !item["startupBoost"].is_null();
    if (has_boost) {
      entry.startup_boost =
          parse_startup_boost(item["startupBoost"], path + ".startupBoost", errors);
    }
    bool has_fixed = item.contains("requests") || item.contains("limits");
    if (has_fixed && has_policy) {
      errors.push_back(path +
                       ": an entry has fixed values (requests, limits) or a "
                       "recommendation policy (minAllowed, maxAllowed, controlledResources, "
                       "controlledValues), not both");
    }
    if (entry.off && (has_fixed || has_policy || has_boost)) {
      errors.push_back(path +
                       ".mode: an entry with mode \"Off\" leaves its container alone "
                       "and carries nothing else");
    }
    parsed.containers.push_back(std::move(entry));
  }
  return parsed;
}

/// Keeps `status` in `scaler` as compact text: the recommendation apart, the rest in one string
/// (the keys in the order a DOM dump gives, so status() reads back the same object).
void store_status(const json& status, Scaler& scaler) {
  if (status.is_null()) return;
  if (!status.is_object()) {
    scaler.packed_status = pack_status_text(status.dump());
    return;
  }
  std::string rest = "{";
  for (auto item = status.begin(); item != status.end(); ++item) {
    if (item.key() == "recommendation") {
      scaler.stored_recommendation = item.value().dump();
      scaler.stored_recommendation.shrink_to_fit();
      continue;
    }
    if (rest.size() > 1) rest += ',';
    rest += json(item.key()).dump();
    rest += ':';
    rest += item.value().dump();
  }
  rest += '}';
  scaler.packed_status = pack_status_text(rest);
}

}  // namespace

std::string_view to_string(UpdateMode mode) {
  switch (mode) {
    case UpdateMode::kAuto:
      return "Auto";
    case UpdateMode::kReconcile:
      return "Reconcile";
    case UpdateMode::kInitial:
      return "Initial";
    case UpdateMode::kOff:
      return "Off";
    case UpdateMode::kInPlaceOrRecreate:
      return "InPlaceOrRecreate";
    case UpdateMode::kInPlace:
      return "InPlace";
  }
  return "Auto";
}

const ContainerResources* Scaler::entry_for(std::string_view container) const {
  static const ContainerResources kFromUsage = [] {
    ContainerResources entry;
    entry.name = std::string(kWildcard);
    return entry;
  }();
  if (containers.empty()) return &kFromUsage;
  const ContainerResources* wildcard = nullptr;
  for (const auto& entry : containers) {
    if (entry.name == container) return &entry;
    if (entry.name == kWildcard) wildcard = &entry;
  }
  return wildcard;
}

const StartupBoost* Scaler::boost_for(std::string_view container) const {
  const ContainerResources* entry = entry_for(container);
  if (entry == nullptr || entry->off) return nullptr;
  if (entry->startup_boost) return &*entry->startup_boost;
  return startup_boost ? &*startup_boost : nullptr;
}

bool Scaler::boosts() const {
  if (startup_boost) return true;
  for (const auto& entry : containers) {
    if (entry.startup_boost) return true;
  }
  return false;
}

kube::Quantity StartupBoost::boosted(const kube::Quantity& base) const {
  if (type == Type::kQuantity) return kube::Quantity::from_nanos(base.nanos() + quantity.nanos());
  return kube::Quantity::from_nanos(base.nanos() * factor);
}

std::string StartupBoost::describe() const {
  std::string out = type == Type::kQuantity ? "+" + quantity.to_string() + " CPU"
                                            : "CPU x" + std::to_string(factor);
  return out + (duration_seconds == 0
                    ? " until Ready"
                    : " until " + std::to_string(duration_seconds) + " s after Ready");
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
    // A person's scaler before a made one, whatever their ages; then the oldest.
    if (active == nullptr ||
        std::tie(candidate->made_for_namespace, candidate->creation_timestamp, candidate->name) <
            std::tie(active->made_for_namespace, active->creation_timestamp, active->name)) {
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
  scaler.target = std::move(parsed.target);
  // Made: the label, and the name vscaler gives its target's made scaler. A person's copy of a
  // made scaler (kubectl get -o yaml, renamed, applied) keeps the label, and one edited to
  // target another workload keeps its name: both are a person's now, never deleted by vscaler
  // nor losing to a made one.
  scaler.made_for_namespace =
      is_made_scaler(object) &&
      scaler.name == made_scaler_name(scaler.target.kind, scaler.target.name);
  scaler.update_mode = parsed.update_mode;
  scaler.containers = std::move(parsed.containers);
  scaler.startup_boost = parsed.startup_boost;
  if (auto status = object.find("status"); status != object.end()) store_status(*status, scaler);
  return scaler;
}

bool Scaler::status_counts_boosted_pods() const {
  if (packed_status.empty()) return false;
  const std::string text = unpack_status_text(packed_status);
  if (text.find("\"startupBoost\"") == std::string::npos) return false;
  const json status = json::parse(text, nullptr, false);
  const json* boosted = kube::find_path(status, {"startupBoost", "boosted"});
  return boosted != nullptr && boosted->is_number_integer() && boosted->get<int64_t>() > 0;
}

json Scaler::status() const {
  if (packed_status.empty()) return json();
  json status = json::parse(unpack_status_text(packed_status), nullptr, false);
  if (status.is_discarded()) return json();
  if (!stored_recommendation.empty() && status.is_object()) {
    status["recommendation"] = recommendation();
  }
  return status;
}

json recommendation_targets(const json& recommendation) {
  json targets = json::array();
  if (!recommendation.is_object()) return targets;
  auto list = recommendation.find("containerRecommendations");
  if (list == recommendation.end() || !list->is_array()) return targets;
  for (const auto& container : *list) {
    if (!container.is_object()) continue;
    targets.push_back({container.value("containerName", ""), container.value("target", json())});
  }
  return targets;
}

json Scaler::recommendation() const {
  if (stored_recommendation.empty()) return json();
  // simdjson and a tree of what it parsed: about half of nlohmann's own parse (2.8 against 5.2 us
  // for a recommendation of 2 containers, 442 bytes), and the admission hooks read it for every
  // review of a recommended scaler's workload and pods. The thread's parser keeps buffers for
  // the largest recommendation up to 64 KiB.
  thread_local kube::ProjectingParser parser(64 * 1024);
  auto parsed = parser.parse(stored_recommendation, 0, kube::keep_everything());
  return parsed.ok() ? std::move(parsed).value() : json();
}

}  // namespace vscaler::api
