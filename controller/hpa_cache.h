// HpaCache: which HorizontalPodAutoscalers scale a workload on CPU or memory (DESIGN.md
// "Interoperability": warned, not fought). Both change a workload's size from the same usage: the
// HPA adds pods when utilisation (usage / request) rises, vscaler raises the request, and each
// undoes the other's signal. Filled by a ListPoller (one list every 30 s, "list" only in RBAC);
// the reconciler reads it to set the scaler's HorizontalPodAutoscalerConflict condition and
// Event, which RBAC guards. The VerticalScaler webhook no longer reads HPAs itself: a forged
// review must make vscaler read nothing (DESIGN.md "Who may talk to vscaler").
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace vscaler::controller {

/// The warning for one HorizontalPodAutoscaler object if its scaleTargetRef is apps
/// `kind`/`name` and it scales on a cpu or memory Resource or ContainerResource metric.
std::optional<std::string> hpa_warning(const nlohmann::json& hpa, std::string_view kind,
                                       std::string_view name);

/// One warning per HorizontalPodAutoscaler in `list` (an autoscaling/v2 list, {"items": [...]})
/// whose scaleTargetRef is apps `kind`/`name` and which scales on a cpu or memory Resource or
/// ContainerResource metric. Malformed items are skipped.
std::vector<std::string> hpa_warnings(const nlohmann::json& list, std::string_view kind,
                                      std::string_view name);

/// Namespace -> the HPAs there that scale on cpu or memory. Thread-safe.
class HpaCache {
 public:
  /// The warnings (as hpa_warnings words them) for apps `kind`/`name` in `ns`, from the last
  /// rebuild; empty when none.
  std::vector<std::string> warnings(std::string_view ns, std::string_view kind,
                                    std::string_view name) const;
  /// Replaces the cache with `hpas` (every HPA listed). `changed`, when given, receives the
  /// namespaces whose entries changed. Returns 0 (nothing is left out).
  int rebuild(const std::vector<std::shared_ptr<const nlohmann::json>>& hpas,
              std::vector<std::string>* changed = nullptr);

 private:
  /// What is kept of one HPA that scales on cpu or memory (a few dozen bytes, not the object).
  struct Entry {
    std::string kind;     ///< scaleTargetRef.kind
    std::string name;     ///< scaleTargetRef.name
    std::string warning;  ///< as hpa_warnings words it
    friend bool operator==(const Entry&, const Entry&) = default;
  };
  using Map = std::map<std::string, std::vector<Entry>, std::less<>>;
  mutable std::mutex mutex_;
  Map by_namespace_;
};

}  // namespace vscaler::controller
