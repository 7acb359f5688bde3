// Scaler: the parsed, validated form of a VerticalScaler object (scaling.vscaler.dev/v1beta1),
// what the index, the reconciler and the admission handlers work from.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/flat_map.h"
#include "base/result.h"
#include "kube/quantity.h"

namespace vscaler::api {

/// spec.updateMode: who writes the scaler's values (see DESIGN.md "Update modes").
enum class UpdateMode {
  kAuto,
  kReconcile,
  kInitial,
  kOff,
  /// VPA's InPlaceOrRecreate: never a rollout; new pods sized at admission, running pods
  /// resized in place, a pod that cannot be resized evicted.
  kInPlaceOrRecreate,
  /// VPA's InPlace: as kInPlaceOrRecreate, but a pod that cannot be resized is only reported.
  kInPlace,
};

/// True for the modes that size pods rather than templates (InPlaceOrRecreate, InPlace).
constexpr bool in_place(UpdateMode mode) {
  return mode == UpdateMode::kInPlaceOrRecreate || mode == UpdateMode::kInPlace;
}

/// Whether the reconciler of a scaler in `mode` reads a status.recommendation's bounds. In every
/// mode but Off the bounds decide which running pods are resized or replaced; in Off nothing is
/// applied and the reconciler shows the targets only (status.containers), so a move of the bounds
/// alone (a young history's, every pass) is no news to it. The recommender's hint and the
/// manager's check of the informer's update both ask here before they wake the reconciler.
constexpr bool reconciler_reads_bounds(UpdateMode mode) {
  return mode != UpdateMode::kOff;
}

/// The (containerName, target) pairs of a status.recommendation, in order ([] when it has none
/// or is unreadable): all of it the reconciler reads when !reconciler_reads_bounds(mode).
nlohmann::json recommendation_targets(const nlohmann::json& recommendation);

/// The API text of an update mode ("Auto", "Reconcile", "Initial", "Off", "InPlaceOrRecreate",
/// "InPlace").
std::string_view to_string(UpdateMode mode);

/// Resource name (only "cpu" or "memory") -> declared quantity, ordered so output is stable. A
/// sorted vector (base/flat_map.h), not a std::map: one small block per map for the life of each
/// scaler instead of a tree node per entry (issue 17).
using ResourceMap = base::FlatMap<std::string, kube::Quantity, std::less<>>;

/// spec.containers[].controlledValues: what a recommendation changes.
enum class ControlledValues {
  kRequestsAndLimits,  ///< the request, and each limit in proportion (the default)
  kRequestsOnly,       ///< the request only, never above an existing limit
};

/// spec.startupBoost.cpu (or spec.containers[].startupBoost.cpu): VPA's CPU startup boost
/// (AEP-7862). A pod admitted through the pod hook gets its CPU request (and limit, in proportion)
/// raised from its base while it starts; once it is Ready and `duration_seconds` has passed it is
/// resized in place back to the base (DESIGN.md "Startup boost").
struct StartupBoost {
  enum class Type {
    kFactor,    ///< base × factor
    kQuantity,  ///< base + quantity (VPA adds; it does not set)
  };
  Type type = Type::kFactor;
  int64_t factor = 1;       ///< type Factor: an integer >= 1
  kube::Quantity quantity;  ///< type Quantity: more than zero
  /// How long after the pod is Ready the boost lasts; 0: until Ready.
  int64_t duration_seconds = 0;

  /// The boosted CPU request for `base` (before any cap).
  kube::Quantity boosted(const kube::Quantity& base) const;
  /// "factor 2" or "+500m", and the duration: how messages and the annotation name it.
  std::string describe() const;
  bool operator==(const StartupBoost&) const = default;
};

/// One entry of spec.containers: a container name (or "*") and either fixed values
/// (requests/limits, applied as declared) or the policy of its recommendation. The per-entry
/// defaults (both resources controlled, RequestsAndLimits) are vscaler's, not the schema's: a
/// schema default would land in fixed-value entries too and trip the "not both" rule.
struct ContainerResources {
  std::string name;             ///< a container name, or kWildcard
  bool off = false;             ///< mode "Off": vscaler leaves this container alone
  ResourceMap requests;         ///< fixed requests
  ResourceMap limits;           ///< fixed limits
  ResourceMap min_allowed;      ///< the least request a recommendation may set
  ResourceMap max_allowed;      ///< the largest request a recommendation may set
  bool controls_cpu = true;     ///< controlledResources contains cpu
  bool controls_memory = true;  ///< controlledResources contains memory
  ControlledValues controlled_values = ControlledValues::kRequestsAndLimits;
  /// containers[].startupBoost.cpu: this container's boost, in place of spec.startupBoost.
  std::optional<StartupBoost> startup_boost;

  /// True for an entry of fixed values (no recommendation applies to its container).
  bool fixed() const { return !requests.empty() || !limits.empty(); }
  /// True for an entry whose container is scaled from usage (neither fixed nor "Off").
  bool recommended() const { return !off && !fixed(); }
};

/// The container name that matches every container not named in another entry.
inline constexpr std::string_view kWildcard = "*";

/// The workload a scaler targets, in the scaler's namespace: spec.targetRef, or spec.deploymentName
/// as a Deployment. The apiVersion is always apps/v1 (kube::kWorkloadApiVersion).
struct TargetRef {
  std::string kind = "Deployment";  ///< Deployment, StatefulSet or DaemonSet
  std::string name;

