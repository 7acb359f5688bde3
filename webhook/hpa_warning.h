// The VerticalScaler hook's warning about a HorizontalPodAutoscaler that scales the same target
// on CPU or memory (DESIGN.md "Interoperability": warned, not fought). Both change a workload's
// size from the same usage: the HPA adds pods when utilisation (usage / request) rises, vscaler
// raises the request, and each undoes the other's signal.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace vscaler::webhook {

/// One warning per HorizontalPodAutoscaler in `list` (an autoscaling/v2 list, {"items": [...]})
/// whose scaleTargetRef is apps `kind`/`name` and which scales on a cpu or memory Resource or
/// ContainerResource metric. Malformed items are skipped.
std::vector<std::string> hpa_warnings(const nlohmann::json& list, std::string_view kind,
                                      std::string_view name);

}  // namespace vscaler::webhook
