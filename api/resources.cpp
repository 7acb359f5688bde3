#include "api/resources.h"

#include <algorithm>
#include <initializer_list>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace vscaler::api {
namespace {

using nlohmann::json;

/// A stored quantity value (string or number); nullopt when unparsable.
std::optional<kube::Quantity> stored_quantity(const json& value) {
  kube::Result<kube::Quantity> parsed =
      value.is_string() ? kube::Quantity::parse(value.get_ref<const std::string&>())
                        : kube::Quantity::parse(value.dump());
  if (!parsed.ok()) return std::nullopt;
  return *parsed;
}

/// Sets each declared key of `declared` into merged[section] and into `keys` (the plan's declared
/// keys of that section); records changes and overrides.
/// Admission answers run this per matched container: each section's members are looked up once,
/// and a stored value of the same text is equal without parsing it.
void apply_section(const ResourceMap& declared, const char* section, ResourceMap& keys,
                   ContainerPlan& plan) {
  if (declared.empty()) return;
  json& target = plan.merged[section];
  if (!target.is_object()) target = json::object();
  auto& stored = target.get_ref<json::object_t&>();
  for (const auto& [resource, quantity] : declared) {
    keys.insert_or_assign(resource, quantity);
    std::string text = quantity.to_string();
    auto existing = stored.find(resource);
    if (existing == stored.end()) {
      stored.emplace(resource, std::move(text));
      plan.changed = true;
      continue;
    }
    json& value = existing->second;
    const bool same_text = value.is_string() && value.get_ref<const std::string&>() == text;
    if (same_text) continue;
    auto parsed = stored_quantity(value);
    if (parsed && *parsed == quantity) continue;  // equal by value: keep the stored text
    std::string shown = value.is_string() ? value.get<std::string>() : value.dump();
    std::string& overridden = plan.overridden.emplace_back();
    overridden.reserve(std::char_traits<char>::length(section) + resource.size() + shown.size() +
                       2);
    overridden.append(section).append(".").append(resource).append("=").append(shown);
    value = std::move(text);
    plan.changed = true;
  }
}

/// The quantity of `resource` in one merged section, whose value there is `stored`: the one in
/// `declared` (that section's declared keys) when the plan sets the key, as apply_section left a
/// value equal to it, else `stored` parsed.
std::optional<kube::Quantity> merged_quantity(const ResourceMap& declared,
                                              const std::string& resource, const json& stored) {
  auto found = declared.find(resource);
  if (found != declared.end()) return found->second;
  return stored_quantity(stored);
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
    auto request = merged_quantity(plan.declared.requests, resource, request_value);
    auto limit = merged_quantity(plan.declared.limits, resource, *limit_value);
    if (request && limit && *request > *limit) {
      // Said as the merged object holds them: a stored value equal to the declared one by value
      // keeps its own text ("2147483648" for a declared "2Gi").
      return "container " + plan.name + ": requests." + resource + " " +
             stored_quantity(request_value).value_or(*request).to_string() +
             " would exceed limits." + resource + " " +
             stored_quantity(*limit_value).value_or(*limit).to_string();
    }
  }
  return {};
}

/// A pod spec's cpu/memory quantities of `section` of its `resources`, for the pod-level check.
std::map<std::string, kube::Quantity> pod_level(const json& spec, const char* section) {
  std::map<std::string, kube::Quantity> out;
  auto resources = spec.find("resources");
  if (resources == spec.end() || !resources->is_object()) return out;
  auto values = resources->find(section);
  if (values == resources->end() || !values->is_object()) return out;
  for (const char* resource : {"cpu", "memory"}) {
    auto value = values->find(resource);
    if (value == values->end()) continue;
    if (auto quantity = stored_quantity(*value)) out.emplace(resource, *quantity);
  }
  return out;
}

/// A quantity of resources[section][resource]; nullopt when absent or unparsable.
std::optional<kube::Quantity> quantity_at(const json& resources, const char* section,
                                          const std::string& resource) {
  auto values = resources.find(section);
  if (values == resources.end() || !values->is_object()) return std::nullopt;
  auto value = values->find(resource);
  if (value == values->end()) return std::nullopt;
  return stored_quantity(*value);
}

/// Whether pod-level `resources` make the pod Guaranteed (cpu and memory requests and limits all
/// set, each request equal to its limit): with pod-level values set they alone decide the QoS
/// class.
bool pod_level_guaranteed(const json& resources) {
  for (const char* resource : {"cpu", "memory"}) {
    auto request = quantity_at(resources, "requests", resource);
    auto limit = quantity_at(resources, "limits", resource);
    if (!request || !limit || *request != *limit) return false;
  }
  return true;
}

