// build_model: the dashboard's page from the scalers' stored status and the history.
#include "dashboard/model.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <utility>

namespace vscaler::dashboard {
namespace {

using nlohmann::json;

const json& member(const json& object, const char* key) {
  static const json kNull;
  if (!object.is_object()) return kNull;
  auto it = object.find(key);
  return it == object.end() ? kNull : *it;
}

std::string string_at(const json& object, const char* key) {
  const json& value = member(object, key);
  return value.is_string() ? value.get<std::string>() : std::string();
}

std::optional<kube::Quantity> quantity_at(const json& resources, const char* key) {
  const json& value = member(resources, key);
  kube::Result<kube::Quantity> parsed = base::fail("not a quantity");
  if (value.is_string()) {
    parsed = kube::Quantity::parse(value.get_ref<const std::string&>());
  } else if (value.is_number_integer()) {
    parsed = kube::Quantity::parse(std::to_string(value.get<std::int64_t>()));
  } else {
    return std::nullopt;
  }
  if (!parsed.ok()) return std::nullopt;
  return *parsed;
}

Resources resources_at(const json& object, const char* key) {
  const json& resources = member(object, key);
  return {quantity_at(resources, "cpu"), quantity_at(resources, "memory")};
}

std::string policy_of(const api::Scaler& scaler, const std::string& container) {
  const api::ContainerResources* entry = scaler.entry_for(container);
  if (entry == nullptr) return "recommended";  // no containers listed: every one from usage
  if (entry->off) return "off";
  return entry->fixed() ? "fixed" : "recommended";
}

// The view of a container named `name`, created in `containers` on first use (template order
// first, then containers only the recommendation names).
ContainerView& container_named(std::vector<ContainerView>& containers, const std::string& name) {
  for (auto& container : containers) {
    if (container.name == name) return container;
  }
  containers.push_back(ContainerView{});
  containers.back().name = name;
  return containers.back();
}

// What a container requests: its request, else its limit (the API server gives a container
// with a limit and no request that limit as its request), as `vscaler report` counts it.
const std::optional<kube::Quantity>& requested(const std::optional<kube::Quantity>& request,
                                               const std::optional<kube::Quantity>& limit) {
  return request ? request : limit;
}

void add_totals(Totals& totals, const ContainerView& container) {
  if (!container.template_known) return;  // nothing to compare the recommendation with
  // Requested: what the template asks now. Recommended: the target where there is one, else
  // what is requested (a fixed or unrecommended value counts as neither saving nor missing).
  const auto& requested_cpu = requested(container.requests.cpu, container.limits.cpu);
  const auto& requested_memory = requested(container.requests.memory, container.limits.memory);
  if (requested_cpu) totals.requested_cpu += requested_cpu->nanos();
  if (requested_memory) totals.requested_memory += requested_memory->nanos();
  bool recommended = container.policy == "recommended";
  const auto& cpu = recommended && container.target.cpu ? container.target.cpu : requested_cpu;
  const auto& memory =
      recommended && container.target.memory ? container.target.memory : requested_memory;
  if (cpu) totals.recommended_cpu += cpu->nanos();
  if (memory) totals.recommended_memory += memory->nanos();
}

// The change status alone tells: lastScaleTime, caused by a recommendation when it is also the
// lastRecommendationUpdateTime, else by fixed values (or a patch of a recommendation).
std::optional<ChangeView> change_from_status(const api::Scaler& scaler, const json& status) {
  std::string scale_time = string_at(status, "lastScaleTime");
  if (scale_time.empty()) return std::nullopt;
  if (scale_time == string_at(status, "lastRecommendationUpdateTime")) {
    return ChangeView{scale_time, "bounds"};
  }
  bool fixed = std::any_of(scaler.containers.begin(), scaler.containers.end(),
                           [](const auto& entry) { return entry.fixed(); });
  return ChangeView{scale_time, fixed ? "fixed value" : "patch"};
}

}  // namespace

void Totals::add(const Totals& other) {
  requested_cpu += other.requested_cpu;
  requested_memory += other.requested_memory;
  recommended_cpu += other.recommended_cpu;
  recommended_memory += other.recommended_memory;
}

std::string find_time(const std::string& text) {
  // YYYY-MM-DDTHH:MM:SS, then fraction and zone up to the next character that cannot be one.
  auto digit = [&](std::size_t i) { return std::isdigit(static_cast<unsigned char>(text[i])); };
  for (std::size_t i = 0; i + 19 < text.size() + 1; ++i) {
    static constexpr std::string_view kShape = "dddd-dd-ddTdd:dd:dd";
    bool match = true;
    for (std::size_t j = 0; j < kShape.size() && match; ++j) {
      match = kShape[j] == 'd' ? digit(i + j) : text[i + j] == kShape[j];
    }
    if (!match) continue;
    std::size_t end = i + kShape.size();
    while (end < text.size() &&
           (std::isdigit(static_cast<unsigned char>(text[end])) || text[end] == '.' ||
            text[end] == 'Z' || text[end] == '+' || text[end] == ':' || text[end] == '-')) {
      ++end;
    }
    // A sentence's full stop or a dash after the time is not part of it.
    while (end > i + kShape.size() &&
           std::string_view(".:-+").find(text[end - 1]) != std::string_view::npos) {
      --end;
    }
    return text.substr(i, end - i);
  }
  return {};
}

ScalerView build_scaler_view(const api::Scaler& scaler, const History& history,
                             const OffTemplates* templates) {
  const json status = scaler.status();
  ScalerView view;
  view.ns = scaler.ns;
  view.name = scaler.name;
  view.target = string_at(member(status, "target"), "ref");
  if (view.target.empty()) view.target = scaler.target.ref();
  view.mode = std::string(api::to_string(scaler.update_mode));
  view.last_recommendation_update_time = string_at(status, "lastRecommendationUpdateTime");

  const std::string key = scaler.key();
  if (const json& containers = member(status, "containers"); containers.is_array()) {
    for (const auto& item : containers) {
      std::string name = string_at(item, "name");
      if (name.empty()) continue;
      ContainerView& container = container_named(view.containers, name);
      container.requests = resources_at(item, "requests");
      container.limits = resources_at(item, "limits");
    }
  }
  const json& recommendations =
      member(member(status, "recommendation"), "containerRecommendations");
  if (recommendations.is_array()) {
    for (const auto& item : recommendations) {
      std::string name = string_at(item, "containerName");
      if (name.empty()) continue;
      ContainerView& container = container_named(view.containers, name);
      container.target = resources_at(item, "target");
      container.lower_bound = resources_at(item, "lowerBound");
      container.upper_bound = resources_at(item, "upperBound");
      container.uncapped_target = resources_at(item, "uncappedTarget");
    }
  }
  if (scaler.update_mode == api::UpdateMode::kOff) {
    // The status shows what would be applied: the template's own values come from its listing,
    // and are left unknown (empty) until it is listed, never taken from the status.
    const std::map<std::string, json>* listed = nullptr;
    if (templates != nullptr) {
      auto found = templates->resources.find(api::template_key(scaler.ns, scaler.target.ref()));
      if (found != templates->resources.end()) listed = &found->second;
    }
    for (ContainerView& container : view.containers) {
      container.requests = {};
      container.limits = {};
      const json* resources = nullptr;
      if (listed != nullptr) {
        auto found = listed->find(container.name);
        if (found != listed->end()) resources = &found->second;
      }
      container.template_known = resources != nullptr;
      if (resources == nullptr) continue;
      container.requests = resources_at(*resources, "requests");
      container.limits = resources_at(*resources, "limits");
    }
  }
  for (auto& container : view.containers) {
    container.policy = policy_of(scaler, container.name);
    container.history = history.points(key, container.name);
    add_totals(view.totals, container);
  }

  if (const json& boost = member(status, "startupBoost"); boost.is_object()) {
    auto count = [&boost](const char* field) {
      auto value = boost.find(field);
      return value != boost.end() && value->is_number_integer() ? value->get<std::int64_t>() : 0;
    };
    view.boost =
        BoostView{count("boosted"), count("ended"), count("stuck"), string_at(boost, "message")};
  }
  if (const ObservedChange* seen = history.last_change(key)) {
    view.last_change = ChangeView{seen->time, seen->cause};
  } else {
    view.last_change = change_from_status(scaler, status);
  }
  if (const json& conditions = member(status, "conditions"); conditions.is_array()) {
    for (const auto& item : conditions) {
      ConditionView condition{string_at(item, "type"), string_at(item, "status"),
                              string_at(item, "reason"), string_at(item, "message"),
                              string_at(item, "lastTransitionTime")};
      if (condition.status == "True") continue;
      if (condition.reason == "Deferred") {
        view.deferral = DeferralView{condition.message, find_time(condition.message)};
        continue;
      }
      view.problems.push_back(std::move(condition));
    }
  }
  return view;
}

std::shared_ptr<const ScalerView> ViewCache::get(const api::Scaler& scaler, const History& history,
                                                 const OffTemplates* templates) {
  std::string key = scaler.key();
  std::uint64_t history_version = history.version(key);
  std::uint64_t templates_version = templates != nullptr ? templates->version : 0;
  Entry& entry = entries_[std::move(key)];
  if (!entry.view || entry.resource_version != scaler.resource_version ||
      entry.history_version != history_version || entry.templates_version != templates_version) {
    entry.view = std::make_shared<const ScalerView>(build_scaler_view(scaler, history, templates));
    entry.resource_version = scaler.resource_version;
    entry.history_version = history_version;
    entry.templates_version = templates_version;
  }
  entry.used = true;
  return entry.view;
}

void ViewCache::sweep() {
  std::erase_if(entries_, [](const auto& item) { return !item.second.used; });
  for (auto& [key, entry] : entries_) entry.used = false;
}

Model build_model(const std::vector<std::shared_ptr<const api::Scaler>>& scalers,
                  const History& history, const std::string& now, ViewCache* cache,
                  const OffTemplates* templates) {
  Model model;
  model.generated_at = now;
  std::map<std::string_view, std::vector<const api::Scaler*>> by_namespace;
  for (const auto& scaler : scalers) {
    if (scaler) by_namespace[scaler->ns].push_back(scaler.get());
  }
  model.namespaces.reserve(by_namespace.size());
  for (auto& [ns, members] : by_namespace) {
    std::sort(members.begin(), members.end(),
              [](const api::Scaler* a, const api::Scaler* b) { return a->name < b->name; });
    NamespaceView view;
    view.name = std::string(ns);
    view.scalers.reserve(members.size());
    for (const api::Scaler* scaler : members) {
      view.scalers.push_back(
          cache != nullptr
              ? cache->get(*scaler, history, templates)
              : std::make_shared<const ScalerView>(build_scaler_view(*scaler, history, templates)));
      view.totals.add(view.scalers.back()->totals);
    }
    model.totals.add(view.totals);
    model.scaler_count += view.scalers.size();
    model.namespaces.push_back(std::move(view));
  }
  if (cache != nullptr) cache->sweep();
  return model;
}

namespace {

/// "resources:" with the requests and limits blocks (a resource without a value left out).
std::string resources_yaml(const Resources& requests, const Resources& limits) {
  std::string out = "resources:\n";
  for (const auto& [name, values] : {std::pair{"requests", &requests}, {"limits", &limits}}) {
    if (values->empty()) continue;
    out += std::string("  ") + name + ":\n";
    if (values->cpu) out += "    cpu: " + values->cpu->to_string() + "\n";
    if (values->memory) out += "    memory: " + values->memory->to_string() + "\n";
  }
  return out;
}

}  // namespace

CopySuggestions copy_suggestions(const ContainerView& container) {
  if (container.target.empty()) return {};
  CopySuggestions out;
  out.guaranteed = resources_yaml(container.target, container.target);
  // Without bounds (a fixed value), the target for both sides.
  const Resources& low = container.lower_bound.empty() ? container.target : container.lower_bound;
  const Resources& high = container.upper_bound.empty() ? container.target : container.upper_bound;
  out.burstable = resources_yaml(low, high);
  return out;
}

}  // namespace vscaler::dashboard
