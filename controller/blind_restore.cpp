// blind_restore_patch: the scaler's plan against a template of its named containers with no
// resources, so the one computation of api/resources.h says what the patch holds.
#include "controller/blind_restore.h"

#include "api/resources.h"

namespace vscaler::controller {

using nlohmann::json;

std::optional<json> blind_restore_patch(const api::Scaler& scaler) {
  if (scaler.update_mode != api::UpdateMode::kReconcile || scaler.containers.empty()) {
    return std::nullopt;
  }
  json containers = json::array();
  for (const auto& entry : scaler.containers) {
    if (entry.name == api::kWildcard || entry.recommended()) return std::nullopt;
    if (entry.off) continue;
    containers.push_back({{"name", entry.name}});
  }
  if (containers.empty()) return std::nullopt;
  json bare = {{"spec", {{"template", {{"spec", {{"containers", std::move(containers)}}}}}}}};
  api::ResourcePlan plan = api::plan_resources(scaler, bare);
  if (!plan.invalid.empty() || !plan.changed()) return std::nullopt;
  return api::strategic_merge_patch(scaler, plan);
}

bool blind_restore_applies(const Expectation& expected) {
  return expected.min_generation_exclusive > 0 && expected.gone_uid.empty() && !expected.must_exist;
}

bool blind_restore_wrote(int64_t hinted_generation, int64_t answered) {
  return answered > hinted_generation + 1;
}

}  // namespace vscaler::controller