/// Keeps the QoS class of `spec`'s pod-level resources in `merged` (them after fit_pod_level): a
/// resize may not change it. Guaranteed stays Guaranteed (a raised request or limit takes the
/// other along); a `running_pod` (a Pod's own spec, which only a resize changes) that was not is
/// kept from becoming Guaranteed by the raise, its cpu limit set 1m above the request.
void keep_pod_level_qos(const json& spec, json& merged, bool running_pod) {
  static const json kNone = json::object();
  const json& before = spec.contains("resources") ? spec["resources"] : kNone;
  if (pod_level_guaranteed(before)) {
    for (const char* resource : {"cpu", "memory"}) {
      auto request = quantity_at(merged, "requests", resource);
      auto limit = quantity_at(merged, "limits", resource);
      if (!request || !limit || *request == *limit) continue;
      const std::string higher = std::max(*request, *limit).to_string();
      merged["requests"][resource] = higher;
      merged["limits"][resource] = higher;
    }
  } else if (running_pod && pod_level_guaranteed(merged)) {
    const kube::Quantity request = *quantity_at(merged, "requests", "cpu");
    merged["limits"]["cpu"] =
        kube::Quantity::from_nanos(request.nanos() + kube::Int128{1'000'000}).to_string();
  }
}

/// Kubernetes' pod-level consistency rule for the merged pod (pod-level requests at least the
/// containers' total, pod-level limits at least each container's limit and the pod's request),
/// met by raising spec.resources: records in `plan` the raised pod-level resources and, for the
/// writers that cannot raise them, what breaks the rule without it.
/// The rule is checked on the pod as the API server defaults it at creation (templates are not
/// defaulted; a pod is, again after every webhook's patch): a container's missing request is its
/// limit, and a missing pod-level request, once pod-level limits are set, the containers' total
/// (pkg/apis/core/v1/defaults.go, defaultPodRequests), which must stay within the pod-level limit.
/// The pod-level QoS class stays what it was (keep_pod_level_qos): a resize may not change it.
void fit_pod_level(ResourcePlan& plan, const json& spec) {
  auto requests = pod_level(spec, "requests");
  auto limits = pod_level(spec, "limits");
  if (requests.empty() && limits.empty()) return;
  const json& containers = spec.contains("containers") && spec["containers"].is_array()
                               ? spec["containers"]
                               : json::array();
  json merged = spec["resources"];
  auto note = [&plan](std::string text) {
    if (plan.pod_resources_note.empty()) plan.pod_resources_note = std::move(text);
  };
  // Regular containers and sidecars (init containers with restartPolicy Always) run together;
  // sidecars are never matched, so they count as they are. nullopt: none asks for any.
  auto containers_total = [&](const std::string& resource) -> std::optional<kube::Quantity> {
    kube::Int128 total = 0;
    bool any = false;
    kube::QuantityFormat format = kube::QuantityFormat::kDecimalSI;
    auto add = [&](const json& resources) {
      auto request = quantity_at(resources, "requests", resource);
      if (!request) request = quantity_at(resources, "limits", resource);  // defaulted so
      if (!request) return;
      any = true;
      total += request->nanos();
      if (request->format() == kube::QuantityFormat::kBinarySI) format = request->format();
    };
    for (std::size_t i = 0; i < containers.size(); ++i) {
      if (containers[i].is_object()) add(resources_after(plan, containers[i], i));
    }
    if (auto init = spec.find("initContainers"); init != spec.end() && init->is_array()) {
      for (const json& sidecar : *init) {
        if (!sidecar.is_object() || sidecar.value("restartPolicy", "") != "Always") continue;
        if (auto resources = sidecar.find("resources"); resources != sidecar.end()) add(*resources);
      }
    }
    if (!any) return std::nullopt;
    return kube::Quantity::from_nanos(total, format);
  };
  for (auto& entry : requests) {
    // Named, not a structured binding: clang before 16 (the fuzz build) cannot capture one.
    const auto& resource = entry.first;
    auto& pod_request = entry.second;
    auto total = containers_total(resource);
    if (total && *total > pod_request) {
      kube::Quantity raised = kube::Quantity::from_nanos(
          total->nanos(), total->format() == kube::QuantityFormat::kBinarySI
                              ? total->format()
                              : pod_request.format());
      note("requests." + resource + " " + pod_request.to_string() +
           " was below the containers' total " + raised.to_string());
      merged["requests"][resource] = raised.to_string();
      pod_request = raised;
      plan.pod_resources_changed = true;
    }
  }
  for (const auto& [resource, pod_limit] : limits) {
    kube::Quantity need = pod_limit;
    std::string because;
    for (std::size_t i = 0; i < containers.size(); ++i) {
      if (!containers[i].is_object()) continue;
      auto limit = quantity_at(resources_after(plan, containers[i], i), "limits", resource);
      if (limit && *limit > need) {
        need = *limit;
        because = "container " + containers[i].value("name", "") + "'s limit";
      }
    }
    if (auto request = requests.find(resource); request != requests.end()) {
      if (request->second > need) {
        need = request->second;
        because = "the pod's request";
      }
    } else if (auto total = containers_total(resource); total && *total > need) {
      // No pod-level request: the API server sets it to the containers' total at creation.
      need = *total;
      because = "the containers' total request";
    }
    if (need > pod_limit) {
      note("limits." + resource + " " + pod_limit.to_string() + " was below " + because + " " +
           need.to_string());
      merged["limits"][resource] = need.to_string();
      plan.pod_resources_changed = true;
    }
  }
  // A Pod's own spec (a resize, which may not change the class; a pod being created, which keeps
  // the class its template gave it) keeps a Burstable pod Burstable. A template's new pods may
  // well be Guaranteed (and an extra 1m there would only show in GitOps diffs).
  if (plan.pod_resources_changed) keep_pod_level_qos(spec, merged, plan.spec_pointer == "/spec");
  if (plan.pod_resources_changed) plan.pod_resources = std::move(merged);
}
}  // namespace

