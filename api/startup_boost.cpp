// apply_startup_boost: the plan's merged CPU raised per boosted container, within the pod's room.
#include "api/startup_boost.h"

#include <algorithm>

#include "kube/object_meta.h"

namespace vscaler::api {
namespace {

using nlohmann::json;

constexpr kube::Int128 kMilli = 1'000'000;  // nano-units per milli-unit

kube::Int128 floor_milli(kube::Int128 nanos) {
  return nanos / kMilli * kMilli;
}
kube::Int128 ceil_milli(kube::Int128 nanos) {
  return (nanos + kMilli - 1) / kMilli * kMilli;
}

/// resources[section].cpu, nullopt when absent or unparsable.
std::optional<kube::Quantity> cpu_in(const json& resources, const char* section) {
  if (!resources.is_object()) return std::nullopt;
  auto values = resources.find(section);
  if (values == resources.end() || !values->is_object()) return std::nullopt;
  auto value = values->find("cpu");
  if (value == values->end()) return std::nullopt;
  auto parsed = value->is_string() ? kube::Quantity::parse(value->get_ref<const std::string&>())
                                   : kube::Quantity::parse(value->dump());
  if (!parsed.ok()) return std::nullopt;
  return *parsed;
}

/// The pod-level CPU request left for the containers to grow into, and the pod-level CPU limit
/// (each nullopt when the pod sets none): Kubernetes wants the containers' and sidecars' requests
/// summed at most the pod's, and no container limit above the pod's.
struct PodLevelRoom {
  std::optional<kube::Int128> requests;
  std::optional<kube::Int128> limit;
};

PodLevelRoom pod_level_room(const json& spec, const ResourcePlan& plan) {
  PodLevelRoom room;
  const json& resources = plan.pod_resources_changed
                              ? plan.pod_resources
                              : (spec.contains("resources") ? spec["resources"] : json::object());
  if (auto limit = cpu_in(resources, "limits")) room.limit = limit->nanos();
  auto request = cpu_in(resources, "requests");
  if (!request) return room;
  kube::Int128 total = 0;
  if (auto containers = spec.find("containers");
      containers != spec.end() && containers->is_array()) {
    for (std::size_t i = 0; i < containers->size(); ++i) {
      if (!(*containers)[i].is_object()) continue;
      if (auto cpu = cpu_in(resources_after(plan, (*containers)[i], i), "requests")) {
        total += cpu->nanos();
      }
    }
  }
  if (auto init = spec.find("initContainers"); init != spec.end() && init->is_array()) {
    for (const json& sidecar : *init) {
      if (!sidecar.is_object() || sidecar.value("restartPolicy", "") != "Always") continue;
      if (auto cpu = cpu_in(sidecar.value("resources", json::object()), "requests")) {
        total += cpu->nanos();
      }
    }
  }
  room.requests = std::max<kube::Int128>(0, request->nanos() - total);
  return room;
}

json cpu_json(const CpuValues& values) {
  json out = json::object();
  if (values.request) out["requests"] = values.request->to_string();
  if (values.limit) out["limits"] = values.limit->to_string();
  return out;
}

kube::Result<CpuValues> cpu_from_json(const json& value, const std::string& path) {
  if (!value.is_object()) return kube::fail(path + ": must be an object {requests, limits}");
  CpuValues out;
  for (auto [key, slot] : {std::pair{"requests", &out.request}, {"limits", &out.limit}}) {
    auto found = value.find(key);
    if (found == value.end()) continue;
    if (!found->is_string()) return kube::fail(path + "." + key + ": must be a quantity string");
    auto parsed = kube::Quantity::parse(found->get_ref<const std::string&>());
    if (!parsed.ok()) return kube::fail(path + "." + key + ": " + parsed.error());
    *slot = *parsed;
  }
  return out;
}

void set_cpu(json& resources, const char* section, const kube::Quantity& value) {
  if (!resources[section].is_object()) resources[section] = json::object();
  resources[section]["cpu"] = value.to_string();
}

}  // namespace

CpuValues cpu_values_of(const json& resources) {
  return CpuValues{cpu_in(resources, "requests"), cpu_in(resources, "limits")};
}

json BoostRecord::to_json() const {
  json containers_json = json::array();
  for (const auto& container : containers) {
    containers_json.push_back({{"name", container.name},
                               {"base", cpu_json(container.base)},
                               {"boosted", cpu_json(container.boosted)}});
  }
  return {{"durationSeconds", duration_seconds}, {"containers", std::move(containers_json)}};
}

kube::Result<BoostRecord> BoostRecord::from_json(const json& value) {
  if (!value.is_object()) return kube::fail(std::string("not a JSON object"));
  BoostRecord record;
  auto duration = value.find("durationSeconds");
  if (duration == value.end() || !duration->is_number_integer() || duration->get<int64_t>() < 0) {
    return kube::fail(std::string("durationSeconds: must be a whole number of seconds >= 0"));
  }
  record.duration_seconds = duration->get<int64_t>();
  auto containers = value.find("containers");
  if (containers == value.end() || !containers->is_array() || containers->empty()) {
    return kube::fail(std::string("containers: must be a non-empty list"));
  }
  for (std::size_t i = 0; i < containers->size(); ++i) {
    const json& item = (*containers)[i];
    const std::string path = "containers[" + std::to_string(i) + "]";
    if (!item.is_object() || !item.contains("name") || !item["name"].is_string()) {
      return kube::fail(path + ".name: required");
    }
    BoostedContainer container;
    container.name = item["name"].get<std::string>();
    auto base = cpu_from_json(item.value("base", json()), path + ".base");
    if (!base.ok()) return kube::fail(base.error());
    auto boosted = cpu_from_json(item.value("boosted", json()), path + ".boosted");
    if (!boosted.ok()) return kube::fail(boosted.error());
    if (!base->request || !boosted->request) {
      return kube::fail(path + ": base and boosted need a requests value");
    }
    container.base = *base;
    container.boosted = *boosted;
    record.containers.push_back(std::move(container));
  }
  return record;
}

BoostOutcome apply_startup_boost(const Scaler& scaler, const json& pod, ResourcePlan& plan,
                                 const BoostRoom& room) {
  BoostOutcome out;
  const json* spec = pod_spec_of(pod);
  if (spec == nullptr) return out;
  const PodLevelRoom pod_level = pod_level_room(*spec, plan);
  // What the pod's summed requests and limits may still grow by, shared by its containers.
  std::optional<kube::Int128> requests_left = pod_level.requests;
  if (room.requests_cpu) {
    requests_left =
        std::min(requests_left.value_or(room.requests_cpu->nanos()), room.requests_cpu->nanos());
  }
  std::optional<kube::Int128> limits_left;
  if (room.limits_cpu) limits_left = room.limits_cpu->nanos();

  BoostRecord record;
  for (ContainerPlan& container : plan.containers) {
    const StartupBoost* boost = scaler.boost_for(container.name);
    if (boost == nullptr) continue;
    const std::string who = "container " + container.name;
    const CpuValues base = cpu_values_of(container.merged);
    if (!base.request || base.request->nanos() <= 0) {
      // Nothing to multiply, and adding to nothing would change the pod's QoS class.
      out.notes.push_back(who + ": not boosted, it has no cpu request");
      continue;
    }
    const kube::Int128 request = base.request->nanos();
    const ContainerResources* entry = scaler.entry_for(container.name);
    const bool requests_only =
        entry != nullptr && entry->controlled_values == ControlledValues::kRequestsOnly;
    // The limit follows the request in proportion (a Guaranteed container stays request ==
    // limit); under RequestsOnly it stays, and the request stops 1m below it (Burstable stays
    // Burstable; a container at its limit is not boosted).
    const bool scales_limit = base.limit && !requests_only && base.limit->nanos() > 0;
    kube::Int128 wanted = floor_milli(boost->boosted(*base.request).nanos());
    std::string capped_by;
    auto cap = [&](kube::Int128 most, const char* why) {
      if (wanted > most) {
        wanted = most;
        capped_by = why;
      }
    };
    const kube::Int128 limit = base.limit ? base.limit->nanos() : 0;
    if (base.limit && requests_only) cap(limit - kMilli, "its cpu limit (RequestsOnly)");
    if (scales_limit && pod_level.limit) {
      cap(floor_milli(*pod_level.limit * request / limit), "the pod-level cpu limit");
    }
    if (room.container_max_cpu) {
      const kube::Int128 most = room.container_max_cpu->nanos();
      cap(floor_milli(most), "the namespace's LimitRange (max cpu per container)");
      if (scales_limit) {
        cap(floor_milli(most * request / limit),
            "the namespace's LimitRange (max cpu per container)");
      }
    }
    if (requests_left) {
      cap(floor_milli(request + *requests_left),
          pod_level.requests &&
                  (!room.requests_cpu || *pod_level.requests <= room.requests_cpu->nanos())
              ? "the pod-level cpu request"
              : "the namespace's ResourceQuota or LimitRange (requests.cpu)");
    }
    if (scales_limit && limits_left) {
      cap(floor_milli(request + *limits_left * request / limit),
          "the namespace's ResourceQuota or LimitRange (limits.cpu)");
    }
    if (wanted <= request) {
      out.notes.push_back(who + ": not boosted, no room above its " + base.request->to_string() +
                          " (" + capped_by + ")");
      continue;
    }
    BoostedContainer boosted;
    boosted.name = container.name;
    boosted.base = base;
    boosted.boosted.request = kube::Quantity::from_nanos(wanted);
    set_cpu(container.merged, "requests", *boosted.boosted.request);
    container.declared.requests.insert_or_assign("cpu", *boosted.boosted.request);
    if (scales_limit) {
      boosted.boosted.limit = kube::Quantity::from_nanos(ceil_milli(limit * wanted / request));
      set_cpu(container.merged, "limits", *boosted.boosted.limit);
      container.declared.limits.insert_or_assign("cpu", *boosted.boosted.limit);
      if (limits_left) *limits_left -= boosted.boosted.limit->nanos() - limit;
    } else if (base.limit) {
      boosted.boosted.limit = base.limit;
    }
    if (requests_left) *requests_left -= wanted - request;
    container.changed = true;
    if (!capped_by.empty()) {
      out.notes.push_back(who + ": boosted to " + boosted.boosted.request->to_string() +
                          " cpu only, capped by " + capped_by);
    }
    record.duration_seconds = std::max(record.duration_seconds, boost->duration_seconds);
    record.containers.push_back(std::move(boosted));
  }
  if (!record.containers.empty()) out.record = std::move(record);
  return out;
}

bool has_boost_annotation(const json& pod) {
  return kube::has_annotation(pod, kStartupBoostAnnotation);
}

std::optional<BoostRecord> boost_record_of(const json& pod) {
  if (!has_boost_annotation(pod)) return std::nullopt;
  const json& value = pod["metadata"]["annotations"][std::string(kStartupBoostAnnotation)];
  if (!value.is_string()) return std::nullopt;
  json parsed = json::parse(value.get_ref<const std::string&>(), nullptr, false);
  if (parsed.is_discarded()) return std::nullopt;
  auto record = BoostRecord::from_json(parsed);
  if (!record.ok()) return std::nullopt;
  return std::move(*record);
}

json unboost_patch(const std::vector<BoostedContainer>& containers) {
  json items = json::array();
  for (const auto& container : containers) {
    json resources = json::object();
    if (container.base.request) set_cpu(resources, "requests", *container.base.request);
    if (container.base.limit) set_cpu(resources, "limits", *container.base.limit);
    items.push_back({{"name", container.name}, {"resources", std::move(resources)}});
  }
  return {{"spec", {{"containers", std::move(items)}}}};
}

}  // namespace vscaler::api