  /// "Kind/name", as status.target.ref and the TARGET column show it.
  std::string ref() const { return kind + "/" + name; }
  /// True for a Deployment (which keeps status.deployment and DeploymentFound as before).
  bool is_deployment() const { return kind == "Deployment"; }
  bool operator==(const TargetRef&) const = default;
};

/// A value derived from a scaler's fields, kept beside them by whoever derived it (type-erased:
/// api/ does not know the readers' types). Thread-safe: readers of one shared Scaler may fill it
/// at once, the last one's value stays. A copied Scaler starts without one (the copy may change).
/// std::atomic_load/store on a plain shared_ptr, not std::atomic<std::shared_ptr>: GCC 12's
/// releases its lock bit with a relaxed store, which ThreadSanitizer reports as a race between
/// a load and a later store (net/cert_watcher.h avoids it for the same reason).
class DerivedValue {
 public:
  DerivedValue() = default;
  DerivedValue(const DerivedValue& /*other*/) noexcept {}
  DerivedValue& operator=(const DerivedValue& /*other*/) noexcept {
    set(nullptr);
    return *this;
  }
  /// The value kept, or null.
  std::shared_ptr<const void> get() const {
    return std::atomic_load_explicit(&value_, std::memory_order_acquire);
  }
  /// Keeps `value` in place of what was kept.
  void set(std::shared_ptr<const void> value) const {
    std::atomic_store_explicit(&value_, std::move(value), std::memory_order_release);
  }

 private:
  mutable std::shared_ptr<const void> value_;
};

/// A VerticalScaler as the operator uses it. Status is not parsed: the reconciler rebuilds it.
struct Scaler {
  std::string ns;    ///< metadata.namespace
  std::string name;  ///< metadata.name
  std::string uid;
  std::string resource_version;
  std::string creation_timestamp;  ///< RFC 3339, as stored (compares lexically by time)
  int64_t generation = 0;
  /// Made by vscaler for a namespace that asks for recommendations (api/namespace_scalers.h):
  /// its label and the made name of its own target. A person's scaler of the same workload is
  /// always the active one.
  bool made_for_namespace = false;
  /// The target workload: spec.targetRef, or spec.deploymentName (a Deployment).
  TargetRef target;
  UpdateMode update_mode = UpdateMode::kAuto;
  /// spec.containers; empty (absent) = every container is scaled from its usage.
  std::vector<ContainerResources> containers;
  /// spec.startupBoost.cpu: the boost of every container the scaler matches that has none of its
  /// own.
  std::optional<StartupBoost> startup_boost;
  /// The stored status, without its recommendation, as compact JSON text deflated
  /// (api/packed_text.h; "" when absent): ~110 bytes per scaler, not a DOM of several KB (issue
  /// 17). Read it with status().
  std::string packed_status;
  /// status.recommendation as compact JSON text ("" when absent): what the admission handler
  /// and the manager's update check read, without parsing the rest of the status.
  std::string stored_recommendation;

  /// What a reader derived from stored_recommendation, kept for the next reader of this scaler
  /// (recommender::recommendations_of: the admission hooks derive the same list for every review
  /// of the scaler's workload and of each of its pods). Filled on first use only, so scalers
  /// nothing admits cost 16 bytes (an admitted one the list and a copy of its text, against which
  /// the reader checks that the text there now is the one it derived it from).
  DerivedValue derived_recommendation;

  /// The stored status (null when absent), parsed from the two strings above: the reconciler
  /// and the recommender read it once per reconcile or pass, to write only what changed.
  nlohmann::json status() const;
  /// status.recommendation (null when absent or unreadable).
  nlohmann::json recommendation() const;

  /// "namespace/name": the work queue and index key.
  std::string key() const { return ns + "/" + name; }
  /// The entry for `container`: its own entry, else the "*" entry, else nullptr. With no
  /// spec.containers at all, every container gets a "*" entry of vscaler's defaults (scaled from
  /// usage, both resources, RequestsAndLimits).
  const ContainerResources* entry_for(std::string_view container) const;
  /// The startup boost of `container`: its entry's, else spec.startupBoost; nullptr when it has
  /// none, or its entry is mode "Off" (never boosted), or the scaler does not match it.
  const StartupBoost* boost_for(std::string_view container) const;
  /// True when some boost is configured (spec.startupBoost or an entry's).
  bool boosts() const;
  /// True when the stored status counts pods still boosted (status.startupBoost.boosted > 0):
  /// they are watched until their boost ends, whatever the spec now says. Cheap when there are
  /// none: the status text is searched before it is parsed.
  bool status_counts_boosted_pods() const;
};

/// Parses a VerticalScaler object as returned by the API server. Errors name the field
/// ("spec.containers[1].requests.cpu: invalid quantity ..."). Enforces what the CRD enforces, so
/// that a scaler admitted by an older CRD or a webhook outage is still handled safely.
kube::Result<Scaler> parse_scaler(const nlohmann::json& object);

/// Checks a spec the way the validating webhook must (rules the CRD schema and CEL cannot say, and
/// the same rules again for defence in depth). Returns every problem, each naming its field.
std::vector<std::string> validate_scaler_spec(const nlohmann::json& spec);

/// Of the scalers targeting one workload, the one that is active (one scaler per workload): a
/// person's before one made for its namespace, then the oldest by creationTimestamp, then by
/// name. nullptr for an empty list.
const Scaler* select_active(const std::vector<std::shared_ptr<const Scaler>>& scalers);

}  // namespace vscaler::api