const json& resources_after(const ResourcePlan& plan, const json& container, std::size_t index) {
  static const json kNone = json::object();
  for (const auto& item : plan.containers) {
    if (item.index == index) return item.merged;
  }
  auto resources = container.find("resources");
  return resources != container.end() && resources->is_object() ? *resources : kNone;
}

std::string qos_class_after(const json& object, const ResourcePlan& plan) {
  const json* spec = pod_spec_of(object);
  if (spec == nullptr) return "BestEffort";
  // Pod-level resources decide alone; keep_pod_level_qos keeps their class.
  const json resources_after_plan =
      plan.pod_resources_changed ? plan.pod_resources : spec->value("resources", json::object());
  if (resources_after_plan.is_object() &&
      (resources_after_plan.contains("requests") || resources_after_plan.contains("limits"))) {
    if (pod_level_guaranteed(resources_after_plan)) return "Guaranteed";
    return "Burstable";
  }
  // Summed over every container: requests and limits above zero, of cpu and memory only.
  std::map<std::string, kube::Quantity> requests, limits;
  bool guaranteed = true;
  auto add = [](std::map<std::string, kube::Quantity>& sum, const std::string& resource,
                const kube::Quantity& value) {
    auto [it, inserted] = sum.emplace(resource, value);
    if (!inserted) it->second = kube::Quantity::from_nanos(it->second.nanos() + value.nanos());
  };
  auto count = [&](const json& resources) {
    int limits_found = 0;
    for (const std::string resource : {"cpu", "memory"}) {
      auto request =
          resources.is_object() ? quantity_at(resources, "requests", resource) : std::nullopt;
      auto limit =
          resources.is_object() ? quantity_at(resources, "limits", resource) : std::nullopt;
      // A limit without a request: the API server defaults the request to it (a resize's too).
      if (!request) request = limit;
      if (request && request->nanos() > 0) add(requests, resource, *request);
      if (limit && limit->nanos() > 0) {
        add(limits, resource, *limit);
        ++limits_found;
      }
    }
    if (limits_found < 2) guaranteed = false;
  };
  const json& containers = pod_containers_of(object);
  for (std::size_t i = 0; i < containers.size(); ++i) {
    if (containers[i].is_object()) count(resources_after(plan, containers[i], i));
  }
  if (auto init = spec->find("initContainers"); init != spec->end() && init->is_array()) {
    for (const json& container : *init) {
      if (!container.is_object()) continue;
      auto resources = container.find("resources");
      count(resources != container.end() ? *resources : json::object());
    }
  }
  if (requests.empty() && limits.empty()) return "BestEffort";
  if (guaranteed) {
    for (const auto& [resource, request] : requests) {
      auto limit = limits.find(resource);
      if (limit == limits.end() || limit->second != request) {
        guaranteed = false;
        break;
      }
    }
  }
  return guaranteed && requests.size() == limits.size() ? "Guaranteed" : "Burstable";
}

