// The dashboard's model: what one page shows, per namespace and scaler, built by a pure function
// from the scalers' stored status (api::Scaler::status) and the recommendation history the
// dashboard keeps. Both renderings (HTML and JSON) read only this.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "api/resources.h"
#include "api/scaler.h"
#include "dashboard/history.h"
#include "kube/quantity.h"

namespace vscaler::dashboard {

/// A cpu/memory pair of quantities; a missing key is nullopt.
struct Resources {
  std::optional<kube::Quantity> cpu;
  std::optional<kube::Quantity> memory;
  bool empty() const { return !cpu && !memory; }
};

/// One controlled container of a scaler: what its template carries beside the recommendation.
struct ContainerView {
  std::string name;
  /// Where its values come from: "fixed", "recommended" or "off".
  std::string policy;
  /// The template now: status.containers[].requests, but for a scaler in mode "Off" (whose
  /// status shows what would be applied) the template as last listed (OffTemplates); empty
  /// when that is not known.
  Resources requests;
  Resources limits;
  /// False for a scaler in mode "Off" whose template was not listed (yet): its requests and
  /// limits are unknown, and it is left out of the totals.
  bool template_known = true;
  Resources target;  ///< status.recommendation: target, bounds, target before clamping
  Resources lower_bound;
  Resources upper_bound;
  Resources uncapped_target;
  std::vector<HistoryPoint> history;  ///< recommended targets over the last hours, oldest first
};

/// Goldilocks' two suggestions for a container, as the `resources:` YAML a person pastes into
/// the container: Guaranteed QoS (requests = limits = target) and Burstable (requests =
/// lowerBound, limits = upperBound), with the published (rounded) values. Empty strings when
/// the container has no recommendation.
struct CopySuggestions {
  std::string guaranteed;
  std::string burstable;
};
CopySuggestions copy_suggestions(const ContainerView& container);

/// A condition that is not healthy (status not True, a deferral aside).
struct ConditionView {
  std::string type;
  std::string status;
  std::string reason;
  std::string message;
  std::string last_transition_time;
};

/// The last change vscaler made or saw to the template's resources, and what caused it.
struct ChangeView {
  std::string time;   ///< RFC 3339
  std::string cause;  ///< "admission", "bounds", "fixed value" or "patch"
};

/// A change that is due but held back (Scaled=False, reason Deferred).
struct DeferralView {
  std::string message;
  std::string until;  ///< RFC 3339 when the message names a time; "" otherwise
};

/// The scaler's startup boost (status.startupBoost): pods boosted now, boosts ended, and those
/// whose resize back cannot be made now.
struct BoostView {
  std::int64_t boosted = 0;
  std::int64_t ended = 0;
  std::int64_t stuck = 0;
  std::string message;
};

/// Requested (the templates' requests now; a limit without a request counts as the request, as
/// the API server defaults it) beside recommended, summed; savings = requested -
/// recommended, negative for under-provisioned workloads. Per pod (one replica each): vscaler
/// does not read replica counts. Nano-units (cpu: nanocores, memory: nanobytes).
struct Totals {
  kube::Int128 requested_cpu = 0;
  kube::Int128 requested_memory = 0;
  kube::Int128 recommended_cpu = 0;
  kube::Int128 recommended_memory = 0;
  kube::Int128 savings_cpu() const { return requested_cpu - recommended_cpu; }
  kube::Int128 savings_memory() const { return requested_memory - recommended_memory; }
  /// Adds `other`.
  void add(const Totals& other);
};

/// One scaler as the page shows it.
struct ScalerView {
  std::string ns;
  std::string name;
  std::string target;  ///< "Kind/name"
  std::string mode;    ///< spec.updateMode
  std::vector<ContainerView> containers;
  std::optional<ChangeView> last_change;
  std::string last_recommendation_update_time;
  std::optional<DeferralView> deferral;
  /// Set while the scaler has a startup boost configured or boosted pods.
  std::optional<BoostView> boost;
  std::vector<ConditionView> problems;
  Totals totals;
};

/// One namespace: its scalers (by name) and their totals.
struct NamespaceView {
  std::string name;
  std::vector<std::shared_ptr<const ScalerView>> scalers;
  Totals totals;
};

/// The whole page.
struct Model {
  std::string generated_at;               ///< RFC 3339
  std::vector<NamespaceView> namespaces;  ///< by name
  Totals totals;
  std::size_t scaler_count = 0;
};

/// Scaler views kept from one page build to the next: a view is reused while its scaler's
/// resourceVersion and its History::version stay (most scalers do not change between two page
/// views). Not thread-safe: the owner locks.
/// The pod templates of the workloads of scalers in mode "Off", as last listed, and a number that
/// moves whenever they change (so views built from them are rebuilt).
struct OffTemplates {
  api::TemplateResources resources;
  std::uint64_t version = 0;
};

class ViewCache {
 public:
  /// The view of `scaler`, built or reused.
  std::shared_ptr<const ScalerView> get(const api::Scaler& scaler, const History& history,
                                        const OffTemplates* templates = nullptr);
  /// Forgets the views not asked for since the last call (scalers that are gone).
  void sweep();
  std::size_t size() const { return entries_.size(); }

 private:
  struct Entry {
    std::string resource_version;
    std::uint64_t history_version = 0;
    std::uint64_t templates_version = 0;
    std::shared_ptr<const ScalerView> view;
    bool used = false;
  };
  std::unordered_map<std::string, Entry> entries_;
};

/// Builds the page from `scalers` (any order) and `history` (may know scalers that are gone:
/// they are not shown). `now` is RFC 3339. `cache` (optional) reuses unchanged views;
/// `templates` (optional) are the templates scalers in mode "Off" are shown against. No I/O, no
/// clock.
Model build_model(const std::vector<std::shared_ptr<const api::Scaler>>& scalers,
                  const History& history, const std::string& now, ViewCache* cache = nullptr,
                  const OffTemplates* templates = nullptr);

/// The view of one scaler (build_model applies it to each).
ScalerView build_scaler_view(const api::Scaler& scaler, const History& history,
                             const OffTemplates* templates = nullptr);

/// The first RFC 3339 time in `text` ("... at 2026-11-29T18:10:00Z"), "" when none.
std::string find_time(const std::string& text);

}  // namespace vscaler::dashboard
