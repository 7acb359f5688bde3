// Startup boost (DESIGN.md "Startup boost"): the CPU a starting pod's boosted containers carry, on
// top of the values every writer computes (api::plan_resources: the boost extends that plan, it
// never recomputes it), and the pod annotation that records, per container, the base (what the
// container must carry once the boost ends) and the boosted values, so that a re-invoked webhook
// never boosts twice and the resize back restores exactly the base.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "api/resources.h"
#include "api/scaler.h"
#include "kube/quantity.h"

namespace vscaler::api {

/// The pod annotation holding a BoostRecord as JSON.
inline constexpr std::string_view kStartupBoostAnnotation = "scaling.vscaler.dev/startup-boost";

/// A container's CPU request and limit (each absent when the container has none).
struct CpuValues {
  std::optional<kube::Quantity> request;
  std::optional<kube::Quantity> limit;
  bool operator==(const CpuValues&) const = default;
};

/// One boosted container of a pod.
struct BoostedContainer {
  std::string name;
  CpuValues base;     ///< what it carries once the boost ends
  CpuValues boosted;  ///< what it was admitted with
  bool operator==(const BoostedContainer&) const = default;
};

/// What the pod annotation records.
struct BoostRecord {
  /// Seconds after the pod is Ready before the boost is taken back (the longest of its
  /// containers' durationSeconds).
  int64_t duration_seconds = 0;
  std::vector<BoostedContainer> containers;

  /// {"durationSeconds":60,"containers":[{"name":"app","base":{"requests":"250m",
  /// "limits":"500m"},"boosted":{"requests":"500m","limits":"1"}}]}
  nlohmann::json to_json() const;
  /// Reads to_json's form; the error names what is wrong.
  static kube::Result<BoostRecord> from_json(const nlohmann::json& value);
  bool operator==(const BoostRecord&) const = default;
};

/// How much the pod's summed CPU may grow for the boost besides what its own pod-level resources
/// allow (those are read from the pod): a ResourceQuota's headroom, a LimitRange's `type: Pod`
/// max; and the most one container may carry (a LimitRange's `type: Container` max, for its
/// request and its limit). nullopt: unbounded.
struct BoostRoom {
  std::optional<kube::Quantity> requests_cpu;
  std::optional<kube::Quantity> limits_cpu;
  std::optional<kube::Quantity> container_max_cpu;
};

/// What apply_startup_boost did.
struct BoostOutcome {
  /// Set when some container was boosted: the annotation to write with the plan.
  std::optional<BoostRecord> record;
  /// Per boostable container not boosted, or boosted less than asked, why ("container app: no
  /// cpu request to boost").
  std::vector<std::string> notes;
};

/// Raises, in `plan` (made by plan_resources for `pod`), the CPU request of every container
/// `scaler` boosts (Scaler::boost_for) from its merged value — its base — and its CPU limit in
/// the same proportion (RequestsOnly: the limit is kept and the request stops at limit - 1m), so
/// the pod's QoS class never changes. The raise is capped so that the containers stay within the
/// pod-level resources, each container within room.container_max_cpu and the pod's sums within
/// `room`; a container without a CPU request, or
/// with no room left, is not boosted. Boosted containers are marked changed in `plan`.
BoostOutcome apply_startup_boost(const Scaler& scaler, const nlohmann::json& pod,
                                 ResourcePlan& plan, const BoostRoom& room = {});

/// True when `pod` carries the annotation at all (readable or not): it was boosted once.
bool has_boost_annotation(const nlohmann::json& pod);

/// The pod's record; nullopt when it has none or it is unreadable.
std::optional<BoostRecord> boost_record_of(const nlohmann::json& pod);

/// A container's CPU request and limit in a `resources` object.
CpuValues cpu_values_of(const nlohmann::json& resources);

/// The pods/resize strategic merge patch that puts each container of `containers` back to its
/// base CPU ({"spec":{"containers":[{"name":..,"resources":{"requests":{"cpu":..},...}}]}}).
nlohmann::json unboost_patch(const std::vector<BoostedContainer>& containers);

}  // namespace vscaler::api