const json* pod_spec_of(const json& object) {
  if (!object.is_object()) return nullptr;
  auto spec = object.find("spec");
  if (spec == object.end() || !spec->is_object()) return nullptr;
  auto pod_template = spec->find("template");
  if (pod_template == spec->end()) return &*spec;  // a Pod
  if (!pod_template->is_object()) return nullptr;
  auto template_spec = pod_template->find("spec");
  return template_spec != pod_template->end() && template_spec->is_object() ? &*template_spec
                                                                            : nullptr;
}

std::string pod_spec_pointer(const json& object) {
  const json* spec = object.is_object() ? &object : nullptr;
  if (spec != nullptr) {
    auto found = spec->find("spec");
    if (found != spec->end() && found->is_object() && !found->contains("template")) return "/spec";
  }
  return "/spec/template/spec";
}

std::string template_prefix(std::string_view ns, std::string_view kind) {
  std::string prefix;
  prefix.reserve(ns.size() + kind.size() + 2);
  return prefix.append(ns).append("/").append(kind).append("/");
}

std::string template_key(std::string_view ns, std::string_view ref) {
  std::string key;
  key.reserve(ns.size() + ref.size() + 1);
  return key.append(ns).append("/").append(ref);
}

TemplateResources extract_templates(TemplateResources& templates, std::string_view ns,
                                    std::string_view kind) {
  const std::string prefix = template_prefix(ns, kind);
  TemplateResources out;
  for (auto it = templates.lower_bound(prefix);
       it != templates.end() && it->first.starts_with(prefix);) {
    out.insert(templates.extract(it++));
  }
  return out;
}

const json& pod_containers_of(const json& object) {
  static const json kEmpty = json::array();
  const json* spec = pod_spec_of(object);
  if (spec == nullptr) return kEmpty;
  auto containers = spec->find("containers");
  return containers != spec->end() && containers->is_array() ? *containers : kEmpty;
}

bool ResourcePlan::changed() const {
  for (const auto& container : containers) {
    if (container.changed) return true;
  }
  return false;
}

ResourcePlan plan_resources(const Scaler& scaler, const json& object,
                            const DesiredResources* desired) {
  ResourcePlan plan;
  plan.spec_pointer = pod_spec_pointer(object);
  const json& containers = pod_containers_of(object);
  std::vector<std::string_view> names;  // every container of the template, for `missing`
  for (std::size_t i = 0; i < containers.size(); ++i) {
    const json& container = containers[i];
    if (!container.is_object()) continue;
    auto name = container.find("name");
    if (name == container.end() || !name->is_string()) continue;
    names.push_back(name->get_ref<const std::string&>());
    const ContainerResources* entry = scaler.entry_for(name->get_ref<const std::string&>());
    if (entry == nullptr || entry->off) continue;
    ContainerPlan item;
    item.index = i;
    item.name = name->get<std::string>();
    auto resources = container.find("resources");
    item.merged =
        resources != container.end() && resources->is_object() ? *resources : json::object();
    const DesiredValues* values = nullptr;
    if (desired != nullptr) {
      auto found = desired->find(item.name);
      if (found != desired->end()) values = &found->second;
    }
    apply_section(values ? values->requests : entry->requests, "requests", item.declared.requests,
                  item);
    apply_section(values ? values->limits : entry->limits, "limits", item.declared.limits, item);
    if (plan.invalid.empty()) plan.invalid = check_valid(item);
    plan.containers.push_back(std::move(item));
  }
  if (plan.invalid.empty() && plan.changed()) {
    if (const json* spec = pod_spec_of(object)) fit_pod_level(plan, *spec);
  }
  const bool wildcard = std::any_of(scaler.containers.begin(), scaler.containers.end(),
                                    [](const auto& entry) { return entry.name == kWildcard; });
  for (const auto& entry : scaler.containers) {
    // An "Off" entry asks nothing of the template: a sidecar injected into pods (DESIGN's
    // istio-proxy) is named only to be left alone, and is never in it. Beside "*" it is missed:
    // misspelt, the container it meant would be scaled as "*" says.
    if (entry.name == kWildcard || (entry.off && !wildcard)) continue;
    bool found = false;
    for (std::string_view name : names) found = found || name == entry.name;
    if (!found) plan.missing.push_back(entry.name);
  }
  return plan;
}

json resources_json(const DesiredValues& values) {
  json resources = json::object();
  for (const auto& [section, keys] :
       {std::pair{"requests", &values.requests}, std::pair{"limits", &values.limits}}) {
    if (keys->empty()) continue;
    json& out = resources[section];
    for (const auto& [resource, quantity] : *keys) out[resource] = quantity.to_string();
  }
  return resources;
}

json strategic_merge_patch(const Scaler& /*scaler*/, const ResourcePlan& plan) {
  json containers = json::array();
  for (const auto& item : plan.containers) {
    if (!item.changed) continue;
    containers.push_back({{"name", item.name}, {"resources", resources_json(item.declared)}});
  }
  json pod_spec = {{"containers", std::move(containers)}};
  // In the same write, so the template is never stored with containers outgrowing them.
  if (plan.pod_resources_changed) pod_spec["resources"] = plan.pod_resources;
  return {{"spec", {{"template", {{"spec", std::move(pod_spec)}}}}}};
}

namespace {

/// One RFC 6902 "add" operation, its members set one by one: a braced initializer list would copy
/// `value` (a container's resources) once more, and admission answers are a hot path.
json add_operation(std::string path, json value) {
  json operation = json::object();
  auto& members = operation.get_ref<json::object_t&>();
  members.emplace("op", "add");
  members.emplace("path", std::move(path));
  members.emplace("value", std::move(value));
  return operation;
}

/// admission_json_patch's body: `take` gives each value (copied, or moved out of the plan).
template <typename Plan, typename Take>
json build_admission_patch(Plan& plan, Take take) {
  json patch = json::array();
  auto& operations = patch.get_ref<json::array_t&>();
  if (plan.pod_resources_changed) {
    // Raised first, so the containers' values are never checked against the old pod-level ones.
    operations.push_back(add_operation(plan.spec_pointer + "/resources", take(plan.pod_resources)));
  }
  for (auto& item : plan.containers) {
    if (!item.changed) continue;
    operations.push_back(add_operation(
        plan.spec_pointer + "/containers/" + std::to_string(item.index) + "/resources",
        take(item.merged)));
  }
  return patch;
}

}  // namespace

json admission_json_patch(const ResourcePlan& plan) {
  return build_admission_patch(plan, [](const json& value) { return value; });
}

json take_admission_json_patch(ResourcePlan& plan) {
  return build_admission_patch(plan, [](json& value) { return std::move(value); });
}

namespace {

/// One status.containers entry: `name` and the requests/limits of `resources` as strings.
json status_entry(const std::string& name, const json& resources) {
  json entry = {{"name", name}};
  for (const char* section : {"requests", "limits"}) {
    auto values = resources.find(section);
    if (values == resources.end() || !values->is_object() || values->empty()) continue;
    json& out = entry[section];
    for (const auto& [resource, value] : values->items()) {
      out[resource] = value.is_string() ? value.get<std::string>() : value.dump();
    }
  }
  return entry;
}

}  // namespace

json status_containers(const ResourcePlan& plan) {
  json result = json::array();
  for (const auto& item : plan.containers) result.push_back(status_entry(item.name, item.merged));
  return result;
}

json status_containers_now(const ResourcePlan& plan, const json& object) {
  static const json kNone = json::object();
  const json& containers = pod_containers_of(object);
  json result = json::array();
  for (const auto& item : plan.containers) {
    const json* resources = &kNone;
    if (item.index < containers.size() && containers[item.index].is_object()) {
      auto found = containers[item.index].find("resources");
      if (found != containers[item.index].end() && found->is_object()) resources = &*found;
    }
    result.push_back(status_entry(item.name, *resources));
  }
  return result;
}

std::vector<StoredContainer> stored_containers_of(const json& object) {
  std::vector<StoredContainer> out;
  for (const json& container : pod_containers_of(object)) {
    if (!container.is_object()) continue;
    auto name = container.find("name");
    if (name == container.end() || !name->is_string()) continue;
    StoredContainer& stored = out.emplace_back();
    stored.name = name->get<std::string>();
    auto resources = container.find("resources");
    if (resources == container.end() || !resources->is_object()) continue;
    for (auto [section, into] :
         {std::pair{"requests", &stored.requests}, std::pair{"limits", &stored.limits}}) {
      auto values = resources->find(section);
      if (values == resources->end() || !values->is_object()) continue;
      for (const auto& [resource, value] : values->items()) {
        into->insert_or_assign(resource,
                               value.is_string() ? value.get<std::string>() : value.dump());
      }
    }
  }
  return out;
}

DesiredResources controlled_values_of(const Scaler& scaler,
                                      const std::vector<StoredContainer>& containers) {
  DesiredResources out;
  for (const StoredContainer& container : containers) {
    const ContainerResources* entry = scaler.entry_for(container.name);
    if (entry == nullptr || entry->off) continue;
    DesiredValues& values = out[container.name];
    auto take = [](const auto& stored, ResourceMap& into, auto controlled) {
      for (const auto& [resource, text] : stored) {
        if (!controlled(resource)) continue;
        if (auto quantity = kube::Quantity::parse(text); quantity.ok()) {
          into.emplace(resource, *quantity);
        }
      }
    };
    auto recommended = [entry](const std::string& resource) {
      return (resource == "cpu" && entry->controls_cpu) ||
             (resource == "memory" && entry->controls_memory);
    };
    if (entry->fixed()) {
      take(container.requests, values.requests,
           [entry](const std::string& r) { return entry->requests.contains(r); });
      take(container.limits, values.limits,
           [entry](const std::string& r) { return entry->limits.contains(r); });
    } else {
      take(container.requests, values.requests, recommended);
      if (entry->controlled_values == ControlledValues::kRequestsAndLimits) {
        take(container.limits, values.limits, recommended);
      }
    }
  }
  return out;
}

DesiredResources controlled_values_of(const Scaler& scaler, const json& workload) {
  return controlled_values_of(scaler, stored_containers_of(workload));
}

namespace {

/// `a` and `b` (objects) equal in every member except those in `skip`.
bool equal_except(const json& a, const json& b, std::initializer_list<std::string_view> skip) {
  if (!a.is_object() || !b.is_object()) return a == b;
  auto skipped = [&skip](const std::string& key) {
    for (std::string_view s : skip) {
      if (key == s) return true;
    }
    return false;
  };
  for (const auto& [key, value] : a.items()) {
    if (skipped(key)) continue;
    auto other = b.find(key);
    if (other == b.end() || *other != value) return false;
  }
  for (const auto& [key, value] : b.items()) {
    if (!skipped(key) && !a.contains(key)) return false;
  }
  return true;
}

/// A container's resources without the cpu/memory requests and limits (empty maps dropped).
json uncontrolled_resources(const json& container) {
  auto resources = container.find("resources");
  if (resources == container.end() || !resources->is_object()) return json::object();
  json out = *resources;
  for (const char* section : {"requests", "limits"}) {
    auto values = out.find(section);
    if (values == out.end() || !values->is_object()) continue;
    values->erase("cpu");
    values->erase("memory");
    if (values->empty()) out.erase(section);
  }
  return out;
}

const json& member(const json& object, const char* key) {
  static const json kNull;
  if (!object.is_object()) return kNull;
  auto found = object.find(key);
  return found == object.end() ? kNull : *found;
}

}  // namespace

bool templates_equal_ignoring_controlled(const Scaler& scaler, const json& before,
                                         const json& after) {
  const json& old_template = member(member(before, "spec"), "template");
  const json& new_template = member(member(after, "spec"), "template");
  // Compared level by level, never copied whole: only the resources of matched containers are.
  if (!equal_except(old_template, new_template, {"spec"})) return false;
  const json& old_spec = member(old_template, "spec");
  const json& new_spec = member(new_template, "spec");
  if (!equal_except(old_spec, new_spec, {"containers"})) return false;
  const json& old_containers = member(old_spec, "containers");
  const json& new_containers = member(new_spec, "containers");
  if (!old_containers.is_array() || !new_containers.is_array() ||
      old_containers.size() != new_containers.size()) {
    return old_containers == new_containers;
  }
  for (std::size_t i = 0; i < old_containers.size(); ++i) {
    const json& a = old_containers[i];
    const json& b = new_containers[i];
    const json& name = member(b, "name");
    const ContainerResources* entry =
        name.is_string() ? scaler.entry_for(name.get_ref<const std::string&>()) : nullptr;
    if (entry == nullptr || entry->off || member(a, "name") != name) {
      if (a != b) return false;
      continue;
    }
    if (!equal_except(a, b, {"resources"})) return false;
    if (uncontrolled_resources(a) != uncontrolled_resources(b)) return false;
  }
  return true;
}

}  // namespace vscaler::api
